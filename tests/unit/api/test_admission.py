"""Admission control: slots, a bounded FIFO of waiters, shedding with a retry delay."""

from __future__ import annotations

import asyncio
import time

import pytest

from recalld_server.api.admission import MAX_RETRY_S, MIN_RETRY_S, Admission, AdmissionLimits
from recalld_server.domain.core.errors import ResourceExhaustedError


async def _settle() -> None:
    """Lets woken tasks run (a waiter resumes through a few event loop steps)."""
    for _ in range(10):
        await asyncio.sleep(0)


async def _started(admission: Admission) -> asyncio.Task[None]:
    task = asyncio.create_task(admission.acquire())
    await _settle()
    return task


async def test_calls_run_up_to_the_limit_then_wait_in_order() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=2, max_queued=5, max_queue_wait_s=5))
    await admission.acquire()
    await admission.acquire()
    first, second = await _started(admission), await _started(admission)
    assert (admission.running, admission.waiting) == (2, 2)
    assert not first.done() and not second.done()

    admission.release(0.01)
    await _settle()
    assert first.done() and not second.done()  # first come, first served
    admission.release(0.01)
    await _settle()
    assert second.done()
    assert (admission.running, admission.waiting) == (2, 0)
    admission.release(0.01)
    admission.release(0.01)
    assert admission.running == 0


async def test_a_full_queue_sheds_at_once_with_a_bounded_retry_delay() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=1, max_queued=1, max_queue_wait_s=5))
    await admission.acquire()
    waiter = await _started(admission)
    with pytest.raises(ResourceExhaustedError) as caught:
        await admission.acquire()
    assert caught.value.cause == "server_overloaded"
    assert caught.value.retry_after_s is not None
    assert MIN_RETRY_S <= caught.value.retry_after_s <= MAX_RETRY_S
    assert admission.shed == 1
    admission.release(0.01)
    await waiter
    admission.release(0.01)
    assert (admission.running, admission.waiting) == (0, 0)


async def test_a_call_waiting_too_long_is_shed_and_leaves_the_line() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=1, max_queued=4, max_queue_wait_s=0.05))
    await admission.acquire()
    with pytest.raises(ResourceExhaustedError, match="waited"):
        await admission.acquire()
    assert admission.waiting == 0
    admission.release(0.01)
    assert admission.running == 0
    await admission.acquire()  # the slot is free again
    assert admission.running == 1


async def test_a_cancelled_waiter_gives_up_its_place_without_leaking_a_slot() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=1, max_queued=4, max_queue_wait_s=5))
    await admission.acquire()
    gone, next_in_line = await _started(admission), await _started(admission)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    admission.release(0.01)
    await next_in_line
    assert (admission.running, admission.waiting) == (1, 0)
    admission.release(0.01)
    assert admission.running == 0


async def test_the_retry_delay_grows_with_the_backlog() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=2, max_queued=100, max_queue_wait_s=5))
    for _ in range(2):
        await admission.acquire()
    for _ in range(20):
        admission.release(1.0)  # calls take about a second
        await admission.acquire()
    quiet = admission.retry_after_s()
    waiters = [await _started(admission) for _ in range(40)]
    assert admission.retry_after_s() > quiet
    assert admission.retry_after_s() <= MAX_RETRY_S
    for task in waiters:
        task.cancel()
    await asyncio.gather(*waiters, return_exceptions=True)
    assert admission.waiting == 0


async def test_a_queued_call_is_shed_before_its_deadline_not_cut_by_it() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=1, max_queued=5, max_queue_wait_s=5))
    await admission.acquire()
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ResourceExhaustedError) as caught:
        await admission.acquire(time_left_s=0.3)
    waited = loop.time() - started
    assert 0.2 <= waited < 0.3  # gave up with time left to answer
    assert caught.value.cause == "server_overloaded"
    assert admission.waiting == 0
    with pytest.raises(ResourceExhaustedError):
        await admission.acquire(time_left_s=0.01)  # no time to wait at all
    # A free slot is taken whatever the deadline.
    admission.release(0.01)
    await admission.acquire(time_left_s=0.01)
    assert admission.running == 1


async def test_while_the_loop_runs_late_new_calls_are_shed_at_once() -> None:
    admission = Admission(AdmissionLimits(max_in_flight=4, max_queued=5, max_loop_lag_s=0.1))
    watcher = asyncio.create_task(admission.watch_loop(period_s=0.05))
    try:
        await admission.acquire()
        await asyncio.sleep(0.01)
        time.sleep(0.3)  # noqa: ASYNC251  # the loop blocked, as under a burst
        await asyncio.sleep(0.005)  # the watcher's late timer runs first
        assert admission.loop_lag_s > 0.1
        with pytest.raises(ResourceExhaustedError) as caught:
            await admission.acquire()  # a slot is free, but the loop is behind
        assert "behind" in str(caught.value)
        await asyncio.sleep(0.12)  # on time again
        assert admission.loop_lag_s < 0.1
        await admission.acquire()
        assert admission.running == 2
    finally:
        watcher.cancel()
