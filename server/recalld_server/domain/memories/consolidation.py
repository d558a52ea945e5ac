"""Consolidation: the background tidying that keeps memories current.

Archives (or purges) expired memories, demotes unused P1 memories to P2,
merges near-duplicates into the oldest copy, reports memories that may
contradict a core memory (domain/rules/constraints.py; an optional judge decides the
pairs the offline rules cannot: domain/rules/judging.py), and writes batched access
statistics. It works one user at a time under that user's lock, in bounded
batches, so it is safe while traffic flows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

import numpy as np

from recalld_server.domain.core.errors import (
    FieldViolation,
    InvalidArgumentError,
    PermissionDeniedError,
)
from recalld_server.domain.core.model import (
    DAY_MS,
    PURGEABLE,
    ConsolidationReport,
    Memory,
    MemoryFilter,
    Operation,
    Principal,
    Status,
    Tier,
    Upkeep,
)
from recalld_server.domain.core.ports import Backends, FactJudge
from recalld_server.domain.guards import authorization
from recalld_server.domain.guards.validation import check_identifier
from recalld_server.domain.memories.policy import Policy, user_lock_key
from recalld_server.domain.rules.judging import JudgePolicy, VerdictMemory, Verdicts, judge_user
from recalld_server.domain.rules.lifecycle import (
    demoted_expiry,
    near_duplicate_groups,
    possible_contradictions,
    refreshed_expiry,
)
from recalld_server.domain.working_set.changes import Change, bump, scan
from recalld_server.domain.working_set.user_memories import UserMemories

log = logging.getLogger(__name__)

BATCH = 1000
# Users whose recall statistics one flush step writes together: one read and one
# write for all of them, under all their locks (taken in sorted order, so two
# flushes never deadlock and writers, which hold one lock, wait at most one step).
FLUSH_USERS = 64
MAX_MERGE_SCAN = 5000
"""Most active memories of one user compared pairwise for merging per run."""
REQUEST_RECORD_DAYS = 7
"""How long Write answers stay available for request_id retries."""
DEFAULT_CHANGE_WINDOW_MS = 2 * 3600 * 1000
"""Changes the periodic job looks back over for merges (twice the default hourly pass)."""


class Consolidator:
    """Runs consolidation for a tenant or one user, on demand or periodically."""

    def __init__(
        self,
        backends: Backends,
        memories: UserMemories,
        policy: Policy | None = None,
        flush_users: int = FLUSH_USERS,
        judge: FactJudge | None = None,
        judge_policy: JudgePolicy | None = None,
    ) -> None:
        self._flush_users = flush_users
        self._judge = judge
        self._judge_policy = judge_policy or JudgePolicy()
        self._verdicts = VerdictMemory(self._judge_policy.remembered)
        self._store = backends.store
        self._requests = backends.requests
        self._access = backends.access
        self._locks = backends.locks
        self._clock = backends.clock
        self._policy = policy or Policy()
        self._changes = memories.changes

    async def consolidate(
        self, principal: Principal, user_id: str, dry_run: bool, purge_expired: bool
    ) -> ConsolidationReport:
        """One run for a user, or the whole tenant when user_id is empty."""
        violations: list[FieldViolation] = []
        check_identifier(user_id, "user_id", required=False, violations=violations)
        if violations:
            raise InvalidArgumentError(violations)
        if not principal.may_write():
            raise PermissionDeniedError("this credential is read-only")
        if not user_id and principal.role != "admin":
            raise PermissionDeniedError("consolidating a whole tenant needs an admin key")
        return await self.run(
            principal.tenant_id,
            user_id or None,
            dry_run,
            purge_expired,
            authorization.readable_scopes(principal),
        )

    async def run(
        self,
        tenant_id: str,
        user_id: str | None,
        dry_run: bool = False,
        purge_expired: bool = False,
        scopes: frozenset[str] | None = None,
    ) -> ConsolidationReport:
        """Consolidates without permission checks (one user, or every user of a tenant).

        With `scopes` (a scoped caller's), only memories of those scopes are read,
        reported or changed; tenant-wide upkeep (statistics, request records) is
        left to unscoped callers and the periodic job. A tenant-wide run visits the
        users storage names as holding due memories (every user with an active one,
        since a merge may be due anywhere), not every stored row.
        """
        tenant_wide = scopes is None
        flushed = await self.flush_access_stats(tenant_id) if tenant_wide and not dry_run else 0
        if user_id:
            users = [user_id]
        else:
            due = await self._store.users_with_upkeep(
                self._upkeep(changed_since=0, tenant_id=tenant_id, scopes=scopes)
            )
            users = sorted(due.get(tenant_id, set()))
        report = await self._visit(tenant_id, users, dry_run, purge_expired, scopes)
        report.access_stats_flushed = flushed
        if not dry_run and user_id is None and tenant_wide:
            await self._drop_old_request_records()
        return report

    def _upkeep(
        self,
        changed_since: int | None,
        tenant_id: str | None = None,
        scopes: frozenset[str] | None = None,
    ) -> Upkeep:
        now = self._clock.now_ms()
        retention = self._policy.lifecycle.retention_days
        return Upkeep(
            now=now,
            unused_before=now - self._policy.lifecycle.demote_unused_days * DAY_MS,
            changed_since=changed_since,
            tenant_id=tenant_id,
            scopes=scopes,
            purge_before=now - int(retention * DAY_MS) if retention else 0,
        )

    async def _visit(
        self,
        tenant_id: str,
        users: list[str],
        dry_run: bool,
        purge_expired: bool,
        scopes: frozenset[str] | None,
    ) -> ConsolidationReport:
        report = ConsolidationReport()
        for user in users:
            verdicts = await self._ask_judge(tenant_id, user, scopes)
            async with self._locks.hold(user_lock_key(tenant_id, user)):
                await self._consolidate_user(
                    tenant_id, user, dry_run, purge_expired, scopes, report, verdicts
                )
        report.users_scanned = len(users)
        return report

    def _mergeable(self, tenant: str, user: str, scopes: frozenset[str] | None) -> MemoryFilter:
        return MemoryFilter(
            tenant,
            user,
            statuses=frozenset({Status.ACTIVE}),
            unexpired_at=self._clock.now_ms(),
            scopes=scopes,
        )

    async def _ask_judge(
        self, tenant: str, user: str, scopes: frozenset[str] | None
    ) -> Verdicts | None:
        """The judge's verdicts on the user's borderline pairs (None without a judge).

        Read and asked outside the user's lock; the verdicts name both contents,
        so a pair changed meanwhile is simply not acted on.
        """
        if self._judge is None:
            return None
        active = await self._store.find_with_vectors(
            self._mergeable(tenant, user, scopes), MAX_MERGE_SCAN
        )
        if len(active) < 2:
            return Verdicts()
        return await judge_user(
            self._judge,
            self._verdicts,
            [m for m, _ in active],
            np.stack([v for _, v in active]),
            self._policy.lifecycle,
            self._judge_policy,
        )

    async def _purge_retired(
        self,
        tenant: str,
        user: str,
        scopes: frozenset[str] | None,
        now: int,
        dry_run: bool,
        report: ConsolidationReport,
    ) -> None:
        """Purges superseded and archived memories last changed before the retention period.

        Only those statuses are read, so nothing live (active, draft, conflict) can
        be purged; the user's lock is held, so nothing changes them meanwhile.
        """
        cutoff = now - int(self._policy.lifecycle.retention_days * DAY_MS)
        retired = [
            m
            for m in await self._all(MemoryFilter(tenant, user, statuses=PURGEABLE, scopes=scopes))
            if m.updated_at < cutoff
        ]
        report.purged_ids.extend(m.id for m in retired)
        if retired and not dry_run:
            await self._changes.purge(tenant, retired, now)

    async def _drop_old_request_records(self) -> None:
        await self._requests.delete_older_than(self._clock.now_ms() - REQUEST_RECORD_DAYS * DAY_MS)

    async def _consolidate_user(
        self,
        tenant: str,
        user: str,
        dry_run: bool,
        purge: bool,
        scopes: frozenset[str] | None,
        report: ConsolidationReport,
        verdicts: Verdicts | None = None,
    ) -> None:
        now = self._clock.now_ms()
        policy = self._policy.lifecycle
        live = MemoryFilter(
            tenant, user, statuses=frozenset({Status.ACTIVE, Status.DRAFT}), scopes=scopes
        )

        expired = await self._all(dataclasses.replace(live, expired_at=now))
        report.expired_ids.extend(m.id for m in expired)
        if expired and not dry_run:
            if purge:
                await self._changes.delete(tenant, expired)
            else:
                await self._save(
                    tenant,
                    [
                        Change(m, bump(m, now, status=Status.ARCHIVED), Operation.CONSOLIDATE)
                        for m in expired
                    ],
                    now,
                )

        if policy.retention_days:
            await self._purge_retired(tenant, user, scopes, now, dry_run, report)

        unused_since = now - policy.demote_unused_days * DAY_MS
        stale = await self._all(
            MemoryFilter(
                tenant,
                user,
                statuses=frozenset({Status.ACTIVE}),
                tiers=frozenset({Tier.P1}),
                tier_unused_before=unused_since,
                unexpired_at=now,
                scopes=scopes,
            )
        )
        report.demoted_ids.extend(m.id for m in stale)
        if stale and not dry_run:
            demotions = []
            for memory in stale:
                demoted = bump(memory, now, tier=Tier.P2)
                demoted = dataclasses.replace(
                    demoted, expire_at=demoted_expiry(demoted, policy, now)
                )
                demotions.append(Change(memory, demoted, Operation.CONSOLIDATE))
            await self._save(tenant, demotions, now)

        active = await self._store.find_with_vectors(
            self._mergeable(tenant, user, scopes), MAX_MERGE_SCAN
        )
        report.memories_scanned += len(active)
        if len(active) < 2:
            return
        memories = [m for m, _ in active]
        vectors = np.stack([v for _, v in active])
        verdicts = verdicts or Verdicts()
        merges = near_duplicate_groups(memories, vectors, policy, verdicts.same)
        report.merged.extend((keep.id, gone.id, sim) for keep, gone, sim in merges)
        merged_ids = {gone.id for _, gone, _ in merges}
        keep_rows = [i for i, m in enumerate(memories) if m.id not in merged_ids]
        report.contradictions.extend(
            (core.id, other.id, sim, reason)
            for core, other, sim, reason in possible_contradictions(
                [memories[i] for i in keep_rows], vectors[keep_rows], verdicts.contradicts
            )
        )
        if merges and not dry_run:
            await self._merge(tenant, merges, now)

    async def _merge(
        self, tenant: str, merges: list[tuple[Memory, Memory, float]], now: int
    ) -> None:
        changes = []
        boosted: dict[str, Memory] = {}
        for keep, gone, _ in merges:
            changes.append(
                Change(
                    gone,
                    bump(
                        gone, now, status=Status.SUPERSEDED, valid_to=now, superseded_by_id=keep.id
                    ),
                    Operation.CONSOLIDATE,
                    keep.id,
                )
            )
            base = boosted.get(keep.id, keep)
            boosted[keep.id] = dataclasses.replace(
                base,
                importance=max(base.importance, gone.importance),
                tags=list(dict.fromkeys([*base.tags, *gone.tags])),
                access_count=base.access_count + gone.access_count,
                last_accessed_at=max(base.last_accessed_at, gone.last_accessed_at),
            )
        originals = {keep.id: keep for keep, _, _ in merges}
        for memory_id, merged in boosted.items():
            before = originals[memory_id]
            changes.append(Change(before, bump(merged, now), Operation.CONSOLIDATE))
        await self._save(tenant, changes, now)

    async def flush_access_stats(self, tenant_id: str | None = None) -> int:
        """Writes pending recall statistics: last access, count, and tier expiry.

        Statistics it could not write (storage or a lock failed, or the flush was
        stopped) go back to the tracker for the next flush. A write that failed
        after storage applied it counts those accesses twice: over-counting a use
        costs less than a memory expiring early for want of one.
        """
        unwritten = await self._access.drain(tenant_id)
        try:
            return await self._write_access_stats(unwritten)
        finally:
            if unwritten:
                await self._access.restore(unwritten)

    async def _write_access_stats(self, unwritten: dict[tuple[str, str], tuple[int, int]]) -> int:
        """Writes the stats, taking from `unwritten` what is written or has no memory left."""
        by_tenant: dict[str, dict[str, tuple[int, int]]] = {}
        for (tenant, memory_id), memory_stats in unwritten.items():
            by_tenant.setdefault(tenant, {})[memory_id] = memory_stats
        written = 0
        for tenant, stats in by_tenant.items():
            owners = {m.id: m.user_id for m in await self._store.get(tenant, sorted(stats))}
            for gone in stats.keys() - owners.keys():
                del unwritten[(tenant, gone)]  # deleted since it was recalled
            users = sorted(set(owners.values()))
            for start in range(0, len(users), self._flush_users):
                step = set(users[start : start + self._flush_users])
                async with contextlib.AsyncExitStack() as held:
                    for user in sorted(step):
                        await held.enter_async_context(
                            self._locks.hold(user_lock_key(tenant, user))
                        )
                    ids = sorted(i for i, user in owners.items() if user in step)
                    current = await self._store.get(tenant, ids)  # re-read under the locks
                    changes = []
                    for memory in current:
                        count, last = stats[memory.id]
                        touched = dataclasses.replace(
                            memory,
                            access_count=memory.access_count + count,
                            last_accessed_at=max(memory.last_accessed_at, last),
                        )
                        if memory.status is Status.ACTIVE:
                            touched = dataclasses.replace(
                                touched, expire_at=refreshed_expiry(touched, self._policy.lifecycle)
                            )
                        changes.append(Change(memory, touched, Operation.CONSOLIDATE))
                    # Statistics are not versions: no etag change, no history entry.
                    await self._changes.save(
                        tenant, changes, self._clock.now_ms(), record_history=False
                    )
                    for memory_id in ids:
                        del unwritten[(tenant, memory_id)]
                    written += len(changes)
        return written

    async def run_all(
        self, changed_within_ms: int = DEFAULT_CHANGE_WINDOW_MS
    ) -> dict[str, ConsolidationReport]:
        """The periodic job: every user with something due, in every tenant.

        Storage names the users holding expired memories, unused P1 memories, or
        memories changed within `changed_within_ms` (new near-duplicates to merge;
        the scheduler passes twice its interval, so one missed pass loses nothing).
        Users with nothing due are not read at all. Returns each visited tenant's report.
        """
        reports: dict[str, ConsolidationReport] = {}
        await self.flush_access_stats()
        now = self._clock.now_ms()
        due = await self._store.users_with_upkeep(
            self._upkeep(changed_since=now - changed_within_ms)
        )
        for tenant in sorted(due):
            report = reports[tenant] = await self._visit(
                tenant, sorted(due[tenant]), False, False, None
            )
            log.info(
                "consolidated tenant %s: %d users due, %d expired, %d demoted, %d merged",
                tenant,
                report.users_scanned,
                len(report.expired_ids),
                len(report.demoted_ids),
                len(report.merged),
            )
        await self._drop_old_request_records()
        return reports

    async def _all(self, memory_filter: MemoryFilter) -> list[Memory]:
        return await scan(self._store, memory_filter)

    async def _save(self, tenant: str, changes: list[Change], now: int) -> None:
        for start in range(0, len(changes), BATCH):
            await self._changes.save(tenant, changes[start : start + BATCH], now)
