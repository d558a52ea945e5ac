"""The Redis circuit breaker: opens after consecutive failures, retries after a cooldown."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.storage.circuit import CircuitBreaker


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fail(breaker: CircuitBreaker) -> None:
    with pytest.raises(BackendUnavailableError), breaker.guard():
        raise RedisConnectionError("refused")


def test_opens_after_consecutive_failures_and_refuses_without_calling() -> None:
    clock = _Clock()
    breaker = CircuitBreaker("redis", failures=3, cooldown_s=5, clock=clock)
    for _ in range(3):
        _fail(breaker)
    assert breaker.is_open and breaker.opened == 1
    called = False
    with pytest.raises(BackendUnavailableError, match="circuit open"), breaker.guard():
        called = True
    assert not called


def test_a_trial_after_the_cooldown_closes_it_on_success_or_reopens_it() -> None:
    clock = _Clock()
    breaker = CircuitBreaker("redis", failures=2, cooldown_s=5, clock=clock)
    _fail(breaker)
    _fail(breaker)
    clock.now = 5.1
    _fail(breaker)  # the trial fails: open for another cooldown
    assert breaker.is_open and breaker.opened == 2
    clock.now = 10.2
    with breaker.guard():
        pass  # the trial succeeds
    assert not breaker.is_open
    _fail(breaker)
    assert not breaker.is_open  # one failure is not enough again


def test_a_success_resets_the_count() -> None:
    breaker = CircuitBreaker("redis", failures=2, clock=_Clock())
    _fail(breaker)
    with breaker.guard():
        pass
    _fail(breaker)
    assert not breaker.is_open
