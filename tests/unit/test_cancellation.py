"""Stopping a task whose cancellation gets lost on the way."""

from __future__ import annotations

import asyncio
import sys

from recalld_server.cancellation import cancel_and_wait, renewing, run_to_end


async def _renewing_forever(finishing: asyncio.Future[None], renewals: list[int]) -> None:
    # A lease renewer whose Redis call (its `wait_for`) finishes exactly when the
    # cancellation arrives, the race redis-py's sends run into; later rounds only
    # sleep, so that a second cancellation always lands.
    await asyncio.wait_for(finishing, 10)
    while True:
        renewals.append(1)
        await asyncio.sleep(0.01)


async def _started_and_caught_mid_call() -> tuple[asyncio.Task[None], list[int]]:
    loop = asyncio.get_running_loop()
    finishing: asyncio.Future[None] = loop.create_future()
    renewals: list[int] = []
    task = asyncio.create_task(_renewing_forever(finishing, renewals))
    await asyncio.sleep(0)  # the task is now inside wait_for
    finishing.set_result(None)
    return task, renewals


async def test_python_3_11_loses_a_cancellation_that_races_wait_for() -> None:
    # The fault itself, so that the next test means something on this interpreter.
    task, renewals = await _started_and_caught_mid_call()
    try:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=0.2)
        if sys.version_info < (3, 12):
            assert not done and renewals  # renewing on: the one cancellation was dropped
    finally:
        task.cancel()  # lands in its sleep
        await asyncio.wait({task}, timeout=1)
    assert task.cancelled()


async def test_a_task_that_lost_its_cancellation_is_stopped_all_the_same() -> None:
    task, renewals = await _started_and_caught_mid_call()
    async with asyncio.timeout(2):
        await cancel_and_wait(task)
    assert task.done()
    stopped_at = len(renewals)
    await asyncio.sleep(0.05)
    assert len(renewals) == stopped_at


async def test_a_task_that_already_ended_or_failed_is_left_as_it_is() -> None:
    async def fail() -> None:
        raise RuntimeError("already broken")

    failed = asyncio.create_task(fail())
    await asyncio.wait({failed})
    await cancel_and_wait(failed)  # its exception is retrieved, not raised
    finished = asyncio.create_task(asyncio.sleep(0))
    await cancel_and_wait(finished)
    assert failed.done() and finished.done()


async def test_a_stopper_cancelled_itself_still_stops_the_task_then_passes_it_on() -> None:
    task, renewals = await _started_and_caught_mid_call()
    stopper = asyncio.create_task(cancel_and_wait(task))
    await asyncio.sleep(0)
    stopper.cancel()  # the stopper's own caller is being stopped
    done, _ = await asyncio.wait({stopper}, timeout=2)
    assert done and stopper.cancelled()
    assert task.done()
    stopped_at = len(renewals)
    await asyncio.sleep(0.05)
    assert len(renewals) == stopped_at


async def test_cleanup_run_to_its_end_finishes_though_its_caller_is_cancelled() -> None:
    finished: list[str] = []

    async def release() -> str:
        await asyncio.sleep(0.05)
        finished.append("released")
        return "released"

    async def holder() -> str:
        try:
            await asyncio.sleep(10)
        finally:
            await run_to_end(release())
        return "unreachable"

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0.01)
    task.cancel()  # a second cancellation lands in the cleanup
    done, _ = await asyncio.wait({task}, timeout=2)
    assert done and task.cancelled()
    assert finished == ["released"]
    assert await run_to_end(release()) == "released"  # uncancelled: just the result


async def test_renewals_end_with_the_block_even_when_one_swallows_its_cancellation() -> None:
    loop = asyncio.get_running_loop()
    finishing: asyncio.Future[None] = loop.create_future()
    in_call = asyncio.Event()
    calls = 0

    async def renew() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            in_call.set()
            await asyncio.wait_for(finishing, 10)  # finishes as the block ends

    async with renewing(renew, 0.001):
        await in_call.wait()
        finishing.set_result(None)
    # Without the flag the loop would renew again (every 1 ms) until cancelled again.
    await asyncio.sleep(0.05)
    assert calls == 1
