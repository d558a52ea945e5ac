"""A circuit breaker for Redis: a hung or dead Redis fails calls at once.

Socket timeouts bound one call, but a frozen Redis (SIGSTOP, a stalled network)
would still cost every recall that timeout, and recall p99 rose to 9.6 s. After
`failures` consecutive errors the circuit opens: calls fail immediately with
BackendUnavailableError (callers fall back as when Redis is down) for
`cooldown_s`; then one trial call is let through, and its success closes it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from redis.exceptions import RedisError

from recalld_server.domain.errors import BackendUnavailableError


class CircuitBreaker:
    """Counts consecutive failures of one dependency and short-circuits while open."""

    def __init__(
        self,
        name: str,
        failures: int = 3,
        cooldown_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._name = name
        self._threshold = failures
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._open_until = 0.0
        self.opened = 0
        """How many times the circuit opened (for tests and logs)."""

    @property
    def is_open(self) -> bool:
        """Whether calls are refused now (a trial is allowed once the cooldown ends)."""
        return self._failures >= self._threshold and self._clock() < self._open_until

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Runs a call: refused while open.

        Redis and socket errors count towards opening and leave as
        BackendUnavailableError.
        """
        if self.is_open:
            raise BackendUnavailableError(f"{self._name} unavailable (circuit open)")
        try:
            yield
        except (RedisError, OSError) as error:
            self._failures += 1
            if self._failures >= self._threshold:
                if self._clock() >= self._open_until:
                    self.opened += 1
                self._open_until = self._clock() + self._cooldown_s
            raise BackendUnavailableError(f"{self._name} unavailable") from error
        self._failures = 0
