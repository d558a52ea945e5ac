"""The session side of the composition root: where conversations live, which models read them.

The summarizer, the extractor, the optional fact judge of consolidation and the
optional relevance judge of recall.

Built once at start-up by the composition root; settings come from the ServerConfig
it is given, never from the environment at import.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sqlite3
from typing import Protocol

from recalld_server.config import ServerConfig
from recalld_server.domain.core.conversation_ports import Conversations, ExtractionQueue
from recalld_server.domain.core.ports import Extractor, FactJudge, RelevanceJudge, Summarizer
from recalld_server.domain.offline.extractive_summary import ExtractiveSummarizer
from recalld_server.domain.offline.rule_extraction import RuleExtractor
from recalld_server.llm.judge import LlmJudge
from recalld_server.llm.openai_compat import ChatClient, LlmExtractor, LlmSummarizer
from recalld_server.llm.relevance import LlmRelevanceJudge
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from recalld_server.storage.redis_conversations import RedisConversations
from recalld_server.storage.redis_extraction_queue import RedisExtractionQueue
from recalld_server.storage.sqlite_conversations import SqliteConversations
from recalld_server.storage.sqlite_extraction_queue import SqliteExtractionQueue
from recalld_server.storage.sqlite_file import SqliteFile

log = logging.getLogger(__name__)


class ClosingConversations(Conversations, Protocol):
    """A Conversations adapter the server closes when it stops."""

    async def close(self) -> None:
        """Releases connections and files."""
        ...


class ClosingExtractionQueue(ExtractionQueue, Protocol):
    """An ExtractionQueue adapter the server closes when it stops."""

    async def close(self) -> None:
        """Releases connections and files."""
        ...


async def conversation_storage(
    config: ServerConfig, circuit: CircuitBreaker
) -> tuple[ClosingConversations, ClosingExtractionQueue]:
    """Where sessions live.

    Redis when configured (shared by replicas, with a TTL); else process memory with
    --storage memory; else a SQLite file in the data directory (durable).
    """
    if config.redis_url:
        ttl_s = round(config.session_ttl_days * 86_400)
        return (
            RedisConversations.from_url(config.redis_url, circuit, ttl_s=ttl_s),
            RedisExtractionQueue.from_url(config.redis_url, circuit),
        )
    if config.storage == "memory":
        return InMemoryConversations(), InMemoryExtractionQueue()
    config.data_dir.mkdir(parents=True, exist_ok=True)
    path = config.data_dir / "sessions.sqlite3"
    try:
        file = await SqliteFile.open(path)
    except (OSError, sqlite3.Error) as error:
        raise SystemExit(f"recalld: cannot open the session store {path}: {error}") from error
    return SqliteConversations(file), SqliteExtractionQueue(file)


def language_models(config: ServerConfig) -> tuple[Summarizer, Summarizer, Extractor, Extractor]:
    """The summarizer and extractor in use, and the offline ones they fall back to."""
    offline_summarizer, offline_extractor = ExtractiveSummarizer(), RuleExtractor()
    if not config.llm_base_url:
        return offline_summarizer, offline_summarizer, offline_extractor, offline_extractor
    client = ChatClient(
        config.llm_base_url, config.llm_model, config.llm_api_key or None, config.llm_timeout_s
    )
    log.info("session summaries and extraction by %s at %s", config.llm_model, config.llm_base_url)
    return (
        LlmSummarizer(client, offline_summarizer),
        offline_summarizer,
        LlmExtractor(client),
        offline_extractor,
    )


def fact_judge(config: ServerConfig) -> FactJudge | None:
    """The consolidation judge, when asked for (--llm-judge); None keeps the rules offline."""
    if not config.llm_judge:
        return None
    client = ChatClient(
        config.llm_base_url, config.llm_model, config.llm_api_key or None, config.llm_timeout_s
    )
    log.info("borderline pairs judged by %s at %s", config.llm_model, config.llm_base_url)
    return LlmJudge(client)


RERANK_THREADS = 32
"""Verdicts in flight at once; a recall beyond them waits, within its rerank timeout."""


def relevance_judge(
    config: ServerConfig,
) -> tuple[RelevanceJudge | None, concurrent.futures.ThreadPoolExecutor | None]:
    """Recall's judge when asked for (--llm-rerank), and the threads its calls block in.

    The caller shuts the threads down. None keeps the offline gate.
    """
    if not config.llm_rerank:
        return None, None
    threads = concurrent.futures.ThreadPoolExecutor(RERANK_THREADS, "recalld-rerank")
    client = ChatClient(
        config.llm_base_url,
        config.llm_model,
        config.llm_api_key or None,
        config.llm_rerank_timeout_s,
        executor=threads,
    )
    log.info("recall candidates judged by %s at %s", config.llm_model, config.llm_base_url)
    return LlmRelevanceJudge(client), threads
