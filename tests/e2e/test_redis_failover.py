"""A Redis failover to a replica that missed the last change (real redis-servers).

Redis replication is asynchronous: a promoted replica can lack the last writes the
old primary acknowledged, so per-user generations and profile-cache counters can go
back in time. Nothing stale may be served across that: not a replica's cached
working set, not a profile cached in Redis. The address the replicas use moves to
the promoted replica the way a virtual IP or a DNS name does (here a TCP forwarder
on loopback that switches target and cuts the old connections).
"""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as redis_asyncio

from recalld_client import RecalldClient
from recalld_server.embedding.batching import MicroBatchingEmbedder
from tests.e2e.helpers import memory, shared_replicas
from tests.figures import record
from tests.services import SwitchableForwarder, primary_and_replica


async def test_a_failover_to_a_replica_that_missed_the_last_change_serves_nothing_stale(
    tmp_path: Path, embedder: MicroBatchingEmbedder, tenant: str, user_id: str
) -> None:
    question = "What colour does the user like?"
    async with primary_and_replica() as (primary, replica):
        forwarder = SwitchableForwarder(primary.port)
        await forwarder.start()
        url = f"redis://127.0.0.1:{forwarder.port}/0"
        replicas = await shared_replicas(tmp_path / "shared", url, embedder)
        a, b = (RecalldClient(f"127.0.0.1:{r.port}", tenant=tenant) for r in replicas)
        to_primary = redis_asyncio.Redis(port=primary.port)
        to_replica = redis_asyncio.Redis(port=replica.port)
        try:
            await a.write(user_id, [memory("The user likes green", topic_key="colour")])
            for c in (a, b):  # both replicas cache the user's set and profile
                assert (await c.recall(user_id, question)).items[0].memory.content == (
                    "The user likes green"
                )
                await c.get_profile(user_id)
                assert (await c.get_profile(user_id)).profile.from_cache
            assert await to_primary.wait(1, 5000) == 1  # the replica has all of it
            # From here on the replica falls behind: it will miss the next change.
            await to_replica.replicaof("NO", "ONE")
            await a.write(user_id, [memory("The user now likes blue", topic_key="colour")])

            # The failover: the primary dies, the lagging replica takes its address.
            primary.kill()
            forwarder.switch(replica.port)

            blue = ["The user now likes blue"]
            stale: list[str] = []
            for name, c in (("b", b), ("a", a), ("b", b), ("a", a)):
                seen = await c.recall(user_id, question)
                if [i.memory.content for i in seen.items] != blue:
                    stale.append(f"{name} recall: {[i.memory.content for i in seen.items]}")
                if [m.content for m in seen.profile.memories] != blue:
                    stale.append(f"{name} recall profile: {seen.profile}")
                cached = (await c.get_profile(user_id)).profile
                if [m.content for m in cached.memories] != blue:
                    stale.append(f"{name} profile: {[m.content for m in cached.memories]}")
            assert stale == []

            # Changes go on through the new primary and reach the other replica.
            await b.write(user_id, [memory("The user now likes red", topic_key="colour")])
            for c in (a, b):
                seen = await c.recall(user_id, question)
                assert [i.memory.content for i in seen.items] == ["The user now likes red"]
                profile = await c.get_profile(user_id)
                assert [m.content for m in profile.profile.memories] == ["The user now likes red"]
            record("redis_failover_to_lagging_replica", stale_reads=len(stale), lost_writes=0)
        finally:
            for c in (a, b):
                await c.close()
            for r in replicas:
                await r.stop(grace_s=1)
            await to_primary.aclose()
            await to_replica.aclose()
            await forwarder.close()
