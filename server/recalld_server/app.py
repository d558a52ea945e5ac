"""Composition root: builds adapters, the domain service and the gRPC server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from recalld.v1 import memory_service_pb2, memory_service_pb2_grpc
from recalld_server.api.auth import Authenticator
from recalld_server.api.servicer import MemoryServicer
from recalld_server.config import ServerConfig
from recalld_server.domain.ports import Embedder
from recalld_server.domain.service import MemoryService
from recalld_server.embedding.usem import load_usem3
from recalld_server.storage.local import LocalLockManager, SystemClock
from recalld_server.storage.milvus_store import MilvusConfig, MilvusVectorStore

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name


@dataclasses.dataclass(slots=True)
class RunningServer:
    """A started server and the resources to release when it stops."""

    server: grpc.aio.Server
    port: int
    store: MilvusVectorStore
    embedder: Embedder
    health: health_aio.HealthServicer
    owns_embedder: bool

    async def stop(self, grace_s: float = 5.0) -> None:
        """Drains in-flight calls, then closes storage."""
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace_s)
        await self.store.close()
        close = getattr(self.embedder, "close", None)
        if self.owns_embedder and close is not None:
            await close()


async def start_server(config: ServerConfig, embedder: Embedder | None = None) -> RunningServer:
    """Builds everything from config and starts serving. The caller owns `stop()`."""
    authenticator = (
        Authenticator.from_file(config.keys_file)
        if config.keys_file
        else Authenticator.open_access()
    )
    owns_embedder = embedder is None
    if embedder is None:
        embedder = await asyncio.to_thread(load_usem3, config.embed_batch)
    if not config.milvus_uri:
        config.data_dir.mkdir(parents=True, exist_ok=True)
    store = await MilvusVectorStore.open(
        MilvusConfig(
            uri=config.effective_milvus_uri,
            token=config.milvus_token,
            dimension=embedder.dimension,
            model_id=embedder.model_id,
        )
    )
    service = MemoryService(store, embedder, LocalLockManager(), SystemClock())

    server = grpc.aio.server(
        maximum_concurrent_rpcs=config.max_concurrent_rpcs,
        options=[
            ("grpc.max_receive_message_length", 16 * 1024 * 1024),
            ("grpc.keepalive_permit_without_calls", 1),
        ],
    )
    memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(
        MemoryServicer(service, authenticator), server
    )
    health_servicer = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        [SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )

    address = f"{config.host}:{config.port}"
    if config.tls_cert_file and config.tls_key_file:
        credentials = grpc.ssl_server_credentials(
            [(config.tls_key_file.read_bytes(), config.tls_cert_file.read_bytes())]
        )
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "recalld serving on %s:%d (milvus %s, model %s)",
        config.host,
        port,
        config.effective_milvus_uri,
        embedder.model_id,
    )
    return RunningServer(server, port, store, embedder, health_servicer, owns_embedder)


@contextlib.asynccontextmanager
async def serving(
    config: ServerConfig, embedder: Embedder | None = None
) -> AsyncIterator[RunningServer]:
    """Starts a server for the duration of an `async with` block."""
    running = await start_server(config, embedder)
    try:
        yield running
    finally:
        await running.stop()
