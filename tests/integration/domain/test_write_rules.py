"""The duplicate and contradiction rules on the in-memory adapter with the real model,
offline and with the fact judge on a real loopback chat-completions server."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from recalld_server.domain.core.model import (
    MemoryType,
    NewMemory,
    Principal,
    Status,
    Tier,
    WriteOutcome,
)
from recalld_server.domain.core.ports import Backends
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.llm.judge import LlmJudge
from recalld_server.llm.openai_compat import ChatClient
from tests.integration.domain.in_memory import in_memory_backends
from tests.services import OpenAICompatibleServer, free_port

PRINCIPAL = Principal("rules-tenant")

SAME = {
    frozenset({"The user's wife is a doctor.", "用户的妻子是医生。"}),
}
CONTRADICTS = {
    ("The user is vegetarian.", "The user loves a rare steak on Friday nights."),
}


def _quoted(text: str, label: str) -> str:
    line = next(x for x in text.splitlines() if x.startswith(label))
    value: str = json.loads(line[len(label) :])
    return value


def _judge_answer(request: dict[str, Any]) -> str:
    """A model that knows the labelled answers; anything else it calls false."""
    prompt = request["messages"][1]["content"]
    if prompt.startswith("Memory A:"):
        pair = frozenset({_quoted(prompt, "Memory A: "), _quoted(prompt, "Memory B: ")})
        return json.dumps({"same_fact": pair in SAME})
    pair_ = (_quoted(prompt, "Core fact: "), _quoted(prompt, "Other memory: "))
    return json.dumps({"contradicts": pair_ in CONTRADICTS})


@dataclasses.dataclass
class World:
    backends: Backends
    memories: UserMemories
    service: MemoryService

    def consolidator(self, judge: LlmJudge | None = None) -> Consolidator:
        return Consolidator(
            self.backends, self.memories, Policy(), judge=judge, judge_policy=JudgePolicy()
        )

    async def write(
        self, user: str, content: str, tier: Tier = Tier.P1
    ) -> tuple[str, WriteOutcome]:
        [result] = await self.service.write(
            PRINCIPAL, user, [NewMemory(content, MemoryType.FACT, tier=tier)]
        )
        return result.memory.id, result.outcome


@pytest.fixture
async def world(embedder: MicroBatchingEmbedder) -> AsyncIterator[World]:
    backends = in_memory_backends(embedder)
    profiles = ProfileService(backends.store, backends.profile_cache, backends.clock)
    memories = UserMemories(backends, profiles.invalidate)
    yield World(backends, memories, MemoryService(backends, profiles, memories))


@pytest.fixture
def llm() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(_judge_answer) as server:
        yield server


def _judge(url: str) -> LlmJudge:
    return LlmJudge(ChatClient(url, "judge-model", timeout_s=5))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The user likes latte.", "The user dislikes latte."),
        ("The user's sister lives in Boston.", "The user's brother lives in Boston."),
        ("The user prefers tea to coffee.", "The user prefers coffee to tea."),
        ("The user drinks coffee.", "The user drinks decaf coffee only."),
        ("Order 44817 was shipped yesterday.", "Order 44871 was shipped yesterday."),
        ("用户打算明年考研。", "用户去年考过研。"),
    ],
)
async def test_a_write_that_changes_one_detail_is_a_new_memory(
    world: World, user_id: str, first: str, second: str
) -> None:
    await world.write(user_id, first)
    _, outcome = await world.write(user_id, second)
    assert outcome is WriteOutcome.CREATED


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The user prefers Americano without sugar.", "The user prefers americano, no sugar."),
        (
            "The user's favourite film is Spirited Away.",
            "Spirited Away is the user's favourite movie.",
        ),
        ("The user is afraid of heights.", "User has a fear of heights."),
    ],
)
async def test_a_reworded_write_is_stored_once(
    world: World, user_id: str, first: str, second: str
) -> None:
    kept, _ = await world.write(user_id, first)
    again, outcome = await world.write(user_id, second)
    assert outcome is WriteOutcome.DUPLICATE and again == kept


async def test_offline_consolidation_keeps_a_cross_lingual_pair_and_reads_a_core_constraint(
    world: World, user_id: str
) -> None:
    await world.write(user_id, "The user's wife is a doctor.")
    _, outcome = await world.write(user_id, "用户的妻子是医生。")
    assert outcome is WriteOutcome.CREATED  # the wording cannot vouch across languages
    core, _ = await world.write(user_id, "The user is vegetarian.", Tier.P0)
    steak, _ = await world.write(user_id, "The user loves a rare steak on Friday nights.")
    await world.write(user_id, "The user likes tofu.")
    report = await world.consolidator().run(PRINCIPAL.tenant_id, user_id)
    assert report.merged == []
    # Far apart in embedding space (0.35), yet the rules know what vegetarian rules out.
    assert [(c, o, why) for c, o, _, why in report.contradictions] == [(core, steak, "meat")]


async def test_the_judge_merges_a_paraphrase_and_reports_a_contradiction(
    world: World, user_id: str, llm: OpenAICompatibleServer
) -> None:
    wife, _ = await world.write(user_id, "The user's wife is a doctor.")
    wife_zh, _ = await world.write(user_id, "用户的妻子是医生。")
    core, _ = await world.write(user_id, "The user is vegetarian.", Tier.P0)
    steak, _ = await world.write(user_id, "The user loves a rare steak on Friday nights.")
    await world.write(user_id, "The user likes tofu.")
    # The rules would report this one ("drives"); the judge reads who drives.
    await world.write(user_id, "The user can't drive.", Tier.P0)
    await world.write(user_id, "The user's partner drives them to the station.")
    consolidator = world.consolidator(_judge(llm.url))

    preview = await consolidator.run(PRINCIPAL.tenant_id, user_id, dry_run=True)
    assert [(kept, gone) for kept, gone, _ in preview.merged] == [(wife, wife_zh)]
    assert [(c, o, why) for c, o, _, why in preview.contradictions] == [(core, steak, "judge")]
    asked = len(llm.requests)
    assert 0 < asked <= JudgePolicy().max_questions

    report = await consolidator.run(PRINCIPAL.tenant_id, user_id)
    assert [(kept, gone) for kept, gone, _ in report.merged] == [(wife, wife_zh)]
    assert [(c, o, why) for c, o, _, why in report.contradictions] == [(core, steak, "judge")]
    merged = await world.service.get(PRINCIPAL, user_id, wife_zh)
    assert merged.status is Status.SUPERSEDED and merged.superseded_by_id == wife
    # Verdicts are remembered by content: the second run asked nothing new.
    assert len(llm.requests) == asked


async def test_without_a_verdict_the_offline_rules_stand(world: World, user_id: str) -> None:
    unreachable = _judge(f"http://127.0.0.1:{free_port()}/v1")
    await world.write(user_id, "The user's wife is a doctor.")
    await world.write(user_id, "用户的妻子是医生。")
    core, _ = await world.write(user_id, "The user is allergic to peanuts", Tier.P0)
    other, _ = await world.write(user_id, "The user snacks on Snickers every afternoon")
    await world.write(user_id, "The user is allergic to shellfish")  # both can be true
    report = await world.consolidator(unreachable).run(PRINCIPAL.tenant_id, user_id)
    assert report.merged == []
    # The offline report still comes through.
    assert [(c, o, why) for c, o, _, why in report.contradictions] == [
        (core, other, "allergy to nut")
    ]


async def test_an_unreadable_answer_is_no_verdict(world: World, user_id: str) -> None:
    with OpenAICompatibleServer(lambda _request: "I think they might be the same?") as llm:
        await world.write(user_id, "The user's wife is a doctor.")
        await world.write(user_id, "用户的妻子是医生。")
        report = await world.consolidator(_judge(llm.url)).run(PRINCIPAL.tenant_id, user_id)
        assert llm.requests and report.merged == []
