"""Telling from deadlines how long calls waited before the server saw them."""

from __future__ import annotations

import time

import pytest

from recalld_server.api.unseen_wait import CallKey, UnseenWait, UnseenWaitLimits, thread_times

RECALL: CallKey = ("ipv4:127.0.0.1:50001", "/recalld.v1.MemoryService/Recall")
CONSOLIDATE: CallKey = ("ipv4:127.0.0.1:50001", "/recalld.v1.MemoryService/Consolidate")


class Clocks:
    """Wall time and the loop thread's time on a core and waiting for one, moved by the test."""

    def __init__(self) -> None:
        self.now = 100.0
        self.ran = 0.0
        self.waited_for_core = 0.0

    def advance(self, seconds: float, busy_share: float = 1.0, run_share: float = 1.0) -> None:
        self.now += seconds
        self.ran += seconds * busy_share * run_share
        self.waited_for_core += seconds * busy_share * (1 - run_share)

    def thread(self) -> tuple[float, float]:
        return self.ran, self.waited_for_core


def _tracker(clocks: Clocks, **limits: float) -> UnseenWait:
    return UnseenWait(
        UnseenWaitLimits(**limits),  # type: ignore[arg-type]
        clock=lambda: clocks.now,
        thread_clock=clocks.thread,
    )


def _burst(
    tracker: UnseenWait,
    clocks: Clocks,
    key: CallKey,
    calls: int,
    busy_share: float = 1.0,
    run_share: float = 1.0,
) -> list[float | None]:
    """Calls sent at once with a 5 s deadline, reaching admission at 500 a second."""
    verdicts = []
    for _ in range(calls):
        verdicts.append(tracker.too_late(key, 5.0 - (clocks.now - 100.0)))
        clocks.advance(0.002, busy_share, run_share)
    return verdicts


def test_calls_arriving_with_their_whole_deadline_are_never_late() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks)
    for _ in range(2000):
        assert tracker.too_late(RECALL, 5.0) is None
        clocks.advance(0.001)
    assert not tracker.behind


def test_a_burst_backing_up_in_the_transport_is_refused_once_every_call_waited() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks)
    verdicts = _burst(tracker, clocks, RECALL, 1500)
    # Calls that lost less than 0.4 of the 5 s deadline are served, in or out of a backlog.
    assert all(v is None for v in verdicts[:990])
    assert tracker.behind
    refused = [v for v in verdicts if v is not None]
    assert len(refused) > 450
    assert all(v > 2.0 for v in refused)
    # The backlog gone, calls arrive on time again and are served.
    clocks.advance(1.0)
    for _ in range(100):
        assert tracker.too_late(RECALL, 5.0) is None
        clocks.advance(0.002)
    assert not tracker.behind


def test_a_loop_sharing_its_core_is_behind_and_refuses_sooner() -> None:
    """Another process takes a core: the loop runs 0.4 of the time and waits for a core
    the rest. It is as busy as before, and every call takes 2.5 times as long."""
    clocks = Clocks()
    tracker = _tracker(clocks)
    verdicts = _burst(tracker, clocks, RECALL, 1500, run_share=0.4)
    assert tracker.behind
    assert tracker.run_share == pytest.approx(0.4)
    first_refused = next(i for i, v in enumerate(verdicts) if v is not None)
    # 0.4 x 0.4 of the 5 s deadline: refused from 0.8 s of waiting on, not 2 s.
    assert 0.8 <= first_refused * 0.002 < 1.0


def test_an_idle_loop_is_never_behind_whatever_the_deadlines_say() -> None:
    """A gateway passing on what is left of its own deadlines, to a server at rest."""
    clocks = Clocks()
    tracker = _tracker(clocks)
    assert all(v is None for v in _burst(tracker, clocks, RECALL, 1500, busy_share=0.2))
    assert not tracker.behind


def test_a_quiet_client_with_mixed_deadlines_is_never_refused() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks)
    for i in range(200):
        assert tracker.too_late(RECALL, 30.0 if i % 2 else 2.0) is None
        clocks.advance(0.02)  # 50 calls a second: under 8 per interval
    assert not tracker.behind


def test_each_method_keeps_its_own_deadline() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks)
    for _ in range(500):
        assert tracker.too_late(CONSOLIDATE, 120.0) is None
        assert tracker.too_late(RECALL, 5.0) is None
        clocks.advance(0.002)
    assert not tracker.behind


def test_a_lowered_deadline_is_learned_again_after_the_horizon() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks, horizon_s=10.0)
    tracker.too_late(RECALL, 30.0)
    clocks.advance(10.5)
    for _ in range(500):
        assert tracker.too_late(RECALL, 5.0) is None
        clocks.advance(0.002)
    assert not tracker.behind


def test_few_slow_calls_keep_the_server_behind() -> None:
    """Once behind, the calls served are slow: three per interval still show the backlog."""
    clocks = Clocks()
    tracker = _tracker(clocks)
    _burst(tracker, clocks, RECALL, 1100)
    assert tracker.behind
    verdicts = []
    for _ in range(10):
        for _ in range(3):
            verdicts.append(tracker.too_late(RECALL, 5.0 - (clocks.now - 100.0)))
            clocks.advance(0.04)
    assert tracker.behind
    assert all(v is not None for v in verdicts[3:])


def test_a_pause_between_calls_ends_the_backlog() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks)
    _burst(tracker, clocks, RECALL, 600)
    assert tracker.behind
    clocks.advance(5.0, busy_share=0.0)
    # A late straggler after the pause is not refused on the old evidence.
    assert tracker.too_late(RECALL, 1.0) is None
    assert not tracker.behind


def test_deadlines_are_remembered_for_a_bounded_number_of_callers() -> None:
    clocks = Clocks()
    tracker = _tracker(clocks, max_keys=16)
    for port in range(1000):
        tracker.too_late((f"ipv4:127.0.0.1:{port}", "/m"), 5.0)
    assert tracker.callers == 16


def test_thread_times_count_this_threads_work() -> None:
    ran_before, waited_before = thread_times()
    deadline = time.thread_time() + 0.05
    while time.thread_time() < deadline:
        pass
    ran_after, waited_after = thread_times()
    assert ran_after - ran_before >= 0.04
    assert waited_after >= waited_before >= 0.0
