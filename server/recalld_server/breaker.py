"""A circuit breaker: a dependency that keeps failing is not called for a while.

Timeouts bound one call, but a hung or dead dependency would still cost every
call that timeout. After `failures` consecutive failures the circuit opens:
callers fail at once with BackendUnavailableError (and a retry delay: the time
left of the cooldown) for `cooldown_s`; then one trial call is let through,
whose success closes it and whose failure opens it for another cooldown.
Which errors count is the caller's choice (`storage.circuit` counts Redis and
socket errors; the embedding endpoint counts what it would retry).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from recalld_server.domain.core.errors import BackendUnavailableError


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
    def name(self) -> str:
        """The dependency, as error messages name it."""
        return self._name

    @property
    def is_open(self) -> bool:
        """Whether calls are refused now (a trial is allowed once the cooldown ends)."""
        return self._failures >= self._threshold and self._clock() < self._open_until

    def check(self) -> None:
        """Raises BackendUnavailableError (retry after the cooldown left) while open."""
        if self.is_open:
            raise BackendUnavailableError(
                f"{self._name} unavailable (circuit open)",
                retry_after_s=max(0.001, self._open_until - self._clock()),
            )

    def failed(self) -> None:
        """Counts one failure; the threshold-th in a row opens the circuit."""
        self._failures += 1
        if self._failures >= self._threshold:
            if self._clock() >= self._open_until:
                self.opened += 1
            self._open_until = self._clock() + self._cooldown_s

    def succeeded(self) -> None:
        """A call went through: the count starts again."""
        self._failures = 0
