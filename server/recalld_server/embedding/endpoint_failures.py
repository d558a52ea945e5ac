"""How an embedding endpoint's answers are told apart, and how long to wait before a retry.

A failed request is one of: worth retrying (`Retryable`: connection errors,
timeouts, 429, 5xx; `Malformed` answers), refused for its texts (`Refused`: 400,
413, 422, which retrying cannot fix but splitting the batch can), fatal (`Fatal`:
401, 403, 404, a redirect: the operator must act), or out of time
(`DeadlinePassed`: the callers stopped waiting, which the circuit does not count
against the endpoint). Retries back off with jitter, never sooner than the
endpoint's `Retry-After`, and stop before a wait would pass the deadline.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Callable

from tenacity import RetryCallState, wait_exponential_jitter
from tenacity.stop import stop_base

MAX_RETRY_AFTER_S = 60.0
"""The longest Retry-After honoured; a longer one is capped (background work)."""

TOO_LONG = re.compile(r"too long|too large|maximum|context length|token|exceed", re.IGNORECASE)


class Retryable(Exception):
    """A failure another try may not have: the connection, a timeout, 429, 5xx."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Malformed(Retryable):
    """An answer that is not the vectors asked for (tried again: often a proxy's hiccup)."""


class Fatal(Exception):
    """Retrying will not help (401, 403, 404, a redirect): the operator must act."""


class DeadlinePassed(Exception):
    """The callers stopped waiting: not the endpoint's failure (the circuit does not count it)."""


class Refused(Exception):
    """The endpoint refused these texts (400, 413, 422): possibly one of them."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {detail}" if detail else ""))
        self.too_long = status == 413 or bool(TOO_LONG.search(detail))


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """A Retry-After header's delay: seconds, or an HTTP date (None: absent or unreadable)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return min(MAX_RETRY_AFTER_S, max(0.0, seconds))


class WaitAtLeastRetryAfter:
    """Backoff with jitter, but never shorter than the endpoint's Retry-After."""

    def __init__(self) -> None:
        self._backoff = wait_exponential_jitter(multiplier=0.1, max=5.0, jitter=0.1)

    def __call__(self, state: RetryCallState) -> float:
        """The seconds to wait before the next try."""
        error = state.outcome.exception() if state.outcome is not None else None
        asked = error.retry_after_s if isinstance(error, Retryable) else None
        return max(asked or 0.0, self._backoff(state))


class StopAtDeadline(stop_base):
    """Stops when the next wait would end past the deadline."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def __call__(self, state: RetryCallState) -> bool:
        """Whether to give up now."""
        if self.deadline is None:
            return False
        return time.monotonic() + (state.upcoming_sleep or 0.0) >= self.deadline


def answer_detail(raw: bytes) -> str:
    """The start of an error answer, on one line (for messages)."""
    text = " ".join(raw[:512].decode("utf-8", "replace").split())[:200]
    return f": {text}" if text else ""
