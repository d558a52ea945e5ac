"""Fitting a recall into a token budget, and the prompt block it renders to.

Pure rules: no storage, no model, no clock. The recall pipeline passes the items
it kept (in score order), the profile, and a function weighing a line in tokens.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Callable, Sequence

from recalld_server.domain.core.model import Memory, MemoryType, Tier
from recalld_server.domain.core.text import token_weight

PROFILE_BUDGET_SHARE = 0.4
"""Most of a token budget the profile may take, and only what relevant memories leave."""

_PROFILE_OPEN, _PROFILE_CLOSE = "<user_profile>\n", "</user_profile>\n"
_MEMORIES_OPEN, _MEMORIES_CLOSE = "<relevant_memories>\n", "</relevant_memories>\n"
# Lines are whole words separated by newlines, so a section weighs its frame plus
# its lines, and the sum of rounded-up parts bounds the estimate of the whole.
_PROFILE_FRAME = token_weight(_PROFILE_OPEN + _PROFILE_CLOSE)
_MEMORIES_FRAME = token_weight(_MEMORIES_OPEN + _MEMORIES_CLOSE)


@dataclasses.dataclass(frozen=True, slots=True)
class Packed:
    """What fits: indexes of the admitted items, the profile lines kept, their weight."""

    items: frozenset[int]
    profile: list[Memory]
    weight: float


def pack(
    budget: int | None,
    profile: Sequence[Memory],
    items: Sequence[Memory],
    weigh: Callable[[str], float] = token_weight,
) -> Packed:
    """Fits items, then the profile, into `budget` tokens (None: everything fits).

    Items go first, by priority: core (P0), then decisions and preferences, then
    the rest in the order given (score order). A relevant memory that fits is
    therefore never dropped for the profile. The profile (core first) gets what the
    items leave, up to PROFILE_BUDGET_SHARE of the budget. A section's frame is
    charged only when the section holds a line; empty sections are not rendered.
    """
    used = 0
    weight = 0.0
    priority = sorted(
        range(len(items)),
        key=lambda i: (
            items[i].tier is not Tier.P0,
            items[i].type not in (MemoryType.DECISION, MemoryType.PREFERENCE),
            i,
        ),
    )
    admitted: set[int] = set()
    for i in priority:
        line_weight = weigh(memory_line(items[i])) + (0.0 if admitted else _MEMORIES_FRAME)
        cost = math.ceil(line_weight)
        if budget is None or used + cost <= budget:
            admitted.add(i)
            used += cost
            weight += line_weight
    room = None if budget is None else min(budget - used, int(budget * PROFILE_BUDGET_SHARE))
    kept: list[Memory] = []
    profile_used = 0
    for memory in profile:
        line_weight = weigh(profile_line(memory)) + (0.0 if kept else _PROFILE_FRAME)
        cost = math.ceil(line_weight)
        if room is None or profile_used + cost <= room:
            kept.append(memory)
            profile_used += cost
            weight += line_weight
    return Packed(frozenset(admitted), kept, weight)


def profile_line(memory: Memory) -> str:
    """One profile line: its topic (or "core") and content."""
    key = memory.topic_key or "core"
    return f"- {key}: {memory.content}\n"


def memory_line(memory: Memory) -> str:
    """One memory line: when it happened, its kind and content."""
    kind = memory.type.name.lower()
    return f"- [{_date(memory.occurred_at)}] ({kind}) {memory.content}\n"


def render_context(profile: Sequence[Memory], memories: Sequence[Memory]) -> str:
    """The prompt block: delimited profile and memory sections, each only when not empty."""
    parts = []
    if profile:
        parts.append(_PROFILE_OPEN + "".join(profile_line(m) for m in profile) + _PROFILE_CLOSE)
    if memories:
        parts.append(_MEMORIES_OPEN + "".join(memory_line(m) for m in memories) + _MEMORIES_CLOSE)
    return "".join(parts)


def _date(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d")
