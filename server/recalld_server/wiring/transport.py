"""The gRPC server's edge: credentials, transport limits, interceptors, services."""

from __future__ import annotations

import logging
import ssl

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.trace import Tracer

from recalld.v1 import (
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)
from recalld_server.api.admission import Admission, AdmissionInterceptor
from recalld_server.api.auth import Authenticator
from recalld_server.api.decoding import RequestDecodingInterceptor
from recalld_server.api.drain_notice import Drain, DrainNoticeInterceptor
from recalld_server.api.reflection_guard import ReflectionGuardInterceptor
from recalld_server.api.servicer import MemoryServicer
from recalld_server.api.session_servicer import SessionServicer
from recalld_server.config import ServerConfig
from recalld_server.telemetry.tracing import ServerTracingInterceptor

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
SESSION_SERVICE_NAME = session_service_pb2.DESCRIPTOR.services_by_name["SessionService"].full_name


def open_call_limit(config: ServerConfig) -> int:
    """The transport's cap on open calls: well above what admission lets run or wait."""
    return max(config.max_concurrent_rpcs, 2 * (config.max_in_flight + config.max_queued))


def transport_options(config: ServerConfig) -> list[tuple[str, int]]:
    """HTTP/2 limits, so idle, silent or hoarding connections cannot pile up.

    A connection may carry as many calls as the server takes at all: a burst on
    one channel then meets admission control (RESOURCE_EXHAUSTED with RetryInfo),
    not a stream refused mid-handshake (at 256 streams a 1,000-call burst on one
    channel lost 640 calls as UNAVAILABLE: the client opens streams before it has
    read the server's limit, and grpc does not retry a refused one).

    A connection that never completes its handshake is closed after
    `handshake_timeout_s`, an idle one after `connection_idle_s`; every connection
    is recycled after 30 minutes (clients reconnect, possibly to another replica)
    with a minute for its calls to finish; a peer that stops answering keepalive
    pings is dropped.
    """
    return [
        ("grpc.max_receive_message_length", 16 * 1024 * 1024),
        ("grpc.max_concurrent_streams", open_call_limit(config)),
        ("grpc.server.max_pending_requests", open_call_limit(config)),
        ("grpc.server.max_pending_requests_hard_limit", 2 * open_call_limit(config)),
        ("grpc.server_handshake_timeout_ms", round(config.handshake_timeout_s * 1000)),
        ("grpc.max_connection_idle_ms", round(config.connection_idle_s * 1000)),
        ("grpc.max_connection_age_ms", 30 * 60_000),
        ("grpc.max_connection_age_grace_ms", 60_000),
        ("grpc.keepalive_time_ms", 2 * 60_000),
        ("grpc.keepalive_timeout_ms", 20_000),
        ("grpc.keepalive_permit_without_calls", 1),
        # A client pinging more often than every 10 s without calls is told to stop.
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.http2.max_ping_strikes", 2),
    ]


def authenticator(config: ServerConfig) -> Authenticator:
    """The keys file's credentials (open access without one); a bad file stops start-up."""
    if config.keys_file is None:
        return Authenticator.open_access()
    try:
        return Authenticator.from_file(config.keys_file)
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise SystemExit(f"recalld: cannot use keys file {config.keys_file}: {error}") from error


def tls_credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    """TLS credentials, checked before use.

    A certificate that does not match its key would otherwise only surface as
    gRPC's "Failed to bind to address".
    """
    if config.tls_cert_file is None or config.tls_key_file is None:
        return None
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            config.tls_cert_file, config.tls_key_file
        )
        chain, key = config.tls_cert_file.read_bytes(), config.tls_key_file.read_bytes()
    except (OSError, ssl.SSLError) as error:
        raise SystemExit(
            f"recalld: cannot use TLS certificate {config.tls_cert_file} with key "
            f"{config.tls_key_file}: {error}"
        ) from error
    return grpc.ssl_server_credentials([(key, chain)])


def listen(
    server: grpc.aio.Server, config: ServerConfig, credentials: grpc.ServerCredentials | None
) -> int:
    """Binds the configured address; the port (the one chosen when 0 was asked)."""
    address = f"{config.host}:{config.port}"
    try:
        if credentials is not None:
            port = server.add_secure_port(address, credentials)
        else:
            port = server.add_insecure_port(address)
    except RuntimeError as error:  # gRPC's "Failed to bind to address"
        raise SystemExit(f"recalld: cannot listen on {address}: {error}") from error
    if config.keys_file and credentials is None and not config.is_loopback():
        log.warning(
            "API keys travel in clear text on %s (--allow-plaintext): "
            "only run this behind a proxy that terminates TLS",
            address,
        )
    return port


def grpc_server(
    config: ServerConfig,
    tracer: Tracer,
    admission: Admission,
    authenticator: Authenticator,
    servicers: tuple[MemoryServicer, SessionServicer],
    drain: Drain,
) -> tuple[grpc.aio.Server, health_aio.HealthServicer]:
    """The gRPC server with its interceptors, services, health and reflection (not bound)."""
    server = grpc.aio.server(
        # Tracing outermost, so refused calls are traced too; undecodable requests are
        # answered before they take a slot.
        interceptors=[
            ServerTracingInterceptor(tracer),
            # Before admission: a refused call's answer tells of the drain as well.
            DrainNoticeInterceptor(drain),
            RequestDecodingInterceptor(),
            AdmissionInterceptor(admission),
            *(
                [ReflectionGuardInterceptor(authenticator)]
                if config.effective_reflection == "authenticated"
                else []
            ),
        ],
        maximum_concurrent_rpcs=open_call_limit(config),
        options=transport_options(config),
    )
    memory_servicer, session_servicer = servicers
    memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(memory_servicer, server)
    session_service_pb2_grpc.add_SessionServiceServicer_to_server(session_servicer, server)
    health_servicer = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if config.effective_reflection != "off":
        reflection.enable_server_reflection(
            [SERVICE_NAME, SESSION_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME],
            server,
        )
    return server, health_servicer
