"""Confirm (drafts), ListConflicts and ResolveConflict: a person's part in the rules."""

from __future__ import annotations

from collections.abc import Sequence

from recalld_server.domain.core.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
)
from recalld_server.domain.core.model import (
    Conflict,
    Memory,
    MemoryFilter,
    Operation,
    Principal,
    Resolution,
    Status,
    Tier,
    WriteResult,
)
from recalld_server.domain.core.ports import Backends
from recalld_server.domain.guards import authorization, paging, validation
from recalld_server.domain.memories.policy import Policy, user_lock_key
from recalld_server.domain.memories.reading import load_visible
from recalld_server.domain.memories.write_planner import StoredFacts, WritePlanner
from recalld_server.domain.memories.writing import read_holders
from recalld_server.domain.working_set.changes import Change, bump
from recalld_server.domain.working_set.user_memories import UserMemories


class Conflicts:
    """Drafts confirmed, conflicts listed and resolved, under the topic rules."""

    def __init__(self, backends: Backends, memories: UserMemories, policy: Policy) -> None:
        self._store = backends.store
        self._locks = backends.locks
        self._clock = backends.clock
        self._changes = memories.changes
        self._policy = policy

    async def confirm(
        self, principal: Principal, user_id: str, ids: Sequence[str]
    ) -> list[WriteResult]:
        """Promotes drafts to active under the topic rules."""
        validation.validate_ids(user_id, ids, "ids", validation.MAX_FORGET_IDS)
        authorization.require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            drafts = [
                await load_visible(self._store, principal, user_id, i) for i in dict.fromkeys(ids)
            ]
            for draft in drafts:
                if draft.status is not Status.DRAFT:
                    raise FailedPreconditionError(f"memory {draft.id!r} is not a draft")
            planner = await self._planner(
                tenant, user_id, {(d.agent_scope, d.topic_key) for d in drafts if d.topic_key}
            )
            results = []
            for draft in drafts:
                now = self._clock.now_ms()
                promoted, outcome, related = planner.activate(bump(draft, now), now)
                planner.batch.change(Change(draft, promoted, Operation.CONFIRM, related), now)
                results.append(WriteResult(promoted, outcome, related))
            await self._changes.commit(tenant, planner.batch)
            return results

    async def _planner(
        self, tenant: str, user_id: str, topics: set[tuple[str, str]]
    ) -> WritePlanner:
        holders = await read_holders(self._store, tenant, user_id, topics, self._clock.now_ms())
        return WritePlanner(tenant, user_id, StoredFacts(holders=holders), self._policy.lifecycle)

    async def list_conflicts(
        self, principal: Principal, user_id: str, page_size: int, page_token: str
    ) -> tuple[list[Conflict], str]:
        """Parked conflicts (of one user, or the tenant), oldest first."""
        validation.validate_listing(user_id, page_size, user_required=False)
        listing = paging.listing(user_id, frozenset({Status.CONFLICT}), frozenset())
        after = paging.decode_page_token(page_token, listing)
        size = page_size or paging.DEFAULT_PAGE_SIZE
        found = await self._store.find(
            MemoryFilter(
                principal.tenant_id,
                user_id or None,
                statuses=frozenset({Status.CONFLICT}),
                scopes=authorization.readable_scopes(principal),
                after_id=after,
            ),
            size + 1,
        )
        page = found[:size]
        existing = {
            m.id: m
            for m in await self._store.get(
                principal.tenant_id, sorted({c.supersedes_id for c in page if c.supersedes_id})
            )
        }
        # The memory a conflict would replace may have moved to a scope the caller
        # may not read since: then the conflict is listed without it.
        conflicts = [
            Conflict(c, _visible_or_none(principal, c.user_id, existing.get(c.supersedes_id)))
            for c in page
        ]
        token = paging.encode_page_token(page[-1].id, listing) if len(found) > size else ""
        return conflicts, token

    async def resolve_conflict(
        self, principal: Principal, user_id: str, conflict_id: str, resolution: Resolution | None
    ) -> Conflict:
        """Applies a person's decision to a parked conflict."""
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        validation.check_memory_id(conflict_id, "conflict_id", violations)
        if resolution is None:
            violations.append(FieldViolation("resolution", "is required"))
        if violations:
            raise InvalidArgumentError(violations)
        authorization.require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            proposed = await load_visible(self._store, principal, user_id, conflict_id)
            if proposed.status is not Status.CONFLICT:
                raise FailedPreconditionError(f"memory {conflict_id!r} is not a conflict")
            now = self._clock.now_ms()
            topic = (proposed.agent_scope, proposed.topic_key)
            planner = await self._planner(tenant, user_id, {topic} if proposed.topic_key else set())
            holder = planner.topic_holder(proposed.agent_scope, proposed.topic_key, now)
            if resolution is Resolution.KEEP_EXISTING:
                after = bump(proposed, now, status=Status.ARCHIVED)
            elif resolution is Resolution.KEEP_BOTH:
                after = bump(proposed, now, status=Status.ACTIVE, topic_key="", supersedes_id="")
            else:
                after = bump(
                    proposed,
                    now,
                    status=Status.ACTIVE,
                    tier=Tier.P0,
                    expire_at=0,
                    expire_explicit=False,
                    supersedes_id=holder.id if holder else "",
                )
                if holder is not None:
                    planner.supersede(holder, proposed.id, now)
            planner.batch.change(
                Change(proposed, after, Operation.RESOLVE, holder.id if holder else ""), now
            )
            await self._changes.commit(tenant, planner.batch)
            return Conflict(after, planner.batch.current(holder) if holder else None)


def _visible_or_none(principal: Principal, user_id: str, memory: Memory | None) -> Memory | None:
    if memory is None or not authorization.visible(principal, user_id, memory):
        return None
    return memory
