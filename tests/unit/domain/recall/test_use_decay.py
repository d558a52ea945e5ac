"""Decay by use: the factor recall multiplies a memory's score by."""

from __future__ import annotations

import pytest

from recalld_server.domain.core.model import DAY_MS, Memory, MemoryType, Tier
from recalld_server.domain.recall.scoring import use_decay

NOW = 1_900_000_000_000


def _memory(
    tier: Tier = Tier.P1, created_days_ago: float = 40, read_days_ago: float | None = None
) -> Memory:
    return Memory(
        id="m",
        tenant_id="t",
        user_id="u",
        content="c",
        type=MemoryType.FACT,
        tier=tier,
        created_at=int(NOW - created_days_ago * DAY_MS),
        last_accessed_at=0 if read_days_ago is None else int(NOW - read_days_ago * DAY_MS),
    )


def test_counts_from_the_last_read_or_else_from_creation() -> None:
    assert use_decay(_memory(read_days_ago=3), NOW, 0.5, 0.95) == pytest.approx(0.5 + 0.5 * 0.95**3)
    assert use_decay(_memory(), NOW, 0.5, 0.95) == pytest.approx(0.5 + 0.5 * 0.95**40)


def test_core_memories_and_a_zero_share_never_decay() -> None:
    assert use_decay(_memory(Tier.P0, created_days_ago=900), NOW, 0.5, 0.95) == 1.0
    assert use_decay(_memory(created_days_ago=900), NOW, 0.0, 0.95) == 1.0


def test_between_two_equally_relevant_memories_the_one_in_use_ranks_first() -> None:
    read = use_decay(_memory(read_days_ago=1), NOW, 0.02, 0.95)
    unread = use_decay(_memory(), NOW, 0.02, 0.95)
    assert 1.0 > read > unread >= 0.98
