"""Selection: which scored candidates a recall returns, and the reason for each other one."""

from __future__ import annotations

import dataclasses

from recalld_server.domain.core.model import DropReason, Memory, MemoryFilter, MemoryType, Status
from recalld_server.domain.core.recall_model import RecallQuery, ScoreBreakdown
from recalld_server.domain.core.text import content_hash, token_weight
from recalld_server.domain.ranking.fusion import FusionPolicy, QueryTerms
from recalld_server.domain.ranking.reranking import Judgement
from recalld_server.domain.recall.filters import RecallFilter
from recalld_server.domain.recall.retrieval import TextDeduper
from recalld_server.domain.recall.scoring import Hit, Scored
from recalld_server.domain.recall.selection import Relevance, fit_budget, select

NOW = 1_800_000_000_000
QUERY = RecallQuery(user_id="u", query="coffee", top_k=2, types=frozenset({MemoryType.PREFERENCE}))
FILTERS = RecallFilter.of("t", QUERY, frozenset({"", "bot", "other"}), NOW)
GATE = Relevance(FusionPolicy(), QueryTerms(("coffee",), ()))


def _memory(n: int, content: str, **fields: object) -> Memory:
    values: dict[str, object] = {
        "type": MemoryType.PREFERENCE,
        "occurred_at": NOW,
        "content_hash": content_hash(content),
    }
    values.update(fields)
    return Memory(id=f"m{n}", tenant_id="t", user_id="u", content=content, **values)  # type: ignore[arg-type]


def _scored(memory: Memory, dense: float) -> Scored:
    return Hit(memory, dense=dense), ScoreBreakdown(dense=dense, fused=dense, unlifted=dense)


def _reasons(scored: list[Scored], relevance: Relevance = GATE) -> dict[str, DropReason | None]:
    candidates, _ = select(scored, FILTERS, relevance, TextDeduper(), QUERY.top_k)
    return {c.memory.id: c.drop_reason for c in candidates}


def test_the_recall_filter_is_built_once_from_the_request() -> None:
    assert FILTERS.request.statuses == {Status.ACTIVE} and FILTERS.request.unexpired_at == NOW
    assert FILTERS.request.types == {MemoryType.PREFERENCE}
    assert FILTERS.request.scopes == frozenset({""})
    assert FILTERS.search is FILTERS.request
    # The profile and recent events: the request's scopes, none of its other filters.
    assert FILTERS.active == dataclasses.replace(FILTERS.request, types=frozenset())
    explained = RecallFilter.of("t", dataclasses.replace(QUERY, explain=True), None, NOW)
    assert explained.search == MemoryFilter("t", "u") and explained.request == FILTERS.request
    assert FILTERS.asks_for(MemoryType.PREFERENCE) and not FILTERS.asks_for(MemoryType.EVENT)


def test_filters_then_gate_then_duplicates_then_top_k() -> None:
    scored = [
        _scored(_memory(1, "The user likes black coffee"), 0.9),
        _scored(_memory(2, "The user likes black coffee"), 0.85),
        _scored(_memory(3, "Old coffee order", status=Status.SUPERSEDED), 0.8),
        _scored(_memory(4, "Coffee at work", agent_scope="other"), 0.8),
        _scored(_memory(5, "Coffee event", type=MemoryType.EVENT), 0.8),
        _scored(_memory(6, "The user drinks coffee at nine"), 0.7),
        _scored(_memory(7, "The user takes coffee with oat milk"), 0.6),
        _scored(_memory(8, "Something else entirely"), 0.2),
    ]
    assert _reasons(scored) == {
        "m1": None,
        "m2": DropReason.DUPLICATE,
        "m3": DropReason.SUPERSEDED,
        "m4": DropReason.OTHER_SCOPE,
        "m5": DropReason.FILTERED,
        "m6": None,
        "m7": DropReason.BEYOND_TOP_K,
        "m8": DropReason.BELOW_THRESHOLD,
    }


def test_a_filter_reason_wins_over_the_callers_floor_and_the_judge() -> None:
    expired = _memory(1, "Coffee", expire_at=NOW)
    low = _memory(2, "Tea")
    unread, dropped, kept = _memory(3, "Latte"), _memory(4, "Mocha"), _memory(5, "Espresso")
    floor = dataclasses.replace(GATE, min_score=0.5)
    assert _reasons([_scored(expired, 0.1), _scored(low, 0.1)], floor) == {
        "m1": DropReason.EXPIRED,
        "m2": DropReason.BELOW_THRESHOLD,
    }
    judged = dataclasses.replace(GATE, judged=Judgement(("m5",), frozenset({"m4", "m5"})))
    scored = [_scored(m, 0.9) for m in (expired, unread, dropped, kept)]
    candidates, kept_items = select(scored, FILTERS, judged, TextDeduper(), QUERY.top_k)
    assert candidates[0].memory.id == "m5"  # the judge's order first
    assert {c.memory.id: c.drop_reason for c in candidates} == {
        "m5": None,
        "m1": DropReason.EXPIRED,
        "m3": DropReason.BELOW_THRESHOLD,
        "m4": DropReason.JUDGED_IRRELEVANT,
    }
    assert [m.id for m, _ in kept_items] == ["m5"]


def test_what_the_budget_leaves_out_is_over_budget() -> None:
    short = _memory(1, "The user likes coffee")
    long = _memory(2, "The user once wrote a long note about coffee " * 20)
    scored = [_scored(short, 0.9), _scored(long, 0.9)]
    candidates, kept = select(scored, FILTERS, GATE, TextDeduper(), QUERY.top_k)
    answer = fit_budget(40, None, kept, candidates, token_weight)
    assert [i.memory.id for i in answer.items] == ["m1"] and 0 < answer.tokens <= 40
    assert [c.drop_reason for c in answer.candidates] == [None, DropReason.OVER_BUDGET]
    assert "likes coffee" in answer.context and "long note" not in answer.context
