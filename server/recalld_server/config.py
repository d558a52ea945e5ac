"""Server settings from command-line flags and RECALLD_* environment variables.

Nothing here runs at import time: `load_config(argv, environ)` is called by the
CLI with the process's arguments and environment, and by tests with their own.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path

from recalld_server.domain.sensitive.policy import (
    SensitiveDataPolicy,
    parse_actions,
    policy_from_json,
)
from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.flags import embedding_endpoint, serve_parser


@dataclasses.dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything the composition root needs.

    Attributes:
        host: Address to bind. Anything but loopback requires a keys file unless
            allow_unauthenticated is set.
        port: TCP port; 0 picks a free one.
        data_dir: Where the embedded Milvus Lite file lives.
        milvus_uri: A Milvus server (http://host:19530) instead of the embedded file.
        storage: "milvus" (Lite under data_dir, or the server at milvus_uri) or "memory"
            (the in-memory backend of the storage ports: nothing survives the process;
            for tests and trying things out).
        milvus_token: Credential for a Milvus server.
        keys_file: JSON API keys file (see recalld_server.api.auth).
        allow_unauthenticated: Serve without keys on a non-loopback bind.
        tls_cert_file: PEM certificate chain; with tls_key_file enables TLS.
        tls_key_file: PEM private key.
        allow_plaintext: Serve API keys without TLS on a non-loopback bind (only
            behind a proxy that terminates TLS); refused otherwise.
        reflection: Server reflection: "on", "off" or "authenticated" (a valid API
            key needed); "" picks "on" without a keys file, "authenticated" with one.
        max_concurrent_rpcs: The transport's hard cap on open calls (gRPC rejects
            beyond it without detail); kept well above admission control's limits.
        max_in_flight: MemoryService calls running at once (admission control).
        max_queued: Calls waiting for a running slot; more are shed at once with
            RESOURCE_EXHAUSTED and RetryInfo.
        max_queue_wait_s: Longest wait for a slot before the call is shed.
        tenant_rate_limit: Calls per second each tenant may make, across replicas
            with --redis-url (0: none); per-key limits are in the keys file.
        max_memories_per_user: Live memories one user may hold (0: no quota); a
            Write beyond it is RESOURCE_EXHAUSTED.
        max_memories_per_tenant: Live memories one tenant may hold (0: no quota);
            exact near the limit, within seconds of other replicas' writes elsewhere.
        connection_idle_s: An HTTP/2 connection without calls this long is closed.
        handshake_timeout_s: A connection that has not completed its HTTP/2 (or TLS)
            handshake in this time is closed (silent sockets).
        startup_timeout_s: How long start-up retries a Milvus server that refuses
            connections (one starting beside recalld) before giving up.
        shutdown_grace_s: On SIGTERM, how long in-flight and queued calls get to
            finish after the server stops accepting new ones.
        embed_batch: Most texts one embedding call takes.
        model_processes: Processes the embedding model runs in, each taking its own
            batches (one core each; 1 suits a 2-core machine, where the event loop
            and the store need the other core).
        embedding_endpoint: An OpenAI-compatible embeddings endpoint to embed with
            instead of a bundled model (`--embedding-base-url`; docs/embedding.md);
            `embedding_model` then names the remote model.
        embedding_model: Model for a fresh store; on an existing store it must name the
            model its memories are in (empty: whatever the store uses, else the
            default). Changing models is `recalld reembed`.
        redis_url: Redis shared by replicas (profile cache, generations, locks, leases,
            rate limits): redis://host:port/db, rediss:// for TLS, or
            redis+sentinel://host:port[,host:port...]/service[/db] to follow the
            primary Sentinel names; empty keeps all of it in process.
        recall_sequential: Run recall stages one after another (benchmarks only).
        recall_mode: "hybrid", "dense" or "keyword" retrieval (benchmarks only).
        redis_locks: Take the per-user write locks in Redis. Required when several
            replicas share one Milvus; writes then need Redis (UNAVAILABLE without it,
            safe to retry with a request_id), recalls do not.
        access_flush_interval_s: How often batched recall statistics are written (0: only
            at shutdown and consolidation).
        retention_days: Superseded and archived memories are purged by consolidation
            this long after they last changed, leaving a tombstone in their history
            (0: kept forever).
        sensitive_data: What is masked, refused or kept of each category of sensitive
            data, server-wide and per tenant (docs/security.md).
        consolidate_interval_s: How often every tenant is consolidated (0: never; the
            Consolidate RPC still works).
        working_set_mb: Memory for users' working sets (estimated bytes; least recently
            used users are evicted beyond it; 0 serves every call from storage).
        working_set_max_user_memories: Users with more live memories are served from
            storage rather than held in the working set.
        session_ttl_days: With Redis, a session untouched this long expires (0: never).
            On the embedded store sessions stay until forgotten.
        session_window_messages: Messages a session holds verbatim; older ones fold
            into its summary.
        session_window_tokens: Estimated tokens a session's verbatim window holds.
        llm_base_url: An OpenAI-compatible endpoint (http://host:port/v1) that writes
            session summaries and extracts memories; empty keeps both offline.
        llm_model: The model name sent to that endpoint.
        llm_api_key: Its key, from the environment only (RECALLD_LLM_API_KEY, else
            OPENAI_API_KEY), never a flag: flags show up in process listings.
        llm_timeout_s: Longest wait for one answer of the endpoint.
        llm_judge: Let that endpoint also judge consolidation's borderline pairs
            (paraphrases the offline rules do not merge, contradictions of core
            memories); off by default.
        llm_rerank: Let that endpoint read each text recall's best candidates and keep
            those that answer it, in its order (one chat completion per recall); off
            by default.
        llm_rerank_timeout_s: Longest a recall waits for that verdict before it
            answers with the offline ranking (reported degraded: "rerank").
    """

    host: str = "127.0.0.1"
    port: int = 50051
    data_dir: Path = Path("recalld-data")
    milvus_uri: str = ""
    storage: str = "milvus"
    milvus_token: str = ""
    keys_file: Path | None = None
    allow_unauthenticated: bool = False
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    allow_plaintext: bool = False
    reflection: str = ""
    max_concurrent_rpcs: int = 8192
    max_in_flight: int = 64
    max_queued: int = 512
    max_queue_wait_s: float = 2.0
    shutdown_grace_s: float = 20.0
    startup_timeout_s: float = 120.0
    connection_idle_s: float = 300.0
    handshake_timeout_s: float = 10.0
    tenant_rate_limit: float = 0.0
    max_memories_per_user: int = 100_000
    max_memories_per_tenant: int = 0
    embed_batch: int = 64
    model_processes: int = 1
    embedding_model: str = ""
    embedding_endpoint: EndpointSettings | None = None
    redis_url: str = ""
    redis_locks: bool = False
    recall_sequential: bool = False
    recall_mode: str = "hybrid"
    access_flush_interval_s: float = 300.0
    consolidate_interval_s: float = 3600.0
    retention_days: float = 30.0
    sensitive_data: SensitiveDataPolicy = dataclasses.field(default_factory=SensitiveDataPolicy)
    working_set_mb: int = 1024
    working_set_max_user_memories: int = 10_000
    session_ttl_days: float = 30.0
    session_window_messages: int = 200
    session_window_tokens: int = 8000
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = dataclasses.field(default="", repr=False)
    llm_timeout_s: float = 30.0
    llm_judge: bool = False
    llm_rerank: bool = False
    llm_rerank_timeout_s: float = 3.0

    @property
    def effective_reflection(self) -> str:
        """The reflection mode, with the default resolved."""
        return self.reflection or ("authenticated" if self.keys_file else "on")

    @property
    def effective_milvus_uri(self) -> str:
        """The server URI if given, else the embedded Lite file under data_dir."""
        return self.milvus_uri or str(self.data_dir / "milvus.db")

    def is_loopback(self) -> bool:
        """Whether the bind address is reachable only from this machine."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def load_config(argv: Sequence[str], environ: Mapping[str, str]) -> ServerConfig:
    """Parses flags (which win) over RECALLD_* variables over defaults, then checks them.

    Raises:
        SystemExit: A value is out of range, flags that go together are alone, or the
            server would accept keys in clear text or serve without credentials off
            loopback (the message names the flags).
    """
    args = serve_parser(environ, ServerConfig()).parse_args(list(argv))
    config = _settings(args, environ)
    _check(config)
    return config


def _settings(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerConfig:
    return ServerConfig(
        host=args.host,
        port=int(args.port),
        data_dir=Path(args.data_dir),
        milvus_uri=args.milvus_uri or "",
        milvus_token=args.milvus_token or "",
        storage=str(args.storage),
        redis_url=args.redis_url or "",
        redis_locks=bool(args.redis_locks),
        recall_sequential=bool(args.recall_sequential),
        recall_mode=str(args.recall_mode),
        keys_file=Path(args.keys_file) if args.keys_file else None,
        allow_unauthenticated=bool(args.allow_unauthenticated),
        tls_cert_file=Path(args.tls_cert_file) if args.tls_cert_file else None,
        tls_key_file=Path(args.tls_key_file) if args.tls_key_file else None,
        allow_plaintext=bool(args.allow_plaintext),
        reflection=str(args.reflection or ""),
        max_concurrent_rpcs=int(args.max_concurrent_rpcs),
        max_in_flight=int(args.max_in_flight),
        max_queued=int(args.max_queued),
        max_queue_wait_s=float(args.max_queue_wait),
        shutdown_grace_s=float(args.shutdown_grace),
        startup_timeout_s=float(args.startup_timeout),
        connection_idle_s=float(args.connection_idle),
        handshake_timeout_s=float(args.handshake_timeout),
        tenant_rate_limit=float(args.tenant_rate_limit),
        max_memories_per_user=int(args.max_memories_per_user),
        max_memories_per_tenant=int(args.max_memories_per_tenant),
        embed_batch=int(args.embed_batch),
        model_processes=int(args.model_processes),
        embedding_model=str(args.embedding_model or ""),
        embedding_endpoint=embedding_endpoint(args, environ, float(args.startup_timeout)),
        access_flush_interval_s=float(args.access_flush_interval),
        consolidate_interval_s=float(args.consolidate_interval),
        retention_days=float(args.retention_days),
        sensitive_data=sensitive_data_policy(args.sensitive_data, args.sensitive_data_file),
        working_set_mb=int(args.working_set_mb),
        working_set_max_user_memories=int(args.working_set_max_user_memories),
        session_ttl_days=float(args.session_ttl_days),
        session_window_messages=int(args.session_window_messages),
        session_window_tokens=int(args.session_window_tokens),
        llm_base_url=str(args.llm_base_url or ""),
        llm_model=str(args.llm_model or ""),
        llm_api_key=environ.get("RECALLD_LLM_API_KEY") or environ.get("OPENAI_API_KEY") or "",
        llm_timeout_s=float(args.llm_timeout),
        llm_judge=bool(args.llm_judge),
        llm_rerank=bool(args.llm_rerank),
        llm_rerank_timeout_s=float(args.llm_rerank_timeout),
    )


def _check(config: ServerConfig) -> None:
    if config.llm_judge and not config.llm_base_url:
        raise SystemExit("recalld: --llm-judge needs --llm-base-url and --llm-model")
    if config.llm_rerank and not config.llm_base_url:
        raise SystemExit("recalld: --llm-rerank needs --llm-base-url and --llm-model")
    if config.retention_days < 0:
        raise SystemExit("recalld: --retention-days must be 0 (keep forever) or more")
    if config.llm_base_url and not config.llm_model:
        raise SystemExit("recalld: --llm-base-url needs --llm-model")
    if config.llm_base_url and not config.llm_base_url.startswith(("http://", "https://")):
        raise SystemExit("recalld: --llm-base-url must be an http:// or https:// URL")
    if (
        config.session_ttl_days < 0
        or config.session_window_messages < 2
        or config.session_window_tokens < 64
        or config.llm_timeout_s <= 0
        or config.llm_rerank_timeout_s <= 0
    ):
        raise SystemExit(
            "recalld: --session-ttl-days must be >= 0, --session-window-messages >= 2, "
            "--session-window-tokens >= 64, --llm-timeout > 0, --llm-rerank-timeout > 0"
        )
    if config.working_set_mb < 0 or not 0 < config.working_set_max_user_memories < 16_384:
        raise SystemExit(
            "recalld: --working-set-mb must be >= 0 and "
            "--working-set-max-user-memories between 1 and 16383"
        )
    if (
        min(config.tenant_rate_limit, config.max_memories_per_user, config.max_memories_per_tenant)
        < 0
    ):
        raise SystemExit("recalld: --tenant-rate-limit and --max-memories-per-user must be >= 0")
    if config.max_in_flight < 1 or config.max_queued < 0 or config.max_queue_wait_s <= 0:
        raise SystemExit(
            "recalld: --max-in-flight must be >= 1, --max-queued >= 0, --max-queue-wait > 0"
        )
    if not 1 <= config.model_processes <= 16 or config.embed_batch < 1:
        raise SystemExit("recalld: --model-processes must be 1..16 and --embed-batch >= 1")
    if bool(config.tls_cert_file) != bool(config.tls_key_file):
        raise SystemExit("recalld: --tls-cert-file and --tls-key-file go together")
    if config.reflection not in ("", "on", "off", "authenticated"):
        raise SystemExit("recalld: --reflection must be on, off or authenticated")
    plaintext_keys = config.keys_file is not None and config.tls_cert_file is None
    if plaintext_keys and not config.is_loopback() and not config.allow_plaintext:
        raise SystemExit(
            f"recalld: refusing to accept API keys in clear text on {config.host}; "
            "give --tls-cert-file and --tls-key-file, or --allow-plaintext behind a "
            "proxy that terminates TLS"
        )
    if config.keys_file is None and not config.is_loopback() and not config.allow_unauthenticated:
        raise SystemExit(
            f"recalld: refusing to serve {config.host} without credentials; "
            "give --keys-file, bind 127.0.0.1, or pass --allow-unauthenticated"
        )


def sensitive_data_policy(spec: str, file: Path | str | None) -> SensitiveDataPolicy:
    """The policy of --sensitive-data-file, then --sensitive-data over its defaults."""
    try:
        policy = SensitiveDataPolicy()
        if file:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except OSError as error:
                raise ValueError(f"cannot read {file}: {error.strerror}") from None
            policy = policy_from_json(text)
        if spec:
            actions = {**policy.actions, **parse_actions(spec)}
            policy = dataclasses.replace(policy, actions=actions)
    except ValueError as error:
        raise SystemExit(f"recalld: --sensitive-data: {error}") from None
    return policy
