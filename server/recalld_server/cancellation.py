"""Stopping a background task so that it really stops, and cleanup that runs to its end.

On Python 3.11 `asyncio.wait_for` returns its inner result and drops a
cancellation that arrives as the inner awaitable finishes (CPython gh-86296,
fixed in 3.12). redis-py wraps every send in `wait_for` when the client has a
socket timeout, which redis-py 8 sets by default: a task cancelled during a
Redis call can carry on as if nothing happened. A renewal loop that waits for
its one cancellation then renews forever, and whoever awaits it waits forever
(a user's lock held for good, a server that never finishes stopping). Whoever
stops a loop therefore cancels it again until it has ended.

Cancelling again can cut cleanup short, and cleanup is often what gets
cancelled (a lock released while its holder is being stopped): releases run
to their end with `run_to_end`. Renewal loops (`renewing`) also check a flag
after every call, so that a lost cancellation does not cost them the wait
before the second one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

RECANCEL_AFTER_S = 0.5
"""How long a cancelled task gets to end before it is cancelled again: plenty for
its cleanup, so that a second cancellation seldom finds cleanup still running."""


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancels `task` and returns once it has ended, however it ends.

    Its result or exception is dropped: the task was being stopped. Cancelled
    itself meanwhile, it still waits for `task` to end, then passes the
    cancellation on.
    """
    interrupted = await _wait_until_done(task, cancel=True)
    _retrieve(task)
    if interrupted:
        raise asyncio.CancelledError


async def run_to_end(awaitable: Awaitable[T]) -> T:
    """Awaits `awaitable` to its end even if the caller is cancelled meanwhile.

    For cleanup that must not be cut short, such as releasing a lock; the
    caller's cancellation is passed on afterwards. Bounded by what it awaits
    (Redis calls by the client's socket timeout).
    """
    task = asyncio.ensure_future(awaitable)
    if await _wait_until_done(task, cancel=False):
        _retrieve(task)
        raise asyncio.CancelledError
    return task.result()


@contextlib.asynccontextmanager
async def renewing(
    renew: Callable[[], Awaitable[object]], interval_s: float
) -> AsyncIterator[None]:
    """Calls `renew` every `interval_s` while the block runs, and not once after it.

    `renew` must not raise: a renewal that fails is retried at the next interval.
    """
    stopped = asyncio.Event()

    async def renew_until_stopped() -> None:
        while not stopped.is_set():
            await asyncio.sleep(interval_s)
            if not stopped.is_set():
                await renew()

    renewer = asyncio.create_task(renew_until_stopped())
    try:
        yield
    finally:
        stopped.set()
        await cancel_and_wait(renewer)


async def _wait_until_done(task: asyncio.Future[Any], cancel: bool) -> bool:
    """Waits for `task` to end (cancelling it, again and again, if asked).

    Returns whether the caller was cancelled while waiting.
    """
    interrupted = False
    while not task.done():
        if cancel:
            task.cancel()
        try:
            await asyncio.wait({task}, timeout=RECANCEL_AFTER_S if cancel else None)
        except asyncio.CancelledError:
            interrupted = True
    return interrupted


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Marks the outcome seen, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        with contextlib.suppress(BaseException):
            task.result()
