"""Tier expiry and demotion over simulated months: the domain with a manual clock,
against a real Milvus Lite store and the in-memory adapter, with the real model."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from recalld_server.domain.core.errors import NotFoundError
from recalld_server.domain.core.model import (
    DAY_MS,
    ForgetMode,
    ForgetTarget,
    MemoryType,
    NewMemory,
    Operation,
    Principal,
    Status,
    Tier,
)
from recalld_server.domain.core.ports import Backends, VectorStore
from recalld_server.domain.core.recall_model import RecallQuery
from recalld_server.domain.memories.consolidation import FLUSH_USERS, Consolidator
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.local import LocalAccessTracker, LocalGenerations, LocalLockManager
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from recalld_server.storage.profile_cache import LocalProfileCache
from tests.integration.domain.stores import BACKENDS, open_stores

T0 = 1_800_000_000_000


@dataclasses.dataclass
class ManualClock:
    now: int = T0

    def now_ms(self) -> int:
        return self.now


@dataclasses.dataclass
class World:
    service: MemoryService
    consolidator: Consolidator
    clock: ManualClock
    principal: Principal
    store: VectorStore
    access: LocalAccessTracker
    backends: Backends
    memories: UserMemories


@pytest.fixture(scope="module", params=BACKENDS)
async def world(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    embedder: MicroBatchingEmbedder,
) -> AsyncIterator[World]:
    """The same rules on both adapters of the storage ports."""
    store, history, requests = await open_stores(
        request.param, tmp_path_factory.mktemp("time"), embedder
    )
    clock, locks, access = ManualClock(), LocalLockManager(), LocalAccessTracker()
    cache = LocalProfileCache()
    analyzer = JiebaAnalyzer()
    backends = Backends(
        store,
        embedder,
        locks,
        clock,
        history,
        requests,
        access,
        cache,
        LocalGenerations(),
        analyzer,
        InMemoryConversations(),
        InMemoryExtractionQueue(),
    )
    profiles = ProfileService(store, cache, clock)
    memories = UserMemories(backends, profiles.invalidate)
    service = MemoryService(backends, profiles, memories)
    consolidator = Consolidator(backends, memories)
    yield World(
        service,
        consolidator,
        clock,
        Principal("time-tenant", role="admin"),
        store,
        access,
        backends,
        memories,
    )
    await store.close()


async def _ids(world: World, user: str, query: str) -> list[str]:
    result = await world.service.recall(
        world.principal, RecallQuery(user_id=user, query=query, min_score=-1)
    )
    return [i.memory.id for i in result.items]


async def test_use_extends_tier_expiry_and_disuse_expires(world: World) -> None:
    world.clock.now = T0
    used, unused = await world.service.write(
        world.principal,
        "u-expiry",
        [
            NewMemory("The user plays badminton on Sundays", MemoryType.FACT, tier=Tier.P1),
            NewMemory("The user is learning the cello", MemoryType.FACT, tier=Tier.P1),
        ],
    )
    assert used.memory.expire_at == T0 + 90 * DAY_MS
    world.clock.now = T0 + 60 * DAY_MS
    assert used.memory.id in await _ids(world, "u-expiry", "badminton")
    world.clock.now = T0 + 61 * DAY_MS
    # Recall above counted a use of both; forget the cello's use to let it lapse.
    pending = await world.access.drain("time-tenant")
    await world.access.record("time-tenant", [used.memory.id], T0 + 60 * DAY_MS)
    assert ("time-tenant", unused.memory.id) in pending
    assert await world.consolidator.flush_access_stats() == 1
    world.clock.now = T0 + 120 * DAY_MS
    recalled = await _ids(world, "u-expiry", "badminton cello")
    assert used.memory.id in recalled, "used at day 60: expires at day 150"
    assert unused.memory.id not in recalled, "never used: expired at day 90, before cleanup"
    report = await world.consolidator.run("time-tenant", "u-expiry")
    assert report.expired_ids == [unused.memory.id]
    [archived] = await world.store.get("time-tenant", [unused.memory.id])
    assert archived.status is Status.ARCHIVED


async def test_unused_p1_with_explicit_expiry_is_demoted(world: World) -> None:
    world.clock.now = T0
    [result] = await world.service.write(
        world.principal,
        "u-demote",
        [
            NewMemory(
                "The user's passport expires in 2031",
                MemoryType.FACT,
                tier=Tier.P1,
                expire_at=T0 + 400 * DAY_MS,
            )
        ],
    )
    world.clock.now = T0 + 61 * DAY_MS
    report = await world.consolidator.run("time-tenant", "u-demote")
    assert report.demoted_ids == [result.memory.id]
    [demoted] = await world.store.get("time-tenant", [result.memory.id])
    assert demoted.tier is Tier.P2 and demoted.expire_at == T0 + 400 * DAY_MS
    assert (await world.consolidator.run("time-tenant", "u-demote")).demoted_ids == []


async def test_p0_never_expires(world: World) -> None:
    world.clock.now = T0
    [core] = await world.service.write(
        world.principal,
        "u-core",
        [NewMemory("The user's blood type is O", MemoryType.FACT, tier=Tier.P0)],
    )
    world.clock.now = T0 + 3650 * DAY_MS
    assert core.memory.id in await _ids(world, "u-core", "blood type")
    assert (await world.consolidator.run("time-tenant", "u-core")).expired_ids == []


async def test_flush_writes_many_users_statistics_in_steps(world: World) -> None:
    world.clock.now = T0
    users = [f"u-flush-{i:03d}" for i in range(FLUSH_USERS + 6)]  # two steps
    written = {}
    for user in users:
        [result] = await world.service.write(
            world.principal, user, [NewMemory(f"{user} collects stamps", MemoryType.FACT)]
        )
        written[user] = result.memory
    await world.access.drain("time-tenant")
    used_at = T0 + 5 * DAY_MS
    for user in users:
        await world.access.record("time-tenant", [written[user].id], used_at)
    await world.access.record("time-tenant", [written[users[0]].id], used_at + 1)

    assert await world.consolidator.flush_access_stats("time-tenant") == len(users)

    stored = {
        m.id: m for m in await world.store.get("time-tenant", [m.id for m in written.values()])
    }
    for user in users:
        memory = stored[written[user].id]
        assert memory.access_count == (2 if user == users[0] else 1)
        assert memory.last_accessed_at == (used_at + 1 if user == users[0] else used_at)
        assert memory.expire_at == memory.last_accessed_at + 90 * DAY_MS
        assert memory.version == written[user].version, "statistics are not versions"


async def test_the_periodic_job_visits_only_users_with_something_due(world: World) -> None:
    tenant = Principal("upkeep-tenant", role="admin")
    world.clock.now = T0
    await world.service.write(
        tenant, "quiet", [NewMemory("The user's blood type is A", MemoryType.FACT, tier=Tier.P0)]
    )
    await world.service.write(
        tenant, "steady", [NewMemory("The user's cat is called Miso", MemoryType.FACT)]
    )
    [lapsing] = await world.service.write(
        tenant,
        "lapsing",
        [NewMemory("The user is in Lisbon this week", MemoryType.STATE, expire_at=T0 + DAY_MS)],
    )
    world.clock.now = T0 + 30 * DAY_MS - 3_600_000
    await world.service.write(
        tenant, "fresh", [NewMemory("The user started running", MemoryType.FACT)]
    )
    world.clock.now = T0 + 30 * DAY_MS

    reports = await world.consolidator.run_all(changed_within_ms=2 * 3_600_000)

    report = reports["upkeep-tenant"]
    # lapsing (expired) and fresh (changed within the window); not quiet (P0, old) or
    # steady (P1, used 30 days ago: 60 days short of demotion).
    assert report.users_scanned == 2
    assert report.expired_ids == [lapsing.memory.id]
    [archived] = await world.store.get("upkeep-tenant", [lapsing.memory.id])
    assert archived.status is Status.ARCHIVED
    # Nothing is due any more but what changed in the window (the archive itself).
    again = await world.consolidator.run_all(changed_within_ms=2 * 3_600_000)
    assert again["upkeep-tenant"].expired_ids == []
    world.clock.now = T0 + 31 * DAY_MS
    assert "upkeep-tenant" not in await world.consolidator.run_all(changed_within_ms=3_600_000)


async def test_over_120_days_a_p1_read_weekly_stays_and_an_unread_one_is_demoted_then_expires(
    world: World,
) -> None:
    world.clock.now = T0
    user = "u-120-days"
    read, unread = await world.service.write(
        world.principal,
        user,
        [
            NewMemory("The user's bike is a green Brompton", MemoryType.FACT, tier=Tier.P1),
            NewMemory("The user once visited Tromsø in winter", MemoryType.EVENT, tier=Tier.P1),
        ],
    )
    demoted_on = expired_on = None
    for day in range(1, 121):
        world.clock.now = T0 + day * DAY_MS
        if day % 7 == 0:  # the agent asks about the bike every week
            answer = await world.service.recall(
                world.principal, RecallQuery(user_id=user, query="Which bike?", top_k=1)
            )
            assert [i.memory.id for i in answer.items] == [read.memory.id], day
        await world.consolidator.flush_access_stats()
        report = await world.consolidator.run("time-tenant", user)  # the daily job
        if unread.memory.id in report.demoted_ids:
            demoted_on = day
        if unread.memory.id in report.expired_ids:
            expired_on = day
        [kept] = await world.store.get("time-tenant", [read.memory.id])
        assert (kept.tier, kept.status) == (Tier.P1, Status.ACTIVE), day
    # The first daily run once more than 60 days have passed, before P1's 90-day expiry.
    assert demoted_on == 61
    assert expired_on == demoted_on + 30, "then expired as a P2, 30 days after the demotion"
    [gone] = await world.store.get("time-tenant", [unread.memory.id])
    assert (gone.tier, gone.status) == (Tier.P2, Status.ARCHIVED)


async def test_retired_memories_are_purged_after_the_retention_period_leaving_a_tombstone(
    world: World,
) -> None:
    world.clock.now = T0
    user = "u-retention"
    old, core, draft = await world.service.write(
        world.principal,
        user,
        [
            NewMemory("The user drives a blue Golf", MemoryType.STATE, topic_key="car"),
            NewMemory("The user is allergic to penicillin", MemoryType.FACT, tier=Tier.P0),
            NewMemory("The user might move to Oslo", MemoryType.FACT, confidence=0.2),
        ],
    )
    assert draft.memory.status is Status.DRAFT
    world.clock.now = T0 + DAY_MS
    [new] = await world.service.write(
        world.principal,
        user,
        [NewMemory("The user drives a red Tesla", MemoryType.STATE, topic_key="car")],
    )
    assert new.related_id == old.memory.id  # the Golf is superseded on day 1
    [forgotten] = await world.service.write(
        world.principal, user, [NewMemory("The user's gym is FitOne", MemoryType.FACT)]
    )
    await world.service.forget(
        world.principal, user, ForgetTarget(ids=(forgotten.memory.id,)), ForgetMode.SOFT, False
    )
    live = [core.memory.id, draft.memory.id, new.memory.id]

    world.clock.now = T0 + 30 * DAY_MS  # 29 days after retiring: kept
    assert (await world.consolidator.run("time-tenant", user)).purged_ids == []
    world.clock.now = T0 + 31 * DAY_MS + 1
    dry = await world.consolidator.run("time-tenant", user, dry_run=True)
    assert sorted(dry.purged_ids) == sorted([old.memory.id, forgotten.memory.id])
    assert len(await world.store.get("time-tenant", [old.memory.id])) == 1, "dry run: kept"
    report = await world.consolidator.run("time-tenant", user)
    assert sorted(report.purged_ids) == sorted([old.memory.id, forgotten.memory.id])

    assert await world.store.get("time-tenant", [old.memory.id, forgotten.memory.id]) == []
    assert sorted(m.id for m in await world.store.get("time-tenant", live)) == sorted(live)
    for purged in (old, forgotten):
        [entry] = await world.service.history(world.principal, user, purged.memory.id)
        assert entry.operation is Operation.PURGE and entry.memory.content == ""
        assert entry.memory.id == purged.memory.id and entry.changed_at == world.clock.now
    assert entry.memory.status is Status.ARCHIVED
    # Another user of the tenant cannot read the tombstone either.
    with pytest.raises(NotFoundError):
        await world.service.history(world.principal, "someone-else", old.memory.id)
    # The periodic job finds nothing more to purge, and nothing live was touched.
    assert (await world.consolidator.run("time-tenant", user)).purged_ids == []
    assert sorted(m.id for m in await world.store.get("time-tenant", live)) == sorted(live)


async def test_a_retention_of_zero_keeps_retired_memories_forever(world: World) -> None:
    keeper = Consolidator(
        world.backends,
        world.memories,
        Policy(lifecycle=LifecyclePolicy(retention_days=0)),
    )
    world.clock.now = T0
    user = "u-keep-forever"
    paper = "newspaper"
    [first] = await world.service.write(
        world.principal,
        user,
        [NewMemory("The user reads Le Monde", MemoryType.FACT, topic_key=paper)],
    )
    await world.service.write(
        world.principal,
        user,
        [NewMemory("The user reads El País", MemoryType.FACT, topic_key=paper)],
    )
    world.clock.now = T0 + 3650 * DAY_MS
    assert (await keeper.run("time-tenant", user)).purged_ids == []
    [kept] = await world.store.get("time-tenant", [first.memory.id])
    assert kept.status is Status.SUPERSEDED


async def test_decay_by_use_reads_the_flushed_statistics_and_spares_core_memories(
    world: World,
) -> None:
    world.clock.now = T0
    user = "u-use-decay"
    share = RecallPolicy().use_share
    used, unused, core = await world.service.write(
        world.principal,
        user,
        [
            NewMemory("The user's running shoes are size 43", MemoryType.FACT, tier=Tier.P1),
            NewMemory("The user's hiking boots are size 44", MemoryType.FACT, tier=Tier.P1),
            NewMemory("The user's dress shoes are size 42", MemoryType.FACT, tier=Tier.P0),
        ],
    )
    for day in (7, 14, 21, 28):
        world.clock.now = T0 + day * DAY_MS
        await world.service.recall(
            world.principal, RecallQuery(user_id=user, query="running shoes size", top_k=1)
        )
        await world.consolidator.flush_access_stats()
    world.clock.now = T0 + 30 * DAY_MS
    answer = await world.service.recall(
        world.principal, RecallQuery(user_id=user, query="shoe size", top_k=3, min_score=-1)
    )
    factors = {i.memory.id: i.breakdown.use_decay for i in answer.items}
    # Read two days ago; never read, so thirty days since it was written; core.
    assert factors[used.memory.id] == pytest.approx(1 - share + share * 0.95**2)
    assert factors[unused.memory.id] == pytest.approx(1 - share + share * 0.95**30)
    assert factors[core.memory.id] == 1.0
    for item in answer.items:
        b = item.breakdown
        assert item.score == pytest.approx(
            b.fused * b.decay * b.use_decay * b.importance_weight, rel=1e-6
        )
