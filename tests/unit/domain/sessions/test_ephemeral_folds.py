"""GetContext's per-answer folds: extended turn by turn, redone when the session changed."""

from __future__ import annotations

from collections.abc import Sequence

from recalld_server.domain.core.conversation import Message, Role, Session, SessionKey
from recalld_server.domain.offline.extractive_summary import ExtractiveSummarizer
from recalld_server.domain.sessions.context_assembly import EphemeralFolds
from recalld_server.domain.sessions.session_window import message_tokens

KEY = SessionKey("t", "u", "s")


class CountingSummarizer:
    """The real offline summarizer, counting the messages it is asked to fold."""

    name = "counting"

    def __init__(self) -> None:
        self.folded: list[int] = []
        self._real = ExtractiveSummarizer()

    async def fold(self, summary: str, messages: Sequence[Message], budget_tokens: int) -> str:
        self.folded.append(len(messages))
        return await self._real.fold(summary, messages, budget_tokens)


def _messages(count: int) -> list[Message]:
    out = []
    for seq in range(1, count + 1):
        text = f"Order SO-{88000 + seq} needs a pickup before Friday"
        out.append(Message(Role.USER, text, 0, message_tokens(Role.USER, text), seq))
    return out


async def test_each_turn_folds_only_what_newly_fell_out() -> None:
    summarizer = CountingSummarizer()
    folds = EphemeralFolds(summarizer, 600)
    session = Session(KEY, "", 0, 0, message_count=40)
    window = _messages(40)
    first = await folds.summary(session, window[:30])
    again = await folds.summary(session, window[:30])
    later = await folds.summary(session, window[:32])
    assert summarizer.folded == [30, 2]
    assert again == first and "SO-88001" in first and later


async def test_a_changed_session_or_a_bigger_budget_folds_afresh() -> None:
    summarizer = CountingSummarizer()
    folds = EphemeralFolds(summarizer, 600)
    session = Session(KEY, "", 0, 0, message_count=40)
    window = _messages(40)
    await folds.summary(session, window[:30])
    await folds.summary(session, window[:20])  # a bigger budget: fewer omitted
    stored = Session(KEY, "", 0, 0, message_count=40, summary="user: earlier", summarized_through=5)
    await folds.summary(stored, window[5:25])  # the stored summary moved on
    assert summarizer.folded == [30, 20, 20]
    other = Session(SessionKey("t", "u", "other"), "", 0, 0)
    await folds.summary(other, window[:3])
    assert summarizer.folded[-1] == 3  # never another session's fold
