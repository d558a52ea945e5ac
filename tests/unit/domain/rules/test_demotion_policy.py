"""The lifecycle policy's order of TTLs and windows: demotion comes before expiry."""

from __future__ import annotations

import dataclasses

import pytest

from recalld_server.domain.core.model import DAY_MS, Memory, MemoryType, Tier
from recalld_server.domain.rules.lifecycle import LifecyclePolicy, demoted_expiry


def test_the_defaults_demote_an_unused_p1_memory_before_it_expires() -> None:
    policy = LifecyclePolicy()
    assert policy.demote_unused_days < policy.tier_ttl_days[Tier.P1]


@pytest.mark.parametrize("days", [90, 120, 0, -1])
def test_a_demotion_window_at_or_past_p1_expiry_is_refused(days: int) -> None:
    with pytest.raises(ValueError, match="demote_unused_days"):
        LifecyclePolicy(demote_unused_days=days)


def test_a_demoted_memory_expires_p2_ttl_after_the_demotion_unless_explicit() -> None:
    policy = LifecyclePolicy()
    memory = Memory(
        id="m",
        tenant_id="t",
        user_id="u",
        content="c",
        type=MemoryType.FACT,
        tier=Tier.P2,
        created_at=0,
    )
    now = 61 * DAY_MS
    assert demoted_expiry(memory, policy, now) == now + 30 * DAY_MS
    explicit = dataclasses.replace(memory, expire_at=400 * DAY_MS, expire_explicit=True)
    assert demoted_expiry(explicit, policy, now) == 400 * DAY_MS
