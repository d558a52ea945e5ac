"""Read use cases: Get, History, List (paged) and GetProfile."""

from __future__ import annotations

from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError, NotFoundError
from recalld_server.domain.core.model import (
    HistoryEntry,
    Memory,
    MemoryFilter,
    MemoryType,
    Operation,
    Page,
    Principal,
    Status,
)
from recalld_server.domain.core.ports import Backends, VectorStore
from recalld_server.domain.core.recall_model import Profile
from recalld_server.domain.guards import authorization, paging, validation
from recalld_server.domain.working_set.profile import ProfileService


async def load_visible(
    store: VectorStore, principal: Principal, user_id: str, memory_id: str
) -> Memory:
    """One memory of the caller's tenant, the user and a scope it may use; else NOT_FOUND.

    NOT_FOUND (never PERMISSION_DENIED) for another tenant's or user's id, so ids
    reveal nothing about memories the caller may not see.
    """
    found = await store.get(principal.tenant_id, [memory_id])
    if not found or not authorization.visible(principal, user_id, found[0]):
        raise NotFoundError(memory_id)
    return found[0]


class ReadMemories:
    """Get, History, List and GetProfile."""

    def __init__(self, backends: Backends, profiles: ProfileService) -> None:
        self._store = backends.store
        self._history = backends.history
        self._profiles = profiles

    async def get(self, principal: Principal, user_id: str, memory_id: str) -> Memory:
        """One memory of this tenant and user, whatever its status."""
        validation.validate_one_id(user_id, memory_id, "id")
        return await load_visible(self._store, principal, user_id, memory_id)

    async def history(
        self, principal: Principal, user_id: str, memory_id: str
    ) -> list[HistoryEntry]:
        """Every version of a memory, oldest first."""
        validation.validate_one_id(user_id, memory_id, "id")
        try:
            await load_visible(self._store, principal, user_id, memory_id)
        except NotFoundError:
            # A purged memory's row is gone; its tombstone, if the caller may see
            # it, is all its history now.
            left = await self._history.versions(principal.tenant_id, memory_id)
            tombstones = [
                e
                for e in left
                if e.operation is Operation.PURGE
                and authorization.visible(principal, user_id, e.memory)
            ]
            if not tombstones:
                raise
            return tombstones
        # A memory moved between scopes keeps its versions; the caller sees those
        # from scopes it may read (the moves themselves show as a gap).
        return [
            entry
            for entry in await self._history.versions(principal.tenant_id, memory_id)
            if authorization.visible(principal, user_id, entry.memory)
        ]

    async def list_page(
        self,
        principal: Principal,
        user_id: str,
        page_size: int,
        page_token: str,
        statuses: frozenset[Status],
        types: frozenset[MemoryType],
    ) -> Page:
        """A page of the user's memories, newest first."""
        validation.validate_listing(user_id, page_size)
        effective_statuses = statuses or frozenset(set(Status) - {Status.ARCHIVED})
        memory_filter = MemoryFilter(
            tenant_id=principal.tenant_id,
            user_id=user_id,
            statuses=effective_statuses,
            types=types,
            scopes=authorization.readable_scopes(principal),
        )
        listing = paging.listing(user_id, effective_statuses, types)
        before_id = paging.decode_page_token(page_token, listing)
        size = page_size or paging.DEFAULT_PAGE_SIZE
        ids = await self._store.list_ids(memory_filter, before_id, size + 1)
        page_ids = ids[:size]
        by_id = {m.id: m for m in await self._store.get(principal.tenant_id, page_ids)}
        memories = [by_id[i] for i in page_ids if i in by_id]
        next_token = paging.encode_page_token(page_ids[-1], listing) if len(ids) > size else ""
        return Page(memories=memories, next_page_token=next_token)

    async def get_profile(
        self, principal: Principal, user_id: str, agent_scope: str
    ) -> tuple[Profile, list[str]]:
        """The user's profile for the caller's scope (and shared memories)."""
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        validation.check_identifier(
            agent_scope, "agent_scope", required=False, violations=violations
        )
        if violations:
            raise InvalidArgumentError(violations)
        authorization.require_scope(principal, agent_scope, "agent_scope")
        return await self._profiles.get(principal.tenant_id, user_id, frozenset({"", agent_scope}))
