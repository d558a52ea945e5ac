"""Extraction and folding rules of sessions, on the in-memory backend with the real model.

The language-model faults are real: the LLM adapters point at a loopback port
nobody listens on, so every call fails the way an unreachable endpoint does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from recalld_server.domain.core.conversation import Role, SessionKey
from recalld_server.domain.core.model import MemoryFilter, Principal, Status, WriteOutcome
from recalld_server.domain.core.ports import Backends, Extractor, Summarizer
from recalld_server.domain.guards.session_rules import NewMessage
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.offline.extractive_summary import ExtractiveSummarizer
from recalld_server.domain.offline.rule_extraction import RuleExtractor
from recalld_server.domain.sessions.service import SessionService
from recalld_server.domain.sessions.session_window import SessionPolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.llm.openai_compat import ChatClient, LlmExtractor, LlmSummarizer
from recalld_server.storage.local import (
    SystemClock,
)
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from tests.integration.domain.in_memory import in_memory_backends
from tests.services import free_port

PRINCIPAL = Principal("extraction-tenant")


@dataclasses.dataclass
class World:
    backends: Backends
    memories: MemoryService
    conversations: InMemoryConversations
    queue: InMemoryExtractionQueue

    def sessions(
        self,
        summarizer: Summarizer | None = None,
        extractor: Extractor | None = None,
        policy: SessionPolicy | None = None,
    ) -> SessionService:
        offline_summarizer, offline_extractor = ExtractiveSummarizer(), RuleExtractor()
        return SessionService(
            self.backends,
            self.memories,
            summarizer or offline_summarizer,
            offline_summarizer,
            extractor or offline_extractor,
            offline_extractor,
            policy,
        )


@pytest.fixture
async def world(embedder: MicroBatchingEmbedder) -> AsyncIterator[World]:
    conversations, queue = InMemoryConversations(), InMemoryExtractionQueue()
    backends = in_memory_backends(embedder, conversations, queue)
    profiles = ProfileService(backends.store, backends.profile_cache, backends.clock)
    memories = UserMemories(backends, profiles.invalidate)
    yield World(backends, MemoryService(backends, profiles, memories), conversations, queue)


def _unreachable() -> ChatClient:
    return ChatClient(f"http://127.0.0.1:{free_port()}/v1", "absent-model", timeout_s=2)


async def test_a_job_run_twice_writes_its_memories_once(world: World, user_id: str) -> None:
    sessions = world.sessions()
    await sessions.append(
        PRINCIPAL,
        user_id,
        "s1",
        [NewMessage(Role.USER, "I live in Lisbon. I prefer decaf coffee.")],
        extract=True,
        extract_async=True,
    )
    [job] = await world.queue.claim(SystemClock().now_ms(), 60_000, 10)
    first = await sessions.extraction.run(job)
    # A replica that crashed after writing but before marking the job done: the job
    # comes back and runs again.
    second = await sessions.extraction.run(dataclasses.replace(job, attempts=2))
    assert first is not None and second is not None
    assert [r.memory.id for r in second] == [r.memory.id for r in first]
    assert {r.outcome for r in first} == {WriteOutcome.CREATED}
    stored = await world.backends.store.find(MemoryFilter(PRINCIPAL.tenant_id, user_id), 100)
    assert len(stored) == len(first) == 2


async def test_an_unreachable_model_leaves_the_job_queued_then_the_rules_take_over(
    world: World, user_id: str
) -> None:
    policy = SessionPolicy(extraction_attempts=2)
    sessions = world.sessions(extractor=LlmExtractor(_unreachable()), policy=policy)
    result = await sessions.append(
        PRINCIPAL,
        user_id,
        "s1",
        [NewMessage(Role.USER, "我对花生过敏")],
        extract=True,
    )
    assert result.extracted is None  # the call itself succeeded; extraction is pending
    session = await world.conversations.get(SessionKey(PRINCIPAL.tenant_id, user_id, "s1"))
    assert session is not None and session.extraction.last_error
    assert session.extraction.extracted_through == 0
    now = SystemClock().now_ms()
    [retry] = await world.queue.claim(now, 0, 10)  # attempt 1 (the inline run was 0)
    assert await sessions.extraction.run(retry) is None
    [last] = await world.queue.claim(now + 1, 60_000, 10)  # attempt 2: the rules run
    written = await sessions.extraction.run(last)
    assert written is not None and "花生" in written[0].memory.content
    assert await world.queue.claim(now + 120_000, 60_000, 10) == []
    session = await world.conversations.get(SessionKey(PRINCIPAL.tenant_id, user_id, "s1"))
    assert session is not None and session.extraction.extracted_through == 1
    assert session.extraction.last_error == ""


async def test_an_unreachable_summarizer_folds_offline_and_says_so(
    world: World, user_id: str
) -> None:
    policy = SessionPolicy(max_window_messages=4)
    sessions = world.sessions(
        summarizer=LlmSummarizer(_unreachable(), ExtractiveSummarizer()), policy=policy
    )
    said = [NewMessage(Role.USER, f"Order SO-{88230 + i} needs a new address") for i in range(6)]
    result = await sessions.append(PRINCIPAL, user_id, "s1", said)
    assert result.session.summarized_through > 0
    assert "SO-88230" in result.session.summary
    assert result.session.window_message_count <= 4


async def test_hedged_and_questions_never_become_active_memories(
    world: World, user_id: str
) -> None:
    sessions = world.sessions()
    result = await sessions.append(
        PRINCIPAL,
        user_id,
        "s1",
        [
            NewMessage(Role.USER, "Maybe I'll move to Berlin next year."),
            NewMessage(Role.USER, "Do I like tea?"),
            NewMessage(Role.ASSISTANT, "You prefer green tea."),
        ],
        extract=True,
    )
    assert result.extracted is not None
    assert all(r.memory.status is Status.DRAFT for r in result.extracted)
    assert all("tea" not in r.memory.content.lower() for r in result.extracted)
