"""Forget (soft or hard; by ids, topic, selector, user or tenant) and Restore."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from recalld_server.domain.core.conversation import SessionCursor, SessionKey
from recalld_server.domain.core.errors import FailedPreconditionError, NotFoundError
from recalld_server.domain.core.model import (
    ForgetMode,
    ForgetTarget,
    Memory,
    MemoryFilter,
    Operation,
    Principal,
    Status,
)
from recalld_server.domain.core.ports import Backends
from recalld_server.domain.guards import authorization, validation
from recalld_server.domain.guards.session_rules import can_see, session_lock_key
from recalld_server.domain.memories.policy import Policy, user_lock_key
from recalld_server.domain.memories.reading import load_visible
from recalld_server.domain.memories.write_planner import StoredFacts, WritePlanner
from recalld_server.domain.memories.writing import read_holders
from recalld_server.domain.rules.lifecycle import refreshed_expiry
from recalld_server.domain.working_set.changes import Change, bump, scan
from recalld_server.domain.working_set.user_memories import UserMemories

SCAN_BATCH = 1000


class ForgetMemories:
    """Archives (SOFT) or deletes (HARD, from every store) the targeted memories."""

    def __init__(self, backends: Backends, memories: UserMemories) -> None:
        self._store = backends.store
        self._locks = backends.locks
        self._clock = backends.clock
        self._history = backends.history
        self._requests = backends.requests
        self._access = backends.access
        self._conversations = backends.conversations
        self._extractions = backends.extractions
        self._changes = memories.changes

    async def __call__(
        self,
        principal: Principal,
        user_id: str,
        target: ForgetTarget,
        mode: ForgetMode,
        dry_run: bool,
    ) -> list[str]:
        """The ids forgotten (or, with dry_run, that would be)."""
        validation.validate_forget(user_id, target)
        if target.whole_tenant:
            authorization.require_admin(principal, "forgetting a whole tenant")
        authorization.require_writer(principal)
        tenant = principal.tenant_id
        if target.whole_tenant:
            return await self._forget_tenant(principal, mode, dry_run)
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            if target.ids:
                unique_ids = list(dict.fromkeys(target.ids))
                found = {
                    m.id: m
                    for m in await self._store.get(tenant, unique_ids)
                    if authorization.visible(principal, user_id, m)
                }
                missing = [i for i in unique_ids if i not in found]
                if missing:
                    raise NotFoundError(missing[0])
                memories = [found[i] for i in unique_ids]
            else:
                memories = await scan(
                    self._store, _target_filter(principal, user_id, target), SCAN_BATCH
                )
            if dry_run:
                return [m.id for m in memories]
            await self._forget_memories(tenant, memories, mode)
            await self._forget_conversations(principal, user_id, target)
            # Deleting a memory deletes its history. The user-wide sweep (history of
            # memories deleted before, request records) is for callers who may see
            # every scope: a scoped key must not erase another agent's audit trail.
            unscoped = authorization.readable_scopes(principal) is None
            if mode is ForgetMode.HARD and target.all_of_user and unscoped:
                await self._history.delete_user(tenant, user_id)
                await self._requests.delete_user(tenant, user_id)
            await self._drop_statistics(tenant, {m.id for m in memories})
            return [m.id for m in memories]

    async def _drop_statistics(self, tenant: str, forgotten: set[str]) -> None:
        """Drops pending recall statistics of forgotten memories, keeping everyone else's.

        A flush writes statistics as a new version of the row it reads; none may
        be written for a memory forgotten after its recall.
        """
        pending = await self._access.drain(tenant)
        kept = {key: stats for key, stats in pending.items() if key[1] not in forgotten}
        if kept:
            await self._access.restore(kept)

    async def _forget_memories(self, tenant: str, memories: list[Memory], mode: ForgetMode) -> None:
        now = self._clock.now_ms()
        if mode is ForgetMode.HARD:
            await self._changes.delete(tenant, memories)
            return
        changes = [
            Change(m, bump(m, now, status=Status.ARCHIVED), Operation.FORGET)
            for m in memories
            if m.status is not Status.ARCHIVED
        ]
        for start in range(0, len(changes), SCAN_BATCH):
            await self._changes.save(tenant, changes[start : start + SCAN_BATCH], now)

    async def _forget_tenant(
        self, principal: Principal, mode: ForgetMode, dry_run: bool
    ) -> list[str]:
        tenant = principal.tenant_id
        memories = await scan(self._store, MemoryFilter(tenant, None), SCAN_BATCH)
        if dry_run:
            return [m.id for m in memories]
        by_user: dict[str, list[Memory]] = {}
        for memory in memories:
            by_user.setdefault(memory.user_id, []).append(memory)
        for user_id, owned in by_user.items():
            async with self._locks.hold(user_lock_key(tenant, user_id)):
                await self._forget_memories(tenant, owned, mode)
        if mode is ForgetMode.HARD:
            await self._history.delete_user(tenant, None)
            await self._requests.delete_user(tenant, None)
        await self._conversations.delete_user(tenant, None)
        await self._extractions.delete_user(tenant, None)
        await self._access.drain(tenant)
        return [m.id for m in memories]

    async def _forget_conversations(
        self, principal: Principal, user_id: str, target: ForgetTarget
    ) -> None:
        """Deletes the sessions a session or user target names (conversations have no archive).

        A scoped key deletes only the sessions of scopes it may use.
        """
        tenant = principal.tenant_id
        if target.session_id:
            key = SessionKey(tenant, user_id, target.session_id)
            async with self._locks.hold(session_lock_key(key)):
                session = await self._conversations.get(key)
                if session is not None and can_see(principal, session):
                    await self._conversations.delete(key)
                    await self._extractions.delete_session(key)
            return
        if not target.all_of_user:
            return
        if authorization.readable_scopes(principal) is None:
            await self._conversations.delete_user(tenant, user_id)
            await self._extractions.delete_user(tenant, user_id)
            return
        after: SessionCursor | None = None
        while True:
            batch = await self._conversations.page(tenant, user_id, after, SCAN_BATCH)
            for session in batch:
                if can_see(principal, session):
                    async with self._locks.hold(session_lock_key(session.key)):
                        await self._conversations.delete(session.key)
                        await self._extractions.delete_session(session.key)
            if len(batch) < SCAN_BATCH:
                return
            after = SessionCursor(batch[-1].created_at, batch[-1].key.session_id)


def _target_filter(principal: Principal, user_id: str, target: ForgetTarget) -> MemoryFilter:
    base = MemoryFilter(
        principal.tenant_id, user_id, scopes=authorization.readable_scopes(principal)
    )
    if target.topic_key:
        return dataclasses.replace(base, topic_keys=frozenset({target.topic_key}))
    if target.session_id:
        return dataclasses.replace(base, session_id=target.session_id)
    if target.selector is not None:
        s = target.selector
        return dataclasses.replace(
            base,
            types=s.types,
            tags=s.tags,
            session_id=s.session_id,
            occurred_after=s.occurred_after,
            occurred_before=s.occurred_before,
        )
    return base  # all_of_user


class RestoreMemories:
    """Brings archived memories back to active, unless their topic has a holder now."""

    def __init__(self, backends: Backends, memories: UserMemories, policy: Policy) -> None:
        self._store = backends.store
        self._locks = backends.locks
        self._clock = backends.clock
        self._changes = memories.changes
        self._policy = policy

    async def __call__(
        self, principal: Principal, user_id: str, ids: Sequence[str]
    ) -> list[Memory]:
        """The restored memories (FAILED_PRECONDITION if one is not archived)."""
        validation.validate_ids(user_id, ids, "ids", validation.MAX_FORGET_IDS)
        authorization.require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            memories = [
                await load_visible(self._store, principal, user_id, i) for i in dict.fromkeys(ids)
            ]
            now = self._clock.now_ms()
            for memory in memories:
                if memory.status is not Status.ARCHIVED:
                    raise FailedPreconditionError(f"memory {memory.id!r} is not archived")
            wanted = {(m.agent_scope, m.topic_key) for m in memories if m.topic_key}
            planner = WritePlanner(
                tenant,
                user_id,
                StoredFacts(holders=await read_holders(self._store, tenant, user_id, wanted, now)),
                self._policy.lifecycle,
            )
            restored_all = []
            for memory in memories:
                holder = planner.topic_holder(memory.agent_scope, memory.topic_key, now)
                if holder is not None:
                    raise FailedPreconditionError(
                        f"topic {memory.topic_key!r} already has the active memory {holder.id!r}"
                    )
                restored = bump(memory, now, status=Status.ACTIVE, last_accessed_at=now)
                restored = dataclasses.replace(
                    restored, expire_at=refreshed_expiry(restored, self._policy.lifecycle)
                )
                planner.batch.change(Change(memory, restored, Operation.RESTORE), now)
                restored_all.append(restored)
            await self._changes.commit(tenant, planner.batch)
            return restored_all
