"""The two messages of the standard grpc.health.v1 Check, without grpcio-health-checking.

They are built from a descriptor here (the wire format of
grpc/health/v1/health.proto) in a private descriptor pool, so the client needs no
extra dependency and never clashes with the real health_pb2 in the same process.
"""

from __future__ import annotations

import enum
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CHECK_METHOD = "/grpc.health.v1.Health/Check"


class HealthStatus(enum.IntEnum):
    """grpc.health.v1.HealthCheckResponse.ServingStatus."""

    UNKNOWN = 0
    SERVING = 1
    NOT_SERVING = 2
    SERVICE_UNKNOWN = 3


def _message_classes() -> tuple[Any, Any]:
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="grpc/health/v1/health.proto", package="grpc.health.v1", syntax="proto3"
    )
    request = file.message_type.add(name="HealthCheckRequest")
    request.field.add(name="service", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    response = file.message_type.add(name="HealthCheckResponse")
    status = response.enum_type.add(name="ServingStatus")
    for value in HealthStatus:
        status.value.add(name=value.name, number=value.value)
    response.field.add(
        name="status",
        number=1,
        type=field.TYPE_ENUM,
        type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus",
        label=field.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file.SerializeToString())
    request_class, response_class = (
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{name}"))
        for name in ("HealthCheckRequest", "HealthCheckResponse")
    )
    return request_class, response_class


HealthCheckRequest, HealthCheckResponse = _message_classes()


def serialize_request(service: str) -> bytes:
    """A HealthCheckRequest for `service` ("" is the whole server)."""
    return bytes(HealthCheckRequest(service=service).SerializeToString())


def parse_status(data: bytes) -> HealthStatus:
    """The status of a HealthCheckResponse; a value this client does not know is UNKNOWN."""
    value = int(HealthCheckResponse.FromString(data).status)
    try:
        return HealthStatus(value)
    except ValueError:
        return HealthStatus.UNKNOWN
