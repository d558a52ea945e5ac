"""Standard services: grpc.health.v1 and server reflection."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from recalld_server.app import RunningServer


async def test_health_reports_serving(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "recalld.v1.MemoryService"):
            response = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_lists_the_memory_service(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        services: set[str] = set()
        async for response in stub.ServerReflectionInfo(iter([request]), timeout=5):
            services.update(s.name for s in response.list_services_response.service)
        assert {"recalld.v1.MemoryService", "grpc.health.v1.Health"} <= services
