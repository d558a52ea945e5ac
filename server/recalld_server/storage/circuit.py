"""The circuit breaker for Redis: a hung or dead Redis fails calls at once.

Socket timeouts bound one call, but a frozen Redis (SIGSTOP, a stalled network)
would still cost every recall that timeout, and recall p99 rose to 9.6 s. After
`failures` consecutive errors the circuit opens: calls fail immediately with
BackendUnavailableError (callers fall back as when Redis is down) for
`cooldown_s`; then one trial call is let through, and its success closes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from redis.exceptions import RedisError

from recalld_server import breaker
from recalld_server.domain.core.errors import BackendUnavailableError


class CircuitBreaker(breaker.CircuitBreaker):
    """The breaker of one Redis-backed part: Redis and socket errors count."""

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Runs a call: refused while open.

        Redis and socket errors count towards opening and leave as
        BackendUnavailableError.
        """
        self.check()
        try:
            yield
        except (RedisError, OSError) as error:
            self.failed()
            raise BackendUnavailableError(f"{self.name} unavailable") from error
        self.succeeded()
