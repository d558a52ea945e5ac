"""Budget packing: pure rules, with the real token estimator."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from recalld_server.domain.core.model import Memory, MemoryType, Tier
from recalld_server.domain.core.text import token_weight
from recalld_server.domain.ranking.packing import PROFILE_BUDGET_SHARE, pack, render_context

NOW = 1_800_000_000_000


def _memory(n: int, content: str, **fields: object) -> Memory:
    values: dict[str, object] = {"type": MemoryType.FACT, "occurred_at": NOW}
    values.update(fields)
    return Memory(id=f"m{n:04d}", tenant_id="t", user_id="u", content=content, **values)  # type: ignore[arg-type]


PROFILE = [
    _memory(1, "The user's name is Chen Jing", topic_key="profile.name", tier=Tier.P0),
    _memory(2, "The user is vegetarian and allergic to peanuts", tier=Tier.P0),
    _memory(3, "The user prefers concise answers in English", topic_key="style"),
    _memory(4, "用户住在杭州，在一家电商公司做后端开发", topic_key="home"),
]
ITEMS = [
    _memory(10, "Order SO-88231 shipped on Monday", type=MemoryType.EVENT),
    _memory(11, "The user prefers americano without sugar", type=MemoryType.PREFERENCE),
    _memory(12, "The user decided to use TypeScript for project A", type=MemoryType.DECISION),
]


def test_without_a_budget_everything_is_packed_and_rendered() -> None:
    packed = pack(None, PROFILE, ITEMS)
    assert packed.items == frozenset(range(3)) and packed.profile == PROFILE
    context = render_context(packed.profile, ITEMS)
    assert context.startswith("<user_profile>\n") and "<relevant_memories>\n" in context
    assert math.isclose(packed.weight, token_weight(context))


def test_empty_sections_cost_nothing_and_are_not_rendered() -> None:
    assert pack(10, [], []).weight == 0 and render_context([], []) == ""
    only_items = render_context([], ITEMS)
    assert "<user_profile>" not in only_items and "<relevant_memories>" in only_items
    only_profile = render_context(PROFILE, [])
    assert "<relevant_memories>" not in only_profile


def test_a_small_budget_holds_memories_before_the_profile() -> None:
    # The cases: a budget of 60 returned no item (the profile took it all),
    # and 40 returned none (the empty wrapper alone cost 24).
    for budget in (40, 60):
        packed = pack(budget, PROFILE, ITEMS)
        assert packed.items, budget
        assert token_weight(render_context(packed.profile, [ITEMS[i] for i in packed.items])) <= (
            budget
        )


def test_the_profile_takes_at_most_its_share() -> None:
    packed = pack(100, PROFILE, [])
    profile_tokens = math.ceil(token_weight(render_context(packed.profile, [])))
    assert 0 < profile_tokens <= 100 * PROFILE_BUDGET_SHARE
    assert len(packed.profile) < len(PROFILE)
    # In the profile's order (core first); a line too long is skipped for a shorter one.
    assert packed.profile == [m for m in PROFILE if m in packed.profile]


def test_core_then_decisions_and_preferences_win_a_tight_budget() -> None:
    core = _memory(20, "The user is allergic to penicillin", tier=Tier.P0)
    items = [*ITEMS, core]
    cost = math.ceil(token_weight(render_context([], [core])))
    packed = pack(cost, [], items)
    assert packed.items == frozenset({3})


words = st.text(alphabet="abcdefghij 杭州咖啡订单0123456789-", min_size=1, max_size=80)


@settings(max_examples=200, deadline=None)
@given(
    budget=st.integers(min_value=1, max_value=400),
    profile=st.lists(words, max_size=6),
    items=st.lists(
        st.tuples(words, st.sampled_from(list(MemoryType)), st.sampled_from(list(Tier))),
        max_size=10,
    ),
)
def test_packing_never_exceeds_the_budget_nor_drops_a_memory_for_the_profile(
    budget: int, profile: list[str], items: list[tuple[str, MemoryType, Tier]]
) -> None:
    profile_memories = [_memory(i, text, topic_key=f"k{i}") for i, text in enumerate(profile)]
    item_memories = [
        _memory(100 + i, text, type=kind, tier=tier) for i, (text, kind, tier) in enumerate(items)
    ]
    packed = pack(budget, profile_memories, item_memories)
    kept = [m for i, m in enumerate(item_memories) if i in packed.items]
    context = render_context(packed.profile, kept)
    assert token_weight(context) <= budget
    assert (
        math.ceil(token_weight(render_context(packed.profile, [])))
        <= max(0, int(budget * PROFILE_BUDGET_SHARE))
        or not packed.profile
    )
    # The same items fit with no profile at all: none was dropped to make room for it.
    assert pack(budget, [], item_memories).items == packed.items
