"""The domain's use cases, built over the adapters the composition root opened."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses

from opentelemetry.metrics import Meter
from opentelemetry.trace import Tracer

from recalld_server.config import ServerConfig
from recalld_server.domain.core.ports import Backends, Embedder
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.sessions.service import SessionService
from recalld_server.domain.sessions.session_window import SessionPolicy
from recalld_server.domain.working_set.cache import WorkingSetPolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.registry import EmbeddingModelSpec
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.local import SystemClock
from recalld_server.telemetry.tracing import OtelStages
from recalld_server.telemetry.working_set_metrics import observe_working_set
from recalld_server.wiring.coordination import Coordination
from recalld_server.wiring.models import Storage, model_policy
from recalld_server.wiring.session_backends import (
    ClosingConversations,
    ClosingExtractionQueue,
    conversation_storage,
    fact_judge,
    language_models,
    relevance_judge,
)


@dataclasses.dataclass(slots=True)
class UseCases:
    """What the servicers call, and what the server releases when it stops."""

    memories: UserMemories
    service: MemoryService
    consolidator: Consolidator
    sessions: SessionService
    conversations: ClosingConversations
    extractions: ClosingExtractionQueue
    judge_threads: concurrent.futures.ThreadPoolExecutor | None


async def backends(
    config: ServerConfig, model: Embedder, storage: Storage, shared: Coordination
) -> tuple[Backends, ClosingConversations, ClosingExtractionQueue]:
    """The ports every use case is given: storage, the model, shared state, sessions.

    The session stores come back on their own too: the server closes them.
    """
    store, history, requests = storage
    analyzer = JiebaAnalyzer()
    await asyncio.to_thread(analyzer.warm)
    conversations, extractions = await conversation_storage(config, shared.circuit)
    ports = Backends(
        store=store,
        embedder=model,
        locks=shared.locks,
        clock=SystemClock(),
        history=history,
        requests=requests,
        access=shared.access,
        profile_cache=shared.profile_cache,
        generations=shared.generations,
        analyzer=analyzer,
        conversations=conversations,
        extractions=extractions,
    )
    return ports, conversations, extractions


def use_cases(
    config: ServerConfig,
    spec: EmbeddingModelSpec,
    ports: Backends,
    conversations: ClosingConversations,
    extractions: ClosingExtractionQueue,
    telemetry: tuple[Tracer, Meter],
) -> UseCases:
    """Memories, consolidation and sessions, with the rules calibrated for the model."""
    tracer, meter = telemetry
    profiles = ProfileService(ports.store, ports.profile_cache, ports.clock)
    memories = UserMemories(
        ports,
        profiles.invalidate,
        WorkingSetPolicy(
            budget_bytes=config.working_set_mb * 1024 * 1024,
            max_user_memories=config.working_set_max_user_memories,
        ),
    )
    observe_working_set(meter, memories.working_set)
    policy, judge_policy = model_policy(spec, config)
    judge, judge_threads = relevance_judge(config)
    service = MemoryService(
        ports,
        profiles,
        memories,
        OtelStages(tracer, meter),
        policy=policy,
        write_stages=OtelStages(tracer, meter, prefix="write"),
        judge=judge,
    )
    consolidator = Consolidator(
        ports, memories, policy, judge=fact_judge(config), judge_policy=judge_policy
    )
    summarizer, offline_summarizer, extractor, offline_extractor = language_models(config)
    sessions = SessionService(
        ports,
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
    return UseCases(
        memories, service, consolidator, sessions, conversations, extractions, judge_threads
    )
