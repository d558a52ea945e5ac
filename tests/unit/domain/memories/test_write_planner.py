"""The write rules, planned in memory: no storage, no model, no clock."""

from __future__ import annotations

import numpy as np

from recalld_server.domain.core.model import (
    Memory,
    MemoryType,
    NewMemory,
    Operation,
    Status,
    Tier,
    WriteOutcome,
)
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.memories.write_planner import StoredFacts, WritePlanner, topics_to_hold
from recalld_server.domain.rules.lifecycle import LifecyclePolicy

NOW = 1_800_000_000_000
DIM = 4


def _v(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _stored(content: str, **fields: object) -> Memory:
    return Memory(
        id=str(fields.pop("id", "01OLD")),
        tenant_id="t",
        user_id="u",
        content=content,
        type=MemoryType.FACT,
        content_hash=content_hash(content),
        **fields,  # type: ignore[arg-type]
    )


def _planner(stored: StoredFacts | None = None) -> WritePlanner:
    return WritePlanner("t", "u", stored or StoredFacts(nearest=[None] * 4), LifecyclePolicy())


def test_new_memory_gets_the_tier_expiry_and_the_model() -> None:
    planner = WritePlanner("t", "u", StoredFacts(nearest=[None]), LifecyclePolicy(), 0.5, "m1")
    result = planner.write(
        0, NewMemory("The user lives in Hangzhou", MemoryType.FACT), _v(1, 0, 0, 0), NOW
    )
    assert result.outcome is WriteOutcome.CREATED
    row = result.memory
    assert row.tier is Tier.P1 and row.expire_at == NOW + 90 * 86_400_000
    assert row.embedding_model == "m1" and row.importance == 0.5 and row.status is Status.ACTIVE
    assert list(planner.batch.new) == [row.id]


def test_exact_duplicate_in_storage_refreshes_it() -> None:
    old = _stored("The user lives in Hangzhou", importance=0.2)
    stored = StoredFacts(by_hash={("", old.content_hash): old}, nearest=[None])
    planner = _planner(stored)
    new = NewMemory("the user  LIVES in hangzhou", MemoryType.FACT, importance=0.9, tags=["home"])
    result = planner.write(0, new, _v(1, 0, 0, 0), NOW)
    assert result.outcome is WriteOutcome.DUPLICATE and result.related_id == old.id
    assert result.memory.importance == 0.9 and result.memory.tags == ["home"]
    assert planner.batch.new == {} and list(planner.batch.changed) == [old.id]
    assert planner.batch.history[0].operation is Operation.REFRESH


def test_near_duplicate_needs_the_same_numbers() -> None:
    old = _stored("Order SO-88231 shipped")
    near = StoredFacts(nearest=[(old, 0.99)])
    same_numbers = _planner(near).write(
        0, NewMemory("Order SO-88231 has shipped", MemoryType.EVENT), _v(1, 0, 0, 0), NOW
    )
    assert same_numbers.outcome is WriteOutcome.DUPLICATE
    other_number = _planner(near).write(
        0, NewMemory("Order SO-88232 shipped", MemoryType.EVENT), _v(1, 0, 0, 0), NOW
    )
    assert other_number.outcome is WriteOutcome.CREATED


def test_a_topic_change_supersedes_and_a_core_holder_parks_a_conflict() -> None:
    holder = _stored("The user likes green", topic_key="colour")
    planner = _planner(StoredFacts(holders={("", "colour"): holder}, nearest=[None]))
    result = planner.write(
        0,
        NewMemory("The user likes blue", MemoryType.PREFERENCE, topic_key="colour"),
        _v(0, 1, 0, 0),
        NOW,
    )
    assert result.outcome is WriteOutcome.SUPERSEDED and result.related_id == holder.id
    old = planner.batch.current(holder)
    assert old.status is Status.SUPERSEDED and old.valid_to == NOW
    assert old.superseded_by_id == result.memory.id
    core = _stored("The user's name is Chen Jing", topic_key="name", tier=Tier.P0)
    parked = _planner(StoredFacts(holders={("", "name"): core}, nearest=[None])).write(
        0,
        NewMemory("The user's name is Li Lei", MemoryType.FACT, topic_key="name"),
        _v(0, 0, 1, 0),
        NOW,
    )
    assert parked.outcome is WriteOutcome.CONFLICT and parked.memory.status is Status.CONFLICT


def test_later_memories_of_a_request_see_the_earlier_ones() -> None:
    planner = _planner()
    first = planner.write(
        0, NewMemory("Standup at 9:30", MemoryType.FACT, topic_key="standup"), _v(1, 0, 0, 0), NOW
    )
    again = planner.write(1, NewMemory("standup at 9:30", MemoryType.FACT), _v(1, 0, 0, 0), NOW)
    moved = planner.write(
        2, NewMemory("Standup at 10:00", MemoryType.FACT, topic_key="standup"), _v(0, 1, 0, 0), NOW
    )
    assert first.outcome is WriteOutcome.CREATED
    assert again.outcome is WriteOutcome.DUPLICATE and again.related_id == first.memory.id
    assert moved.outcome is WriteOutcome.SUPERSEDED and moved.related_id == first.memory.id
    assert planner.batch.current(first.memory).status is Status.SUPERSEDED


def test_low_confidence_waits_as_a_draft_and_a_second_observation_promotes_it() -> None:
    planner = _planner()
    draft = planner.write(
        0,
        NewMemory("The user may move to Berlin", MemoryType.FACT, confidence=0.3),
        _v(1, 0, 0, 0),
        NOW,
    )
    assert draft.outcome is WriteOutcome.DRAFT and draft.memory.status is Status.DRAFT
    stored_draft = draft.memory
    holder = _stored("The user lives in Hangzhou", id="01HOLD", topic_key="city")
    topical = _stored(
        "The user will move to Berlin", id="01DRAFT", status=Status.DRAFT, topic_key="city"
    )
    wanted = topics_to_hold([NewMemory("x", MemoryType.FACT)], [], [(topical, 0.99)])
    assert wanted == {("", "city")}
    planner = _planner(StoredFacts(holders={("", "city"): holder}, nearest=[(topical, 0.99)]))
    promoted = planner.write(
        0, NewMemory("The user will move to Berlin!", MemoryType.FACT), _v(1, 0, 0, 0), NOW
    )
    assert promoted.outcome is WriteOutcome.SUPERSEDED and promoted.related_id == holder.id
    assert promoted.memory.status is Status.ACTIVE
    assert planner.batch.current(holder).status is Status.SUPERSEDED
    assert stored_draft.id != promoted.memory.id
