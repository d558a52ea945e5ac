"""The relevance judge's verdict, read defensively: pure rules and the answer parser."""

from __future__ import annotations

import datetime

import pytest

from recalld_server.domain.core.model import Memory, MemoryType
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.ranking.reranking import RerankPolicy, judgement, passage
from recalld_server.llm.relevance import parse_verdict


def _memory(memory_id: str, content: str, day: str = "2026-05-17") -> Memory:
    moment = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC)
    return Memory(
        id=memory_id,
        tenant_id="t",
        user_id="u",
        content=content,
        type=MemoryType.FACT,
        content_hash=content_hash(content),
        occurred_at=int(moment.timestamp() * 1000),
    )


READ = [_memory("01A", "bus"), _memory("01B", "floor"), _memory("01C", "coffee")]


def test_the_verdict_keeps_its_order_and_knows_what_was_read() -> None:
    judged = judgement(READ, [2, 0])
    assert judged.kept == ("01C", "01A")
    assert judged.read == {"01A", "01B", "01C"}
    assert [judged.rank_of(i) for i in ("01C", "01A", "01B", "01Z")] == [0, 1, 2, 2]


def test_indices_out_of_range_count_not_at_all_and_repeats_once() -> None:
    assert judgement(READ, [5, -1, 1, 1, 0]).kept == ("01B", "01A")
    assert judgement(READ, []).kept == ()


def test_the_judge_reads_the_day_and_a_bounded_text() -> None:
    memory = _memory("01A", "x" * 1000, day="2025-05-17")
    seen = passage(memory, RerankPolicy(max_chars=50))
    assert seen == "[2025-05-17] " + "x" * 50


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ('{"relevant": [2, 0]}', [2, 0]),
        ('{"relevant": []}', []),
        ('```json\n{"relevant": [1]}\n```', [1]),
        ('{"relevant": [1, 1, 0]}', [1, 0]),
        ('{"relevant": [3]}', None),  # no memory 3 of 3
        ('{"relevant": [-1]}', None),
        ('{"relevant": [true]}', None),  # a bool is not a memory number
        ('{"relevant": ["1"]}', None),
        ('{"relevant": 1}', None),
        ('{"other": [1]}', None),
        ("[1, 2]", None),
        ("the first one", None),
    ],
)
def test_only_a_list_of_known_memory_numbers_is_a_verdict(
    answer: str, verdict: list[int] | None
) -> None:
    assert parse_verdict(answer, 3) == verdict
