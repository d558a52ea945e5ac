"""The rules of a session's window: what stays verbatim, what folds into the summary.

Pure rules: no storage, no model, no clock.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from recalld_server.domain.core.conversation import Message, Role
from recalld_server.domain.core.text import token_weight


@dataclasses.dataclass(frozen=True, slots=True)
class SessionPolicy:
    """Bounds of a session and the defaults of GetContext.

    Attributes:
        max_window_messages: Messages a session holds verbatim at most; more fold
            into the summary (so storage per session is bounded).
        max_window_tokens: Estimated tokens the verbatim window holds at most.
        fold_to_share: A fold brings the window down to this share of both bounds,
            so that folding happens once per many appends, not on every one.
        summary_tokens: Budget of the running summary.
        default_context_budget: GetContext's budget when the request gives none.
        default_memory_top_k: Long-term memories GetContext recalls by default.
        summary_share: Most of a context budget the summary may take.
        memories_share: Most of a context budget long-term memories and the
            profile may take before the messages have had theirs (what the
            messages leave goes to memories too).
        extraction_attempts: Attempts at one extraction job before giving up.
    """

    max_window_messages: int = 200
    max_window_tokens: int = 8000
    fold_to_share: float = 0.75
    summary_tokens: int = 600
    default_context_budget: int = 4000
    default_memory_top_k: int = 5
    summary_share: float = 0.25
    memories_share: float = 0.35
    extraction_attempts: int = 5


def message_line(role: Role, content: str) -> str:
    """How a message reads in a prompt: its speaker, then what was said."""
    return f"{role.name.lower()}: {content}\n"


def message_tokens(role: Role, content: str) -> int:
    """A message's estimated tokens in a prompt (its line, speaker included)."""
    return math.ceil(token_weight(message_line(role, content)))


def fold_point(window: Sequence[Message], policy: SessionPolicy) -> int:
    """The seq through which to fold so that the window fits its bounds (0: it fits).

    Over either bound, the oldest messages fold until the window is back under
    `fold_to_share` of both; the newest message always stays.
    """
    count = len(window)
    tokens = sum(m.token_count for m in window)
    if count <= policy.max_window_messages and tokens <= policy.max_window_tokens:
        return 0
    count_target = max(1, int(policy.max_window_messages * policy.fold_to_share))
    token_target = int(policy.max_window_tokens * policy.fold_to_share)
    through = 0
    for message in window[:-1]:
        if count <= count_target and tokens <= token_target:
            break
        through = message.seq
        count -= 1
        tokens -= message.token_count
    return through


def newest_that_fit(window: Sequence[Message], budget: int) -> int:
    """How many of the newest messages fit `budget` tokens, taken newest first, unbroken."""
    used = 0
    fitted = 0
    for message in reversed(window):
        if used + message.token_count > budget:
            break
        used += message.token_count
        fitted += 1
    return fitted
