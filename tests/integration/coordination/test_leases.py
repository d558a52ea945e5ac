"""Leases on a real redis-server: upkeep runs on one replica at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis_asyncio

from recalld_server.storage.leases import LocalLeases, RedisLeases
from tests.services import RedisProcess, free_port


@pytest.fixture
async def replicas(redis_server: RedisProcess) -> AsyncIterator[tuple[RedisLeases, RedisLeases]]:
    first = RedisLeases(redis_asyncio.Redis.from_url(redis_server.url), ttl_ms=600)
    second = RedisLeases(redis_asyncio.Redis.from_url(redis_server.url), ttl_ms=600)
    yield first, second
    await first.close()
    await second.close()


async def test_one_holder_at_a_time_and_the_lease_is_renewed_while_held(
    replicas: tuple[RedisLeases, RedisLeases],
) -> None:
    first, second = replicas
    async with first.hold("flush") as mine:
        assert mine
        for _ in range(4):  # 1.6 s: well past the 600 ms TTL, renewed meanwhile
            async with second.hold("flush") as theirs:
                assert not theirs
            await asyncio.sleep(0.4)
        async with second.hold("consolidation") as other_job:
            assert other_job  # leases are per job
    async with second.hold("flush") as theirs:
        assert theirs  # released at the end of the block


async def test_a_holder_that_died_loses_the_lease_when_its_ttl_ends(
    replicas: tuple[RedisLeases, RedisLeases], redis_server: RedisProcess
) -> None:
    _, second = replicas
    raw = redis_asyncio.Redis.from_url(redis_server.url)
    try:  # a replica killed while holding: its key stays, nobody renews it
        await raw.set(RedisLeases.key("dead"), "gone-replica:token", px=500)
    finally:
        await raw.aclose()
    async with second.hold("dead") as theirs:
        assert not theirs
    await asyncio.sleep(0.7)
    async with second.hold("dead") as theirs:
        assert theirs


async def test_jobs_on_two_replicas_never_overlap(
    replicas: tuple[RedisLeases, RedisLeases],
) -> None:
    running = 0
    most = 0
    runs = 0

    async def job() -> None:
        nonlocal running, most, runs
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        runs += 1

    async def replica(leases: RedisLeases) -> None:
        for _ in range(20):
            async with leases.hold("overlap") as mine:
                if mine:
                    await job()
            await asyncio.sleep(0.01)

    await asyncio.gather(*(replica(leases) for leases in replicas))
    assert most == 1 and runs > 0


async def test_a_lease_is_skipped_not_fatal_when_redis_is_unreachable() -> None:
    unreachable = RedisLeases.from_url(f"redis://127.0.0.1:{free_port()}/0")
    try:
        async with unreachable.hold("flush") as mine:
            assert not mine
    finally:
        await unreachable.close()
    async with LocalLeases().hold("flush") as mine:
        assert mine


async def test_every_hold_ends_when_its_block_ends(redis_server: RedisProcess) -> None:
    # Renewals every 10 ms, so that blocks often end while one is in flight: on
    # Python 3.11 redis-py's send then swallows the renewer's cancellation, and a
    # renewer stopped by one cancellation renewed forever (a CI run hung here).
    client = redis_asyncio.Redis.from_url(redis_server.url)
    leases = RedisLeases(client, ttl_ms=30)
    try:
        async with asyncio.timeout(60):
            for run in range(300):
                async with leases.hold("flush") as mine:
                    assert mine
                    await asyncio.sleep(0.001 * (run % 17))
    finally:
        await leases.close()
