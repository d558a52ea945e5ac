"""Fitting a whole turn's context into one token budget, and the block it renders to.

Pure rules: no storage, no model, no clock. GetContext passes the session's
summary and window, the recalled memories (score order) and the profile.

The budget is shared in this order:

1. the summary, up to `summary_share` of the budget (cut at a line beyond it);
2. long-term memories and the profile, up to `memories_share` (the profile
   within that at most `packing.PROFILE_BUDGET_SHARE`, after the memories);
3. the newest messages that fit what is left, unbroken back from the last one;
4. what the messages leave goes back to memories and the profile.

Every part that holds nothing costs nothing and is not rendered.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from recalld_server.domain.core.conversation import Message
from recalld_server.domain.core.model import Memory
from recalld_server.domain.core.text import token_weight
from recalld_server.domain.ranking import packing
from recalld_server.domain.sessions.session_window import (
    SessionPolicy,
    message_line,
    newest_that_fit,
)

_SUMMARY_OPEN, _SUMMARY_CLOSE = "<conversation_summary>\n", "</conversation_summary>\n"
_MESSAGES_OPEN, _MESSAGES_CLOSE = "<recent_messages>\n", "</recent_messages>\n"
_SUMMARY_FRAME = math.ceil(token_weight(_SUMMARY_OPEN + _SUMMARY_CLOSE))
_MESSAGES_FRAME = math.ceil(token_weight(_MESSAGES_OPEN + _MESSAGES_CLOSE))
_ELLIPSIS = "…"


@dataclasses.dataclass(frozen=True, slots=True)
class Assembly:
    """What fits, the rendered block and the tokens each part takes."""

    messages: list[Message]
    summary: str
    memories: list[int]
    """indexes into the recalled items, in the order given"""
    profile: list[Memory]
    context: str
    message_tokens: int
    summary_tokens: int
    memory_tokens: int
    profile_tokens: int

    @property
    def token_estimate(self) -> int:
        """The whole block's estimate: the parts add up to at least it."""
        return self.message_tokens + self.summary_tokens + self.memory_tokens + self.profile_tokens


def assemble(
    budget: int,
    summary: str,
    window: Sequence[Message],
    profile: Sequence[Memory],
    items: Sequence[Memory],
    policy: SessionPolicy,
) -> Assembly:
    """Fits the parts of a context into `budget` estimated tokens (see the module docstring)."""
    summary_text = _cut_summary(summary, int(budget * policy.summary_share))
    summary_tokens = _summary_cost(summary_text)
    reserve = packing.pack(int(budget * policy.memories_share), profile, items)
    memory_reserve = math.ceil(reserve.weight)
    line_room = budget - summary_tokens - memory_reserve - _MESSAGES_FRAME
    count = newest_that_fit(window, line_room) if line_room > 0 else 0
    kept = list(window[len(window) - count :]) if count else []
    message_tokens = sum(m.token_count for m in kept) + (_MESSAGES_FRAME if kept else 0)
    final = packing.pack(budget - summary_tokens - message_tokens, profile, items)
    chosen = sorted(final.items)
    memories = [items[i] for i in chosen]
    profile_text = packing.render_context(final.profile, [])
    memory_text = packing.render_context([], memories)
    context = profile_text + memory_text + _summary_section(summary_text) + _messages_section(kept)
    return Assembly(
        messages=kept,
        summary=summary_text,
        memories=chosen,
        profile=final.profile,
        context=context,
        message_tokens=message_tokens,
        summary_tokens=summary_tokens,
        memory_tokens=math.ceil(token_weight(memory_text)),
        profile_tokens=math.ceil(token_weight(profile_text)),
    )


def _summary_cost(summary: str) -> int:
    if not summary:
        return 0
    return _SUMMARY_FRAME + math.ceil(token_weight(summary + "\n"))


def _summary_section(summary: str) -> str:
    return f"{_SUMMARY_OPEN}{summary}\n{_SUMMARY_CLOSE}" if summary else ""


def _messages_section(messages: Sequence[Message]) -> str:
    if not messages:
        return ""
    lines = "".join(message_line(m.role, m.content) for m in messages)
    return _MESSAGES_OPEN + lines + _MESSAGES_CLOSE


def _cut_summary(summary: str, room: int) -> str:
    """The summary's first lines that fit `room` tokens with the section frame.

    Whole lines first; a first line longer than the room is cut at a character
    and marked with an ellipsis. Nothing fits: "".
    """
    summary = summary.strip()
    if not summary or _summary_cost(summary) <= room:
        return summary
    kept: list[str] = []
    for line in summary.split("\n"):
        if _summary_cost("\n".join([*kept, line])) > room:
            break
        kept.append(line)
    if kept:
        return "\n".join(kept)
    first = summary.split("\n", 1)[0]
    low, high = 0, len(first)
    while low < high:  # the longest prefix that fits, by bisection
        middle = (low + high + 1) // 2
        if _summary_cost(first[:middle] + _ELLIPSIS) <= room:
            low = middle
        else:
            high = middle - 1
    return first[:low] + _ELLIPSIS if low else ""
