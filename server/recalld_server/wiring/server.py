"""Starts the server: a short sequence of named steps over the wiring's modules.

`models` opens the embedding model and the storage that holds its vectors,
`coordination` the shared state (Redis or in process), `use_cases` the domain's
use cases over them, `transport` the gRPC server and `jobs` the background work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Mapping

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.trace import TracerProvider

from recalld_server.api.admission import Admission, AdmissionLimits
from recalld_server.api.drain_notice import Drain
from recalld_server.api.servicer import MemoryServicer
from recalld_server.api.session_servicer import SessionServicer
from recalld_server.cancellation import cancel_and_wait
from recalld_server.config import ServerConfig
from recalld_server.domain.core.ports import Embedder, VectorStore
from recalld_server.domain.guards.limits import RateLimiter, RateLimits
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.registry import EmbeddingModelSpec
from recalld_server.telemetry.tracing import (
    build_meter_provider,
    build_tracer_provider,
    tracer_and_meter,
)
from recalld_server.wiring.coordination import Coordination, coordination
from recalld_server.wiring.coordination import check_settings as check_coordination_settings
from recalld_server.wiring.jobs import background_jobs
from recalld_server.wiring.models import (
    Storage,
    close_embedder,
    endpoint_embedder,
    model_and_storage,
)
from recalld_server.wiring.session_backends import ClosingConversations, ClosingExtractionQueue
from recalld_server.wiring.transport import (
    SERVICE_NAME,
    SESSION_SERVICE_NAME,
    authenticator,
    grpc_server,
    listen,
    tls_credentials,
)
from recalld_server.wiring.use_cases import backends, use_cases

log = logging.getLogger(__name__)

DRAIN_QUIET_S = 0.3
"""On shutdown, how long no call may have run before the server stops accepting."""


@dataclasses.dataclass(slots=True)
class RunningServer:
    """A started server and the resources to release when it stops."""

    server: grpc.aio.Server
    port: int
    store: VectorStore
    embedder: Embedder
    health: health_aio.HealthServicer
    consolidator: Consolidator
    owns_embedder: bool
    background: list[asyncio.Task[None]]
    tracer_provider: TracerProvider
    meter_provider: SdkMeterProvider
    shared: Coordination
    memories: UserMemories
    admission: Admission
    conversations: ClosingConversations
    extractions: ClosingExtractionQueue
    judge_threads: concurrent.futures.ThreadPoolExecutor | None
    drain: Drain

    async def stop(self, grace_s: float = 5.0) -> None:
        """Drains in-flight calls, writes pending access statistics, closes storage."""
        self.drain.begin()  # routing clients move this replica's users on the next answer
        await self.health.enter_graceful_shutdown()
        deadline = time.monotonic() + grace_s
        # Calls already sent may still wait in the transport, where stopping the server
        # would cancel them: keep accepting until no call has run for a moment.
        # (Polled: quiet is a span of time without an event, not an event.)
        while self.admission.quiet_for() < DRAIN_QUIET_S and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await self.server.stop(max(0.0, deadline - time.monotonic()))
        await asyncio.gather(*(cancel_and_wait(task) for task in self.background))
        try:
            await self.consolidator.flush_access_stats()
        except Exception:
            log.warning("could not flush access statistics at shutdown", exc_info=True)
        await self.store.close()
        await self.shared.close()
        await self.extractions.close()
        await self.conversations.close()
        if self.judge_threads is not None:
            self.judge_threads.shutdown(wait=False, cancel_futures=True)
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        if self.owns_embedder:
            await close_embedder(self.embedder)


async def _model_and_storage(
    config: ServerConfig, embedder: Embedder | None
) -> tuple[EmbeddingModelSpec, Embedder, Storage, bool]:
    """The serving model's spec and embedder, its storage, and whether the server owns it.

    An embedder given by the caller (a test) is the caller's to close; the endpoint's
    or the bundled one is the server's, closed here too if storage cannot open.
    """
    owns_embedder = embedder is None
    if embedder is None:
        embedder = await endpoint_embedder(config)
    try:
        spec, model, storage = await model_and_storage(config, embedder)
    except BaseException:
        if owns_embedder and embedder is not None:
            await close_embedder(embedder)
        raise
    return spec, model, storage, owns_embedder


async def start_server(
    config: ServerConfig,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
) -> RunningServer:
    """Builds everything from config and starts serving. The caller owns `stop()`.

    `environ` supplies the OTEL_* telemetry settings (default: none configured).
    The embedding model is the one the store's vectors are in (`config.embedding_model`
    or an injected `embedder` must agree with it); a fresh store starts with the
    requested model or the default.
    """
    environ = environ or {}
    # Settings that can be refused are checked before anything is opened.
    keys = authenticator(config)
    credentials = tls_credentials(config)
    await check_coordination_settings(config)
    spec, model, storage, owns_embedder = await _model_and_storage(config, embedder)
    shared = await coordination(config)
    ports, conversations, extractions = await backends(config, model, storage, shared)
    tracer_provider = build_tracer_provider(environ)
    meter_provider = build_meter_provider(environ)
    tracer, meter = tracer_and_meter(tracer_provider, meter_provider)
    built = use_cases(config, spec, ports, conversations, extractions, (tracer, meter))
    admission = Admission(
        AdmissionLimits(config.max_in_flight, config.max_queued, config.max_queue_wait_s)
    )
    limiter = RateLimiter(shared.rate_buckets, RateLimits(config.tenant_rate_limit))
    servicers = (
        MemoryServicer(built.service, built.consolidator, keys, limiter),
        SessionServicer(built.sessions, keys, limiter),
    )
    drain = Drain()
    server, health_servicer = grpc_server(config, tracer, admission, keys, servicers, drain)
    port = listen(server, config, credentials)
    await server.start()
    for name in ("", SERVICE_NAME, SESSION_SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    background = background_jobs(config, built.sessions, built.consolidator, shared.leases)
    background.append(asyncio.create_task(admission.watch_loop(), name="admission-loop-lag"))
    log.info(
        "recalld serving on %s:%d (milvus %s, model %s)",
        config.host,
        port,
        config.effective_milvus_uri,
        model.model_id,
    )
    return RunningServer(
        server,
        port,
        storage[0],
        model,
        health_servicer,
        built.consolidator,
        owns_embedder,
        background,
        tracer_provider,
        meter_provider,
        shared,
        built.memories,
        admission,
        built.conversations,
        built.extractions,
        built.judge_threads,
        drain,
    )


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
