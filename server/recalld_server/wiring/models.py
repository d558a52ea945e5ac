"""The embedding model a store is served with, and the storage that holds it.

The store decides the model: its vectors are in one model's space, so a fresh
store takes the requested model (or the default) and a used one keeps its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

from pymilvus import MilvusClient, MilvusException
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential_jitter

from recalld_server import calibration
from recalld_server.config import ServerConfig
from recalld_server.domain.core.ports import Embedder, HistoryStore, IdempotencyStore, VectorStore
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy
from recalld_server.embedding.endpoint_settings import EndpointProbeError
from recalld_server.embedding.openai_http import OpenAIEmbedder
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
from recalld_server.storage.memory_store import (
    InMemoryHistoryStore,
    InMemoryIdempotencyStore,
    InMemoryVectorStore,
)
from recalld_server.storage.milvus_collection import MilvusConfig, StoreModelError
from recalld_server.storage.milvus_records import (
    MilvusHistoryStore,
    MilvusIdempotencyStore,
    ensure_record_collections,
)
from recalld_server.storage.milvus_store import MilvusVectorStore

log = logging.getLogger(__name__)


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


async def endpoint_embedder(config: ServerConfig) -> Embedder | None:
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


async def model_and_storage(
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


async def close_embedder(embedder: Embedder) -> None:
    """Stops the model's process or the endpoint's connections (an in-process one has none)."""
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
    lite = store.embedded
    return (
        store,
        MilvusHistoryStore(store.client, newest_row_wins=lite),
        MilvusIdempotencyStore(store.client, newest_row_wins=lite),
    )


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
