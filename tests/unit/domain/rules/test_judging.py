"""Which pairs the optional judge is asked about: pure selection rules."""

from __future__ import annotations

import numpy as np

from recalld_server.domain.core.model import Memory, MemoryType, Tier
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.rules.judging import JudgePolicy, Question, VerdictMemory, questions
from recalld_server.domain.rules.lifecycle import LifecyclePolicy


def _memory(memory_id: str, content: str, tier: Tier = Tier.P1, scope: str = "") -> Memory:
    return Memory(
        id=memory_id,
        tenant_id="t",
        user_id="u",
        content=content,
        type=MemoryType.FACT,
        tier=tier,
        agent_scope=scope,
        content_hash=content_hash(content),
    )


def _vectors(*rows: tuple[float, ...]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float32)


def test_contradictions_newest_first_within_scope_and_above_the_floor() -> None:
    memories = [
        _memory("01A", "The user is vegetarian.", Tier.P0),
        _memory("01B", "The user likes tofu."),
        _memory("01C", "The user loves a rare steak."),
        _memory("01D", "The user loves steak too.", scope="other-bot"),
        _memory("01E", "Unrelated far memory."),
    ]
    vectors = _vectors((1, 0, 0), (0.9, 0.4, 0), (0.4, 0.9, 0), (0.4, 0.9, 0), (0, 0, 1))
    contradictions, _ = questions(memories, vectors, LifecyclePolicy(), JudgePolicy())
    assert [(q.first.id, q.second.id) for q in contradictions] == [("01A", "01C"), ("01A", "01B")]


def test_duplicates_exclude_what_the_rules_decide_and_differing_numbers() -> None:
    memories = [
        _memory("01A", "The user's wife is a doctor."),
        _memory("01B", "用户的妻子是医生。"),
        _memory("01C", "Order 44817 shipped."),
        _memory("01D", "Order 44871 shipped."),
        _memory("01E", "The user's wife is a doctor!"),  # the rules merge it: not asked
    ]
    vectors = _vectors((1, 0), (0.95, 0.31), (0, 1), (0, 1), (1, 0))
    policy = LifecyclePolicy(near_duplicate_similarity=0.88)
    _, duplicates = questions(memories, vectors, policy, JudgePolicy())
    assert [(q.first.id, q.second.id) for q in duplicates] == [("01A", "01B"), ("01B", "01E")]


def test_a_verdict_is_remembered_by_both_contents_and_forgotten_beyond_capacity() -> None:
    remembered = VerdictMemory(capacity=2)
    a, b = _memory("01A", "one"), _memory("01B", "two")
    remembered.put(Question("duplicate", a, b, 0.9), True)
    assert remembered.get(Question("duplicate", b, a, 0.9)) is True  # either order
    assert remembered.get(Question("contradiction", a, b, 0.9)) is None
    edited = _memory("01B", "two, edited")
    assert remembered.get(Question("duplicate", a, edited, 0.9)) is None
    remembered.put(Question("contradiction", a, b, 0.9), False)
    remembered.put(Question("contradiction", b, a, 0.9), True)
    assert remembered.get(Question("duplicate", a, b, 0.9)) is None
