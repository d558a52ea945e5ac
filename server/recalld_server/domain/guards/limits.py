"""Rate limits: token buckets per tenant and per API key, checked before any work.

A bucket holds up to `burst` tokens and refills at `rate` per second; a call
takes one. An empty bucket refuses the call with RESOURCE_EXHAUSTED, cause
"rate_limited", and the time until a token is back as RetryInfo: the call did
nothing, so any client may retry it then. Buckets live where replicas share
them (Redis) or in process (`RateBuckets` port).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from recalld_server.domain.core.errors import BackendUnavailableError, ResourceExhaustedError
from recalld_server.domain.core.model import Principal

BURST_SECONDS = 2.0
"""A bucket holds this many seconds of its rate: short bursts pass."""


class RateBuckets(Protocol):
    """Token buckets by name."""

    async def take(self, name: str, rate: float, burst: float) -> float:
        """Takes one token; returns 0 when taken, else seconds until one is back."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class RateLimits:
    """Calls per second per tenant (0: none); per key ones come with the key."""

    tenant_rate: float = 0.0


class RateLimiter:
    """Applies the tenant's and the key's limits to each call."""

    def __init__(self, buckets: RateBuckets, limits: RateLimits) -> None:
        self._buckets = buckets
        self._limits = limits

    async def admit(self, principal: Principal) -> None:
        """Returns when the call may go on; raises ResourceExhaustedError otherwise."""
        checks = []
        if principal.rate_limit > 0:
            checks.append((f"key:{principal.key_id}", principal.rate_limit, "API key"))
        if self._limits.tenant_rate > 0:
            checks.append((f"tenant:{principal.tenant_id}", self._limits.tenant_rate, "tenant"))
        for name, rate, what in checks:
            try:
                wait_s = await self._buckets.take(name, rate, max(1.0, rate * BURST_SECONDS))
            except BackendUnavailableError:
                continue  # limits shared through Redis: without it, calls are not limited
            if wait_s > 0:
                raise ResourceExhaustedError(
                    f"the {what} rate limit of {rate:g} calls/s is reached",
                    retry_after_s=wait_s,
                    cause="rate_limited",
                )
