"""Recall statistics in Redis, shared by replicas, on a real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
import signal

import redis.asyncio as redis_asyncio

from recalld_server.storage.redis_coordination import RedisAccessTracker
from tests.services import RedisProcess


async def test_statistics_given_back_reach_the_replica_that_flushes_next(
    redis_server: RedisProcess,
) -> None:
    first = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    second = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    try:
        await first.record("t", ["m1", "m2"], 1_000)
        await first.record("t", ["m2"], 2_000)
        assert await first.push()
        drained = await first.drain()
        assert drained == {("t", "m1"): (1, 1_000), ("t", "m2"): (2, 2_000)}
        await first.restore(drained)  # this replica's flush failed
        taken: dict[tuple[str, str], tuple[int, int]] = {}
        async with asyncio.timeout(10):  # the pusher sends it within a second or so
            while taken != drained:
                await asyncio.sleep(0.1)
                taken.update(await second.drain())
        assert await first.drain() == {}
    finally:
        await first.close()
        await second.close()


async def test_drains_during_pushes_lose_and_repeat_no_recall(redis_server: RedisProcess) -> None:
    recalling = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    flushing = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    totals: dict[tuple[str, str], int] = {}
    try:

        async def recall_and_push() -> None:
            for round_ in range(200):
                await recalling.record(f"t{round_ % 3}", ["a", "b"], 1_000 + round_)
                await recalling.record(f"t{round_ % 3}", ["a"], 1_000 + round_)
                await recalling.push()

        async def flush_repeatedly(until: asyncio.Task[None]) -> None:
            while not until.done():
                for key, (count, _) in (await flushing.drain()).items():
                    totals[key] = totals.get(key, 0) + count
                await asyncio.sleep(0)

        pushing = asyncio.create_task(recall_and_push())
        await asyncio.gather(pushing, flush_repeatedly(pushing))
        for key, (count, _) in (await flushing.drain()).items():
            totals[key] = totals.get(key, 0) + count
        rounds = {tenant: len(range(int(tenant[1]), 200, 3)) for tenant in ("t0", "t1", "t2")}
        assert totals == {
            **{(t, "a"): 2 * n for t, n in rounds.items()},
            **{(t, "b"): n for t, n in rounds.items()},
        }
    finally:
        await recalling.close()
        await flushing.close()


async def test_a_push_stopped_mid_way_is_pushed_again_at_close(redis_server: RedisProcess) -> None:
    assert redis_server.process is not None
    tracker = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    reader = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    try:
        await tracker.record("t", ["m"], 1_000)
        redis_server.process.send_signal(signal.SIGSTOP)  # the push now waits on Redis
        try:
            pushing = asyncio.create_task(tracker.push())
            await asyncio.sleep(0.2)
            pushing.cancel()  # a server stopping
            with contextlib.suppress(asyncio.CancelledError):
                await pushing
        finally:
            redis_server.process.send_signal(signal.SIGCONT)
        await tracker.close()  # pushes what the buffer holds
        assert await reader.drain() == {("t", "m"): (1, 1_000)}
    finally:
        await reader.close()
