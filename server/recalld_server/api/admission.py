"""Admission control: a bounded number of calls run, a bounded number wait, the rest are shed.

Without it every call the transport accepts queues on the event loop: under
1,000 concurrent calls each waited up to 20 s, and past gRPC's own limit calls
came back CANCELLED with no detail. Here a call runs when one of `max_in_flight`
slots is free, waits (first come, first served) while fewer than `max_queued`
others wait, and is answered at once with RESOURCE_EXHAUSTED and RetryInfo
otherwise, or when it has waited `max_queue_wait_s`. A shed call did nothing,
so every client may retry it after the advised delay.

Calls also wait where no queue counts them: between the transport and this
interceptor, on a busy event loop. In a 5,000-call burst on two cores, calls
reached admission with 4 s of their 5 s deadline gone, were served, and the
newer calls behind them expired unseen. So while the loop runs late
(`watch_loop`) and calls already run, a new call is shed at once: a refusal
costs a fraction of a served call, and the backlog drains.

Calls that wait in the transport while the loop keeps time are found from
their deadlines (`unseen_wait`): when every recent call reached admission with
part of its deadline gone, a call that lost a large share of it (0.4) is shed at once.

Health checks and reflection are never shed: only MemoryService calls pass here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import time
from typing import Any

import grpc

from recalld_server.api.status import to_status
from recalld_server.api.unary import UnaryBehavior, UnaryInterceptor
from recalld_server.api.unseen_wait import CallKey, UnseenWait, UnseenWaitLimits
from recalld_server.domain.core.errors import ResourceExhaustedError

SERVICE_PREFIX = "/recalld.v1.MemoryService/"
MIN_RETRY_S = 0.05
MAX_RETRY_S = 5.0
ANSWER_MARGIN_S = 0.05
"""Of a queued call's deadline, what is kept to send the refusal back in time."""


@dataclasses.dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """How many calls run at once, how many may wait, and for how long."""

    max_in_flight: int = 64
    max_queued: int = 512
    max_queue_wait_s: float = 2.0
    max_loop_lag_s: float = 0.25
    """Event-loop lateness beyond which calls that would wait are shed at once."""
    unseen_wait: UnseenWaitLimits = dataclasses.field(default_factory=UnseenWaitLimits)


class Admission:
    """Slots for running calls plus a bounded FIFO of waiting ones."""

    def __init__(self, limits: AdmissionLimits) -> None:
        self._limits = limits
        self._running = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._service_s = 0.01  # moving average of a call's run time, for RetryInfo
        self._last_activity = time.monotonic()
        self._loop_lag_s = 0.0
        self._unseen = UnseenWait(limits.unseen_wait)
        self.shed = 0

    async def watch_loop(self, period_s: float = 0.05) -> None:
        """Measures how late the event loop runs a timer, until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + period_s
            await asyncio.sleep(period_s)
            self._loop_lag_s = max(0.0, loop.time() - due)

    @property
    def loop_lag_s(self) -> float:
        """How late the last timer ran: how long a ready task now waits for its turn."""
        return self._loop_lag_s

    def quiet_for(self) -> float:
        """Seconds since a call last started or finished; 0 while any runs or waits."""
        if self._running or self._waiting:
            return 0.0
        return time.monotonic() - self._last_activity

    @property
    def running(self) -> int:
        """Calls holding a slot now."""
        return self._running

    @property
    def waiting(self) -> int:
        """Calls queued for a slot now."""
        return len(self._waiting)

    def retry_after_s(self) -> float:
        """About how long the calls ahead of a new one take to drain."""
        backlog = self._running + len(self._waiting)
        estimate = backlog / max(1, self._limits.max_in_flight) * self._service_s
        return min(MAX_RETRY_S, max(MIN_RETRY_S, estimate))

    def _overloaded(self, what: str, retry_after_s: float = 0.0) -> ResourceExhaustedError:
        self.shed += 1
        return ResourceExhaustedError(
            f"the server is at capacity ({what}); retry after the advised delay",
            retry_after_s=min(MAX_RETRY_S, max(retry_after_s, self.retry_after_s())),
            cause="server_overloaded",
        )

    async def acquire(
        self, time_left_s: float | None = None, caller: CallKey | None = None
    ) -> None:
        """Takes a slot, waiting in line if needed; raises ResourceExhaustedError when shed.

        `time_left_s` is what remains of the caller's deadline. A call waits no
        longer than would leave it time to run (a call's recent run time) and to
        answer, so a caller with a short deadline is told the server is
        overloaded, with a retry delay, instead of seeing DEADLINE_EXCEEDED from
        the server's own queue. `caller` (peer and method) lets the wait the call
        spent in the transport be told from its deadline.
        """
        self._last_activity = time.monotonic()
        if self._loop_lag_s > self._limits.max_loop_lag_s and self._running:
            raise self._overloaded(f"the server runs {self._loop_lag_s:.2g} s behind")
        if time_left_s is not None and caller is not None:
            waited_s = self._unseen.too_late(caller, time_left_s)
            if waited_s is not None and self._running:
                # The backlog is about as old as this call: retrying sooner meets it.
                raise self._overloaded(
                    f"calls wait {waited_s:.2g} s before the server reaches them", waited_s
                )
        if self._running < self._limits.max_in_flight and not self._waiting:
            self._running += 1
            return
        if len(self._waiting) >= self._limits.max_queued:
            raise self._overloaded(f"{self._limits.max_queued} calls already waiting")
        wait_s = self._limits.max_queue_wait_s
        if time_left_s is not None:
            wait_s = min(wait_s, time_left_s - self._service_s - ANSWER_MARGIN_S)
            if wait_s <= 0:
                raise self._overloaded("no slot free within the call's deadline")
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), wait_s)
        except TimeoutError:
            if turn.done() and not turn.cancelled():
                return  # the slot arrived as the wait ended: keep it
            self._withdraw(turn)
            raise self._overloaded(f"waited {wait_s:.3g} s for a slot") from None
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release(0.0)  # handed a slot while being cancelled: pass it on
            else:
                self._withdraw(turn)
            raise

    def _withdraw(self, turn: asyncio.Future[None]) -> None:
        turn.cancel()
        with contextlib.suppress(ValueError):  # already handed on by release()
            self._waiting.remove(turn)

    def release(self, ran_s: float) -> None:
        """Returns a slot: the first live waiter gets it, else it frees."""
        self._last_activity = time.monotonic()
        if ran_s > 0:
            self._service_s = 0.9 * self._service_s + 0.1 * ran_s
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes on; running stays the same
                return
        self._running -= 1


class AdmissionInterceptor(UnaryInterceptor):
    """Applies an `Admission` to every unary MemoryService call."""

    methods_prefix = SERVICE_PREFIX

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def wrap(self, behavior: UnaryBehavior, method: str) -> UnaryBehavior:
        """Runs the call when admitted; answers RESOURCE_EXHAUSTED when shed."""
        admission = self._admission

        async def admitted(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                await admission.acquire(context.time_remaining(), (context.peer(), method))
            except ResourceExhaustedError as error:
                # Answered without raising (gRPC drops the reply of a call that is not
                # OK): in a burst a refusal must cost as little as it can.
                status = to_status(error)
                context.set_code(status.code)
                context.set_details(status.details)
                context.set_trailing_metadata(status.trailing_metadata)
                return None
            started = time.monotonic()
            try:
                return await behavior(request, context)
            finally:
                admission.release(time.monotonic() - started)

        return admitted
