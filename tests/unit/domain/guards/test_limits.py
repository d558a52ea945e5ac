"""Rate limits: token buckets per key and per tenant, with the wait as RetryInfo."""

from __future__ import annotations

import pytest

from recalld_server.domain.core.errors import ResourceExhaustedError
from recalld_server.domain.core.model import Principal
from recalld_server.domain.guards.limits import RateLimiter, RateLimits
from recalld_server.storage.rate_buckets import LocalRateBuckets


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_key_gets_its_burst_then_waits_for_refills() -> None:
    clock = _Clock()
    limiter = RateLimiter(LocalRateBuckets(clock), RateLimits())
    key = Principal("acme", key_id="k1", rate_limit=2.0)  # burst 4
    for _ in range(4):
        await limiter.admit(key)
    with pytest.raises(ResourceExhaustedError) as refused:
        await limiter.admit(key)
    assert refused.value.cause == "rate_limited"
    assert refused.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.5
    await limiter.admit(key)  # one token back
    other = Principal("acme", key_id="k2", rate_limit=2.0)
    await limiter.admit(other)  # buckets are per key


async def test_the_tenant_limit_covers_all_its_keys() -> None:
    clock = _Clock()
    limiter = RateLimiter(LocalRateBuckets(clock), RateLimits(tenant_rate=1.0))  # burst 2
    await limiter.admit(Principal("acme", key_id="a"))
    await limiter.admit(Principal("acme", key_id="b"))
    with pytest.raises(ResourceExhaustedError, match="tenant rate limit"):
        await limiter.admit(Principal("acme", key_id="c"))
    await limiter.admit(Principal("globex", key_id="d"))  # another tenant's own bucket


async def test_no_limits_means_no_refusals() -> None:
    limiter = RateLimiter(LocalRateBuckets(_Clock()), RateLimits())
    for _ in range(1000):
        await limiter.admit(Principal("acme"))
