"""The deadline of the call being served, for adapters that call out on its behalf.

The gRPC edge records when the caller stops waiting (`context.time_remaining()`);
an adapter that calls another service (the embedding endpoint) reads it so that
no request, and no retry, outlives the call that needs it. A context variable
rather than a parameter: the domain passes calls through ports that know nothing
of deadlines, and asyncio copies the context into every task the call starts.
Outside a call (start-up, background jobs, offline commands) there is none.
"""

from __future__ import annotations

import contextvars
import time

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "recalld_call_deadline", default=None
)


def set_remaining(seconds: float | None) -> None:
    """Records the current call's remaining time (None: no deadline)."""
    _DEADLINE.set(None if seconds is None else time.monotonic() + max(0.0, seconds))


def current() -> float | None:
    """The current call's deadline on the `time.monotonic()` clock, or None."""
    return _DEADLINE.get()
