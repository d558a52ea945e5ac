"""Stopping a background task so that it really stops.

On Python 3.11 `asyncio.wait_for` returns its inner result and drops a
cancellation that arrives as the inner awaitable finishes (CPython gh-86296,
fixed in 3.12). redis-py wraps every send in `wait_for` when the client has a
socket timeout, which redis-py 8 sets by default: a task cancelled during a
Redis call can carry on as if nothing happened. A renewal loop that waits for
its one cancellation then renews forever, and whoever awaits it waits forever
(a user's lock held for good, a server that never finishes stopping). Whoever
stops a loop therefore cancels it again until it has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

RECANCEL_AFTER_S = 0.05
"""How long a cancelled task gets to end before it is cancelled again."""


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancels `task` and returns once it has ended, however it ends.

    Its result or exception is dropped: the task was being stopped.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=RECANCEL_AFTER_S)
    if not task.cancelled():
        with contextlib.suppress(BaseException):
            task.result()  # retrieved, so asyncio does not log it as never retrieved
