"""The per-user set with the real keyword analyzer (jieba) and made-up vectors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from recalld_server.domain.core.model import Memory, MemoryFilter, MemoryType, Status, Tier
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.working_set.user_set import UserSet
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer

DIM = 8
NOW = 1_800_000_000_000


@pytest.fixture(scope="module")
def analyzer() -> JiebaAnalyzer:
    made = JiebaAnalyzer()
    made.warm()
    return made


def _vector(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for i in hot:
        v[i] = 1.0
    return v


def _memory(memory_id: str, content: str, **fields: object) -> Memory:
    base = Memory(
        id=memory_id,
        tenant_id="t",
        user_id="u",
        content=content,
        type=MemoryType.FACT,
        content_hash=content_hash(content),
        created_at=NOW - 1000,
        occurred_at=NOW - 1000,
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def _filter(scopes: frozenset[str] | None = None) -> MemoryFilter:
    return MemoryFilter(
        "t", "u", statuses=frozenset({Status.ACTIVE}), scopes=scopes, unexpired_at=NOW
    )


def test_dense_is_cosine_best_first_and_filters(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    s.put(_memory("01", "green"), _vector(0))
    s.put(_memory("02", "blue"), _vector(0, 1))
    s.put(_memory("03", "red", agent_scope="bot"), _vector(0) * 5)  # unnormalised on purpose
    s.put(_memory("04", "draft", status=Status.DRAFT), _vector(0))
    hits = s.dense(_filter(scopes=frozenset({""})), _vector(0), 10)
    assert [m.id for m, _ in hits] == ["01", "02"]
    assert hits[0][1] == pytest.approx(1.0) and hits[1][1] == pytest.approx(2**-0.5)
    everyone = s.dense(_filter(), _vector(0), 10)
    assert [m.id for m, _ in everyone][:2] in (["01", "03"], ["03", "01"])
    assert s.dense(_filter(), _vector(0), 1)[0][1] == pytest.approx(1.0)


def test_dense_finds_matches_beyond_the_first_look(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    for i in range(40):  # the best 40 are in another scope; the match is far down
        s.put(_memory(f"{i:02d}", f"m{i}", agent_scope="other"), _vector(0))
    s.put(_memory("99", "mine"), _vector(1))
    assert [m.id for m, _ in s.dense(_filter(scopes=frozenset({""})), _vector(0), 2)] == ["99"]


def test_keyword_matches_chinese_and_stems(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    s.put(_memory("01", "The user is allergic to peanuts"), _vector(0))
    s.put(_memory("02", "用户住在杭州西湖区"), _vector(1))
    s.put(_memory("03", "Order SO-88231 shipped"), _vector(2))
    assert [m.id for m, _ in s.keyword(_filter(), "peanut allergic", 5)] == ["01"]
    assert [m.id for m, _ in s.keyword(_filter(), "杭州", 5)] == ["02"]
    assert [m.id for m, _ in s.keyword(_filter(), "SO-88231", 5)] == ["03"]
    assert s.keyword(_filter(), "the user", 5) == []  # stop words only


def test_non_live_memories_leave_and_write_rule_lookups(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    holder = _memory("01", "likes green", topic_key="colour")
    s.put(holder, _vector(0))
    assert s.topic_holder("", "colour", NOW) == holder
    assert s.same_content("", content_hash("LIKES   green"), NOW) == holder
    [nearest] = s.nearest("", _vector(0)[None, :], NOW)
    assert nearest is not None and nearest[0] == holder and nearest[1] == pytest.approx(1.0)
    assert s.nearest("bot", _vector(0)[None, :], NOW) == [None]
    expired = dataclasses.replace(holder, expire_at=NOW - 1)
    s.put(expired, None)  # same vector kept
    assert s.topic_holder("", "colour", NOW) is None and len(s) == 1
    s.put(dataclasses.replace(holder, status=Status.SUPERSEDED), None)
    assert len(s) == 0 and s.bytes == 0
    # A live memory without a vector the set never had: the caller must reload.
    assert not s.put(_memory("02", "new"), None)


def test_bytes_follow_content(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    s.put(_memory("01", "short"), _vector(0))
    small = s.bytes
    s.put(_memory("01", "a much longer text about the user's travel plans " * 4), _vector(0))
    assert s.bytes > small > 0
    s.remove("01")
    assert s.bytes == 0


def test_events_since_newest_first(analyzer: JiebaAnalyzer) -> None:
    s = UserSet("t", "u", DIM, analyzer)
    for i, age in enumerate((5, 1, 30)):
        s.put(
            _memory(
                f"0{i}", f"event {i}", type=MemoryType.EVENT, occurred_at=NOW - age, tier=Tier.P2
            ),
            _vector(i),
        )
    assert [m.id for m in s.events_since(_filter(), NOW - 10)] == ["01", "00"]


def test_result_duplicates_by_hash_or_by_vector_with_the_same_numbers(
    analyzer: JiebaAnalyzer,
) -> None:
    from recalld_server.domain.recall.retrieval import VectorDeduper

    s = UserSet("t", "u", DIM, analyzer)
    standup = _memory("01", "Standup at 9:30 every weekday", topic_key="team")
    again = _memory("02", "Standup at 9:30 every weekday!", topic_key="meetings")
    moved = _memory("03", "Standup at 10:30 every weekday")
    other = _memory("04", "The user likes tea")
    for m, v in (
        (standup, _vector(0)),
        (again, _vector(0)),
        (moved, _vector(0)),
        (other, _vector(1)),
    ):
        s.put(m, v)
    deduper = VectorDeduper(s, 0.88)
    assert deduper.twin(standup) is None
    deduper.keep(standup)
    assert deduper.twin(again) == standup  # same vector, same numbers, other topic
    assert deduper.twin(moved) is None  # same vector, another time
    assert deduper.twin(other) is None
    copy = _memory("05", "standup at 9:30   EVERY weekday")
    assert deduper.twin(copy) == standup  # same normalised text, whatever the vector


def test_vector_rows_stay_right_through_puts_and_removes(analyzer: JiebaAnalyzer) -> None:
    import random

    rng = random.Random(7)
    s = UserSet("t", "u", DIM, analyzer)
    expected: dict[str, np.ndarray] = {}
    for step in range(300):
        memory_id = f"{rng.randrange(40):02d}"
        if rng.random() < 0.3:
            s.remove(memory_id)
            expected.pop(memory_id, None)
            continue
        v = np.random.default_rng(step).standard_normal(DIM).astype(np.float32)
        s.put(_memory(memory_id, f"memory {memory_id}"), v)
        expected[memory_id] = v / np.linalg.norm(v)
    assert len(s) == len(expected)
    for memory_id, v in expected.items():
        stored = s.vector(memory_id)
        assert stored is not None and float(np.max(np.abs(stored - v))) < 1e-6
        best, score = s.dense(_filter(), v, 1)[0]
        assert best.id == memory_id and score == pytest.approx(1.0, abs=1e-5)
