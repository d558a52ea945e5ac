"""How long calls waited before the server saw them, read from their deadlines.

gRPC starts a call's deadline when the transport receives it, but the Python
server takes calls from the transport one per event-loop turn. In a burst the
calls therefore wait where no queue of ours counts them, and the loop itself is
not late: in a 5,000-call burst on two cores calls reached admission at about
450 a second, with free slots and no loop lag, and half of them expired unseen.

A client sets one deadline for the calls of one method, so per connection and
method the largest time left seen lately is that deadline, and a new call's
shortfall from it is how long it waited unseen. When every call of the last
interval waited, the server is behind its transport; a call that has waited a
large share of its deadline is then refused at once. A refusal costs a fraction
of a served call, so the backlog drains before the deadlines behind it pass.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import time
from collections.abc import Callable

CallKey = tuple[str, str]
"""(peer, method): the calls that share one deadline."""


@dataclasses.dataclass(frozen=True, slots=True)
class UnseenWaitLimits:
    """When calls count as having waited, and for how long a deadline is remembered."""

    min_wait_s: float = 0.25
    """No call is refused for a shorter wait."""
    deadline_share: float = 0.4
    """Nor for a wait below this share of its deadline, when the loop has a core to itself
    (while it gets only a part of the time it wants, everything takes longer and the
    share shrinks in proportion: `run_share`). A server cannot tell a burst it
    could serve from one it cannot until the burst ends, so the share trades the two:
    on two cores (a served recall ~1.6 ms of the loop, a refusal ~0.6 ms) at 0.4 a 1k
    burst with 5 s deadlines is (nearly) all served and a 5k burst ends 0.6 s early;
    at 0.1 a 1k burst lost 79% of its calls to refusals; by the same rates, at 0.5 the
    end of a 5k burst would expire."""
    interval_s: float = 0.1
    """The server is behind when every call of one such interval waited."""
    min_calls: int = 8
    """Fewer calls in an interval say nothing (a quiet client with mixed deadlines); once
    behind, any call that waited keeps the server behind."""
    min_busy_share: float = 0.5
    """Nor while the event loop's thread was busy (running, or ready and waiting for a
    core) for less than this share of the interval: short deadlines from a client that
    passes on what is left of its own (a gateway) also look like waits, but only a real
    backlog keeps the loop busy. In a 5k burst the share stayed at 0.7 to 0.9. With
    another process taking a core the thread ran for only 0.4 of the time and waited
    for a core the rest: measured by run time alone, the server never found itself
    behind and 2,999 of a 5k burst expired."""
    horizon_s: float = 10.0
    """A deadline not seen again for this long is learned anew (a client may lower it)."""
    max_keys: int = 4096


def thread_times() -> tuple[float, float]:
    """The calling thread's seconds on a core, and ready but waiting for one.

    Linux's schedstat counts both; elsewhere only the time on a core is known.
    """
    try:
        with open("/proc/thread-self/schedstat", "rb") as stats:
            on_core_ns, waited_ns, _ = stats.read().split()
    except (OSError, ValueError):
        return time.thread_time(), 0.0
    return int(on_core_ns) / 1e9, int(waited_ns) / 1e9


class UnseenWait:
    """Learns each (peer, method)'s deadline and tells which calls waited too long to serve."""

    def __init__(
        self,
        limits: UnseenWaitLimits,
        clock: Callable[[], float] = time.monotonic,
        thread_clock: Callable[[], tuple[float, float]] = thread_times,
    ) -> None:
        self._limits = limits
        self._clock = clock
        self._thread_clock = thread_clock
        self._interval_thread_start = thread_clock()
        self._run_share = 1.0
        self._deadlines: collections.OrderedDict[CallKey, tuple[float, float]] = (
            collections.OrderedDict()
        )
        self._interval_end = -math.inf
        self._interval_calls = 0
        self._interval_min_wait = math.inf
        self._behind = False

    @property
    def behind(self) -> bool:
        """Whether every call of the last full interval had waited unseen."""
        return self._behind

    @property
    def run_share(self) -> float:
        """Of the time the loop's thread was busy in the last interval, the share it ran."""
        return self._run_share

    @property
    def callers(self) -> int:
        """How many (peer, method) deadlines are remembered."""
        return len(self._deadlines)

    def too_late(self, key: CallKey, time_left_s: float) -> float | None:
        """The call's unseen wait if it should be refused now, else None."""
        now = self._clock()
        self._roll(now)
        deadline_s = self._deadline(key, time_left_s, now)
        waited_s = max(0.0, deadline_s - time_left_s)
        self._interval_calls += 1
        self._interval_min_wait = min(self._interval_min_wait, waited_s)
        share = self._limits.deadline_share * self._run_share
        limit_s = max(self._limits.min_wait_s, share * deadline_s)
        if self._behind and waited_s > limit_s:
            return waited_s
        return None

    def _roll(self, now: float) -> None:
        if now < self._interval_end:
            return
        thread_now = self._thread_clock()
        ran_s = thread_now[0] - self._interval_thread_start[0]
        waited_s = thread_now[1] - self._interval_thread_start[1]
        self._interval_thread_start = thread_now
        started = self._interval_end - self._limits.interval_s
        busy_share = (ran_s + waited_s) / max(1e-9, now - started)
        self._run_share = ran_s / (ran_s + waited_s) if ran_s + waited_s > 0 else 1.0
        # Entering takes `min_calls` calls; staying takes one. While behind, the calls
        # served are slow and few reach admission per interval: counting them anew let
        # a 5k burst flip to serving every other interval, and its end expired. An idle
        # gap ends the state by the busy share measured across it.
        calls_needed = 1 if self._behind else self._limits.min_calls
        self._behind = (
            self._interval_calls >= calls_needed
            and self._interval_min_wait > self._limits.min_wait_s
            and busy_share >= self._limits.min_busy_share
        )
        self._interval_end = now + self._limits.interval_s
        self._interval_calls = 0
        self._interval_min_wait = math.inf

    def _deadline(self, key: CallKey, time_left_s: float, now: float) -> float:
        known = self._deadlines.get(key)
        if known is None or time_left_s > known[0] or now - known[1] > self._limits.horizon_s:
            known = (time_left_s, now)
            self._deadlines[key] = known
        self._deadlines.move_to_end(key)
        while len(self._deadlines) > self._limits.max_keys:
            self._deadlines.popitem(last=False)
        return known[0]
