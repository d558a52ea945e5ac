"""Composition root: builds adapters, the domain services and the gRPC server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import logging
import signal
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from pymilvus import MilvusClient, MilvusException
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential_jitter

from recalld.v1 import (
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)
from recalld_server import calibration
from recalld_server.api.admission import Admission, AdmissionInterceptor, AdmissionLimits
from recalld_server.api.auth import Authenticator
from recalld_server.api.decoding import RequestDecodingInterceptor
from recalld_server.api.reflection_guard import ReflectionGuardInterceptor
from recalld_server.api.servicer import MemoryServicer
from recalld_server.api.session_servicer import SessionServicer
from recalld_server.cancellation import cancel_and_wait
from recalld_server.config import ServerConfig
from recalld_server.domain.core.ports import (
    Backends,
    Embedder,
    HistoryStore,
    IdempotencyStore,
    VectorStore,
)
from recalld_server.domain.guards.limits import RateLimiter, RateLimits
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.recall.pipeline import RecallPolicy
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy
from recalld_server.domain.sessions.service import SessionService
from recalld_server.domain.sessions.session_window import SessionPolicy
from recalld_server.domain.working_set.cache import WorkingSetPolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.openai_http import EndpointProbeError, OpenAIEmbedder
from recalld_server.embedding.registry import (
    DEFAULT_MODEL_ID,
    EmbeddingModelSpec,
    UnknownModelError,
    embedding_models,
    is_remote,
    model_spec,
    remote_spec,
)
from recalld_server.storage.active_collection import ActivePointer, resolve_serving_model
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.leases import Leases
from recalld_server.storage.local import (
    SystemClock,
)
from recalld_server.storage.memory_store import (
    InMemoryHistoryStore,
    InMemoryIdempotencyStore,
    InMemoryVectorStore,
)
from recalld_server.storage.milvus_records import (
    MilvusHistoryStore,
    MilvusIdempotencyStore,
    ensure_record_collections,
)
from recalld_server.storage.milvus_store import (
    MilvusConfig,
    MilvusVectorStore,
    StoreModelError,
)
from recalld_server.telemetry.tracing import (
    OtelStages,
    ServerTracingInterceptor,
    build_meter_provider,
    build_tracer_provider,
    tracer_and_meter,
)
from recalld_server.wiring.coordination import Coordination, coordination
from recalld_server.wiring.coordination import check_settings as check_coordination_settings
from recalld_server.wiring.session_backends import (
    ClosingConversations,
    ClosingExtractionQueue,
    conversation_storage,
    fact_judge,
    language_models,
    relevance_judge,
)

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
SESSION_SERVICE_NAME = session_service_pb2.DESCRIPTOR.services_by_name["SessionService"].full_name

DRAIN_QUIET_S = 0.3
"""On shutdown, how long no call may have run before the server stops accepting."""


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

    async def stop(self, grace_s: float = 5.0) -> None:
        """Drains in-flight calls, writes pending access statistics, closes storage."""
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
            await _close_embedder(self.embedder)


async def _every(
    interval_s: float, job: Callable[[], Awaitable[object]], name: str, leases: Leases
) -> None:
    """Runs a job periodically, on one replica at a time; a failure is retried next time."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            async with leases.hold(name) as mine:
                if mine:
                    await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background job %s failed", name)


def _authenticator(config: ServerConfig) -> Authenticator:
    """The keys file's credentials (open access without one); a bad file stops start-up."""
    if config.keys_file is None:
        return Authenticator.open_access()
    try:
        return Authenticator.from_file(config.keys_file)
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise SystemExit(f"recalld: cannot use keys file {config.keys_file}: {error}") from error


def _tls_credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
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


def _connect_milvus(config: ServerConfig, uri: str) -> MilvusClient:
    """A client of the store, retried while a Milvus server is still starting.

    A server started beside recalld (compose, Kubernetes) may refuse connections
    for a while: retry with backoff for up to `startup_timeout_s`, then stop
    with a message rather than a traceback. Milvus Lite is opened once.
    """
    if not config.milvus_uri:
        return MilvusClient(uri=uri, token=config.milvus_token)
    try:
        for attempt in Retrying(
            retry=retry_if_exception_type(MilvusException),
            stop=stop_after_delay(config.startup_timeout_s),
            wait=wait_exponential_jitter(multiplier=0.5, max=5.0),
            before_sleep=lambda state: log.warning(
                "milvus at %s not reachable yet (attempt %d); retrying", uri, state.attempt_number
            ),
            reraise=True,
        ):
            with attempt:
                return MilvusClient(uri=uri, token=config.milvus_token, timeout=10)
    except MilvusException as error:
        raise SystemExit(
            f"recalld: milvus at {uri} unreachable for {config.startup_timeout_s:g} s: "
            f"{error.message}"
        ) from error
    raise AssertionError("unreachable")  # pragma: no cover


@contextlib.contextmanager
def _stop_signals_ignored_by_children(embedded: bool) -> Iterator[None]:
    """Children started meanwhile (Milvus Lite) ignore SIGINT and SIGTERM for good.

    Milvus Lite runs as our child in our process group. Ctrl-C in a terminal, or a
    supervisor that signals the group, would stop it under us, and the graceful
    stop would lose the access statistics it flushes last. Ignored signals stay
    ignored across exec, and recalld stops Lite itself when it closes the store.
    The model's process has a session of its own. Signal dispositions belong to
    the main thread; elsewhere (an embedding application) nothing changes.
    """
    if not embedded or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serving_model(
    config: ServerConfig, requested: str, remote: Embedder | None
) -> tuple[EmbeddingModelSpec, bool]:
    """The model this store is served with (see `resolve_serving_model`).

    With an endpoint (`remote`), the store must serve its model or nothing yet.
    """
    uri = config.effective_milvus_uri
    if not config.milvus_uri:
        config.data_dir.mkdir(parents=True, exist_ok=True)
    client = _connect_milvus(config, uri)
    known = [*embedding_models(), *([remote.model_id] if remote is not None else [])]
    try:
        model_id, claim = resolve_serving_model(client, uri, requested, DEFAULT_MODEL_ID, known)
        return _spec(model_id, remote), claim
    except (StoreModelError, UnknownModelError) as error:
        raise SystemExit(f"recalld: {error}") from error
    finally:
        client.close()


def _spec(model_id: str, embedder: Embedder | None) -> EmbeddingModelSpec:
    """A shipped model's spec, or the spec of the endpoint's model the embedder reaches."""
    if embedder is not None and is_remote(model_id) and model_id == embedder.model_id:
        return remote_spec(model_id, embedder.dimension)
    if is_remote(model_id):
        raise SystemExit(
            f"recalld: the store's memories are embedded with {model_id!r} through an "
            "embedding endpoint: start with --embedding-base-url and --embedding-model "
            "naming it, or move the store with `recalld reembed`"
        )
    return _model(model_id)


async def _endpoint_embedder(config: ServerConfig) -> Embedder | None:
    """The endpoint's embedder, probed once (None: a bundled model serves)."""
    if config.embedding_endpoint is None:
        return None
    # httpx logs every request at INFO: one line per embedding batch drowns the log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        remote = await OpenAIEmbedder.connect(config.embedding_endpoint)
    except EndpointProbeError as error:
        raise SystemExit(f"recalld: {error}") from None
    log.info(
        "embedding with %s at %s (%d dimensions)",
        config.embedding_endpoint.model,
        config.embedding_endpoint.public_url,
        remote.dimension,
    )
    return remote


async def _load(spec: EmbeddingModelSpec, config: ServerConfig) -> Embedder:
    loaded: Embedder = await asyncio.to_thread(
        spec.load, config.embed_batch, config.model_processes
    )
    return loaded


def _model(model_id: str) -> EmbeddingModelSpec:
    try:
        return model_spec(model_id)
    except UnknownModelError as error:
        raise SystemExit(f"recalld: {error}") from error


Storage = tuple[VectorStore, HistoryStore, IdempotencyStore]


async def _model_and_storage(
    config: ServerConfig, embedder: Embedder | None
) -> tuple[EmbeddingModelSpec, Embedder, Storage]:
    """The serving model's spec, its embedder (a bundled one is loaded here) and storage.

    An `embedder` is the endpoint's or one a test injects; the store must agree with
    its model.
    """
    remote = config.embedding_endpoint is not None
    requested = embedder.model_id if embedder is not None else config.embedding_model
    if embedder is not None and not remote and config.embedding_model not in ("", requested):
        raise SystemExit(
            f"recalld: embedder {embedder.model_id!r} given for model {config.embedding_model!r}"
        )
    if config.storage == "memory":
        spec = _spec(requested or DEFAULT_MODEL_ID, embedder)
        model = embedder if embedder is not None else await _load(spec, config)
        return spec, model, _memory_storage(model.dimension)
    embedded = not config.milvus_uri
    with _stop_signals_ignored_by_children(embedded):  # Lite starts here and stays
        spec, claim_pointer = await asyncio.to_thread(_serving_model, config, requested, embedder)
    model = embedder if embedder is not None else await _load(spec, config)
    with _stop_signals_ignored_by_children(embedded):
        storage = await _milvus_storage(config, model, claim_pointer)
    return spec, model, storage


async def _close_embedder(embedder: Embedder) -> None:
    close = getattr(embedder, "close", None)
    if close is not None:
        await close()


def _memory_storage(dimension: int) -> Storage:
    """The in-memory backend: nothing survives the process (tests, trying things out)."""
    log.warning("storage is in memory (--storage memory): nothing survives a restart")
    return (
        InMemoryVectorStore(dimension),
        InMemoryHistoryStore(),
        InMemoryIdempotencyStore(),
    )


async def _milvus_storage(config: ServerConfig, embedder: Embedder, claim_pointer: bool) -> Storage:
    """Memories, history and request records in Milvus (Lite under data_dir, or a server)."""
    milvus_config = MilvusConfig(
        uri=config.effective_milvus_uri,
        token=config.milvus_token,
        dimension=embedder.dimension,
        model_id=embedder.model_id,
    )
    try:
        store = await MilvusVectorStore.open(milvus_config)
    except StoreModelError as error:
        raise SystemExit(f"recalld: {error}") from error
    if claim_pointer:
        await asyncio.to_thread(_point_at, config, store.collection)
    await asyncio.to_thread(ensure_record_collections, milvus_config)
    return store, MilvusHistoryStore(store.client), MilvusIdempotencyStore(store.client)


def _point_at(config: ServerConfig, collection: str) -> None:
    uri = config.effective_milvus_uri
    client = MilvusClient(uri=uri, token=config.milvus_token)
    try:
        ActivePointer(client, uri).set(collection)
    finally:
        client.close()


def model_policy(spec: EmbeddingModelSpec, config: ServerConfig) -> tuple[Policy, JudgePolicy]:
    """The rules, with the thresholds calibrated for the model (docs/calibration.md).

    The data directory's calibration file wins, else the model's shipped one, else
    the scale-free fallback (logged once); a broken file stops start-up.
    """
    try:
        calibrated = calibration.resolve(config.data_dir, spec.model_id)
    except calibration.CalibrationError as error:
        raise SystemExit(f"recalld: {error}") from None
    base = Policy(
        lifecycle=LifecyclePolicy(retention_days=config.retention_days),
        recall=RecallPolicy(sequential=config.recall_sequential, retrieval=config.recall_mode),
        max_memories_per_user=config.max_memories_per_user,
        max_memories_per_tenant=config.max_memories_per_tenant,
        sensitive_data=config.sensitive_data,
    )
    return calibration.model_policy(calibrated, base), calibration.judge_policy(calibrated)


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
    authenticator = _authenticator(config)
    credentials = _tls_credentials(config)
    await check_coordination_settings(config)
    owns_embedder = embedder is None
    if embedder is None:
        embedder = await _endpoint_embedder(config)
    try:
        spec, model, storage = await _model_and_storage(config, embedder)
    except BaseException:
        if owns_embedder and embedder is not None:
            await _close_embedder(embedder)
        raise
    store, history, requests = storage
    shared = await coordination(config)
    clock = SystemClock()
    analyzer = JiebaAnalyzer()
    await asyncio.to_thread(analyzer.warm)
    conversations, extractions = await conversation_storage(config, shared.circuit)
    backends = Backends(
        store=store,
        embedder=model,
        locks=shared.locks,
        clock=clock,
        history=history,
        requests=requests,
        access=shared.access,
        profile_cache=shared.profile_cache,
        generations=shared.generations,
        analyzer=analyzer,
        conversations=conversations,
        extractions=extractions,
    )
    profiles = ProfileService(store, shared.profile_cache, clock)
    memories = UserMemories(
        backends,
        profiles.invalidate,
        WorkingSetPolicy(
            budget_bytes=config.working_set_mb * 1024 * 1024,
            max_user_memories=config.working_set_max_user_memories,
        ),
    )
    tracer_provider = build_tracer_provider(environ)
    meter_provider = build_meter_provider(environ)
    tracer, meter = tracer_and_meter(tracer_provider, meter_provider)
    policy, judge_policy = model_policy(spec, config)
    judge, judge_threads = relevance_judge(config)
    service = MemoryService(
        backends,
        profiles,
        memories,
        OtelStages(tracer, meter),
        policy=policy,
        write_stages=OtelStages(tracer, meter, prefix="write"),
        judge=judge,
    )
    consolidator = Consolidator(
        backends, memories, policy, judge=fact_judge(config), judge_policy=judge_policy
    )
    summarizer, offline_summarizer, extractor, offline_extractor = language_models(config)
    sessions = SessionService(
        backends,
        service,
        summarizer,
        offline_summarizer,
        extractor,
        offline_extractor,
        SessionPolicy(
            max_window_messages=config.session_window_messages,
            max_window_tokens=config.session_window_tokens,
        ),
        OtelStages(tracer, meter, prefix="context"),
    )

    admission = Admission(
        AdmissionLimits(config.max_in_flight, config.max_queued, config.max_queue_wait_s)
    )
    server = grpc.aio.server(
        # Tracing outermost, so refused calls are traced too; undecodable requests are
        # answered before they take a slot.
        interceptors=[
            ServerTracingInterceptor(tracer),
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
    limiter = RateLimiter(shared.rate_buckets, RateLimits(config.tenant_rate_limit))
    memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(
        MemoryServicer(service, consolidator, authenticator, limiter), server
    )
    session_service_pb2_grpc.add_SessionServiceServicer_to_server(
        SessionServicer(sessions, authenticator, limiter), server
    )
    health_servicer = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if config.effective_reflection != "off":
        reflection.enable_server_reflection(
            [SERVICE_NAME, SESSION_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME],
            server,
        )

    port = _listen(server, config, credentials)
    await server.start()
    for name in ("", SERVICE_NAME, SESSION_SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    background = _background_jobs(config, sessions, consolidator, shared.leases)
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
        store,
        model,
        health_servicer,
        consolidator,
        owns_embedder,
        background,
        tracer_provider,
        meter_provider,
        shared,
        memories,
        admission,
        conversations,
        extractions,
        judge_threads,
    )


def _listen(
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


def _background_jobs(
    config: ServerConfig, sessions: SessionService, consolidator: Consolidator, leases: Leases
) -> list[asyncio.Task[None]]:
    """The extraction worker and the periodic jobs (one replica at a time each)."""
    # Every replica works the extraction queue: claims are leased, writes idempotent.
    jobs = [asyncio.create_task(sessions.extraction.work())]
    if config.access_flush_interval_s > 0:
        flush = _every(
            config.access_flush_interval_s,
            consolidator.flush_access_stats,
            "access-flush",
            leases,
        )
        jobs.append(asyncio.create_task(flush))
    if config.consolidate_interval_s > 0:
        consolidate = _every(
            config.consolidate_interval_s,
            # Twice the interval: one missed pass loses no merge.
            functools.partial(
                consolidator.run_all,
                changed_within_ms=int(2 * config.consolidate_interval_s * 1000),
            ),
            "consolidation",
            leases,
        )
        jobs.append(asyncio.create_task(consolidate))
    return jobs


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
