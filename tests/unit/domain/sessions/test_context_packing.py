"""The pure rules of a session's window and of a turn's context budget."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from recalld_server.domain.core.conversation import Message, Role
from recalld_server.domain.core.model import Memory, MemoryType, Tier
from recalld_server.domain.core.text import token_weight
from recalld_server.domain.sessions.context_packing import assemble
from recalld_server.domain.sessions.session_window import (
    SessionPolicy,
    fold_point,
    message_tokens,
    newest_that_fit,
)

POLICY = SessionPolicy()


def _window(texts: list[str], first_seq: int = 1) -> list[Message]:
    return [
        Message(
            role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
            content=text,
            created_at=1_700_000_000_000 + i,
            token_count=message_tokens(Role.USER if i % 2 == 0 else Role.ASSISTANT, text),
            seq=first_seq + i,
        )
        for i, text in enumerate(texts)
    ]


def _memory(content: str, tier: Tier = Tier.P1, topic: str = "") -> Memory:
    return Memory(
        id=f"m-{abs(hash(content))}",
        tenant_id="t",
        user_id="u",
        content=content,
        type=MemoryType.FACT,
        tier=tier,
        topic_key=topic,
        occurred_at=1_700_000_000_000,
    )


def test_a_window_within_both_bounds_does_not_fold() -> None:
    window = _window(["hello"] * 10)
    assert fold_point(window, SessionPolicy(max_window_messages=10)) == 0


def test_overflow_folds_the_oldest_down_to_the_share_of_the_bound() -> None:
    window = _window([f"turn {i}" for i in range(21)], first_seq=5)
    policy = SessionPolicy(max_window_messages=20, fold_to_share=0.75)
    through = fold_point(window, policy)
    kept = [m for m in window if m.seq > through]
    assert len(kept) == 15 and kept[-1] is window[-1]
    assert through == window[5].seq


def test_token_overflow_folds_but_always_keeps_the_newest_message() -> None:
    window = _window(["a long message " * 200, "another long one " * 200])
    policy = SessionPolicy(max_window_tokens=100)
    assert fold_point(window, policy) == window[0].seq


def test_newest_that_fit_is_unbroken_from_the_end() -> None:
    window = _window(["short", "x " * 500, "short", "short"])
    budget = sum(m.token_count for m in window[-2:]) + 1
    assert newest_that_fit(window, budget) == 2
    assert newest_that_fit(window, 0) == 0


def test_empty_parts_cost_nothing_and_are_not_rendered() -> None:
    empty = assemble(500, "", [], [], [], POLICY)
    assert empty.context == "" and empty.token_estimate == 0
    only_messages = assemble(500, "", _window(["hi there"]), [], [], POLICY)
    assert "<conversation_summary>" not in only_messages.context
    assert "<user_profile>" not in only_messages.context
    assert only_messages.token_estimate == only_messages.message_tokens


def test_every_part_is_rendered_in_order_when_it_fits() -> None:
    result = assemble(
        2000,
        "user: order SO-88231 arrived damaged",
        _window(["Any news?", "The courier comes at 3 pm."]),
        [_memory("The user is vegetarian", Tier.P0)],
        [_memory("The user prefers window seats")],
        POLICY,
    )
    context = result.context
    order = [
        context.index(tag)
        for tag in (
            "<user_profile>",
            "<relevant_memories>",
            "<conversation_summary>",
            "<recent_messages>",
        )
    ]
    assert order == sorted(order)
    assert "assistant: The courier comes at 3 pm." in context
    assert result.memories == [0] and len(result.profile) == 1


def test_a_summary_beyond_its_share_is_cut_at_a_line() -> None:
    summary = "\n".join(f"user: point {i} about order SO-{i:05d}" for i in range(60))
    result = assemble(400, summary, [], [], [], POLICY)
    assert result.summary and summary.startswith(result.summary)
    assert result.summary_tokens <= 400 * POLICY.summary_share
    assert result.summary.count("\n") < summary.count("\n")


def test_messages_left_over_give_their_room_to_memories() -> None:
    items = [_memory(f"The user likes hiking trail number {i} near the lake") for i in range(30)]
    small = assemble(400, "", _window(["hi"]), [], items, POLICY)
    assert small.memory_tokens > 400 * POLICY.memories_share


texts = st.lists(st.text(min_size=1, max_size=300), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=3000),
    summary=st.text(max_size=2000),
    said=texts,
    profile=st.lists(st.text(min_size=1, max_size=200), max_size=8),
    items=st.lists(st.text(min_size=1, max_size=300), max_size=15),
)
def test_the_context_never_exceeds_its_budget(
    budget: int, summary: str, said: list[str], profile: list[str], items: list[str]
) -> None:
    window = _window(said)
    result = assemble(
        budget,
        summary,
        window,
        [_memory(p, Tier.P0) for p in profile],
        [_memory(i) for i in items],
        POLICY,
    )
    assert result.token_estimate <= budget
    assert math.ceil(token_weight(result.context)) <= result.token_estimate
    # The kept messages are the newest ones, unbroken and in order.
    assert result.messages == window[len(window) - len(result.messages) :]
