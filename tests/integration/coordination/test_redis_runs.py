"""Cached state against Redis forgetting its past (real redis-servers).

A failover to a replica that missed the last writes, or a restart that lost them,
can bring a user's generation or a profile's invalidation counter back to a value
a replica already trusted with other contents. These tests make Redis forget on
purpose and check that nothing read before is trusted after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import redis.asyncio as redis_asyncio
from redis.exceptions import ConnectionError as RedisConnectionError

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import Memory, MemoryType
from recalld_server.storage.profile_cache import RedisProfileCache
from recalld_server.storage.redis_coordination import RedisGenerations, generation_key
from recalld_server.storage.redis_runs import RedisRuns, run_id_of
from tests.services import RedisProcess, SwitchableForwarder, free_port, primary_and_replica

_T = TypeVar("_T")


def _memory(content: str) -> Memory:
    return Memory(id="m1", tenant_id="t", user_id="u", content=content, type=MemoryType.FACT)


async def _answered(call: Callable[[], Awaitable[_T]]) -> _T:
    """The call's result once the client has found the new server (first tries may fail)."""
    for _ in range(50):
        try:
            return await call()
        except (BackendUnavailableError, RedisConnectionError):
            await asyncio.sleep(0.1)
    raise AssertionError("no answer after the failover")


def test_the_run_id_is_read_from_info() -> None:
    assert run_id_of(b"# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\n") == "abc123"
    assert run_id_of("# Server\r\n") == ""


async def test_after_a_failover_no_counter_matches_one_read_before() -> None:
    async with primary_and_replica() as (primary, replica):
        forwarder = SwitchableForwarder(primary.port)
        await forwarder.start()
        url = f"redis://127.0.0.1:{forwarder.port}/0"
        runs = RedisRuns()
        generations = RedisGenerations.from_url(url, runs=runs)
        profiles = RedisProfileCache.from_url(url, runs=runs)
        to_primary = redis_asyncio.Redis(port=primary.port)
        to_replica = redis_asyncio.Redis(port=replica.port)
        try:
            await generations.begin("t", ["u"])
            await generations.end("t", ["u"])
            trusted = await generations.current("t", "u")  # a replica caches under this
            _, profile_generation = await profiles.get("t", "u", "*")
            await profiles.put("t", "u", "*", [_memory("old")], profile_generation)
            assert (await profiles.get("t", "u", "*"))[0] == [_memory("old")]
            assert await to_primary.wait(1, 5000) == 1
            await to_replica.replicaof("NO", "ONE")
            # A change the replica never sees: the counter moves on, the profile is dropped.
            await generations.begin("t", ["u"])
            changed = (await generations.end("t", ["u"]))["u"]
            await profiles.invalidate("t", "u")
            assert (await profiles.get("t", "u", "*"))[0] is None

            primary.kill()
            forwarder.switch(replica.port)

            after = await _answered(lambda: generations.current("t", "u"))
            # The promoted replica went back in time: its raw counter is the one trusted...
            raw = await to_replica.get(generation_key("t", "u"))
            assert raw is not None and int(raw) == trusted & ((1 << 64) - 1)
            # ...but under another run, so nothing cached before is trusted again.
            assert after not in (trusted, changed)
            assert after % 2 == 0
            assert (await _answered(lambda: profiles.get("t", "u", "*")))[0] is None
            # Caching works again on the new primary.
            _, profile_generation = await profiles.get("t", "u", "*")
            await profiles.put("t", "u", "*", [_memory("new")], profile_generation)
            assert (await profiles.get("t", "u", "*"))[0] == [_memory("new")]
        finally:
            await generations.close()
            await profiles.close()
            await to_primary.aclose()
            await to_replica.aclose()
            await forwarder.close()


async def test_a_restart_from_the_append_only_file_is_a_new_run(tmp_path: Path) -> None:
    (tmp_path / "redis").mkdir()
    redis = RedisProcess(free_port(), data_dir=tmp_path / "redis")
    redis.start()
    runs = RedisRuns()
    generations = RedisGenerations.from_url(redis.url, runs=runs)
    try:
        await generations.end("t", ["u"])
        before = await generations.current("t", "u")
        redis.kill()
        redis.start()  # same data, same counter: appendfsync always lost nothing here
        after = await _answered(lambda: generations.current("t", "u"))
        assert after & ((1 << 64) - 1) == before & ((1 << 64) - 1)
        assert after != before  # but an everysec file could have lost the last bumps
        assert await generations.current("t", "u") == after  # steady within a run
    finally:
        await generations.close()
        if redis.process is not None and redis.process.poll() is None:
            redis.kill()


async def test_a_redis_that_will_not_say_its_run_trusts_nothing_across_connections() -> None:
    redis = RedisProcess(free_port())
    redis.start()
    admin = redis_asyncio.Redis(port=redis.port)
    try:
        await admin.acl_setuser(
            "agent", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-info"]
        )
        runs = RedisRuns()
        url = f"redis://agent:pw@127.0.0.1:{redis.port}/0"
        first = RedisGenerations.from_url(url, runs=runs)
        second = RedisGenerations.from_url(url, runs=runs)
        try:
            a = await first.current("t", "u")
            b = await second.current("t", "u")
            assert a >> 64 != b >> 64
        finally:
            await first.close()
            await second.close()
    finally:
        await admin.aclose()
        redis.kill()
