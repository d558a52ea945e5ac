"""The Update use case: a field-masked change guarded by the memory's etag."""

from __future__ import annotations

import dataclasses
from typing import Any

from recalld_server.domain.core.errors import (
    EtagMismatchError,
    InvalidArgumentError,
    TextRefusedError,
)
from recalld_server.domain.core.model import Memory, MemoryPatch, Operation, Principal, Tier
from recalld_server.domain.core.ports import Backends
from recalld_server.domain.core.sensitive_data import Finding
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.guards import authorization, validation
from recalld_server.domain.memories.policy import Policy, user_lock_key
from recalld_server.domain.memories.reading import load_visible
from recalld_server.domain.rules.lifecycle import LifecyclePolicy, refreshed_expiry
from recalld_server.domain.sensitive.guard import SensitiveDataGuard
from recalld_server.domain.working_set.changes import Change, bump
from recalld_server.domain.working_set.user_memories import UserMemories


def apply_patch(
    current: Memory, patch: MemoryPatch, now: int, model_id: str, policy: LifecyclePolicy
) -> Memory:
    """The memory after the patch: a new version; a tier expiry restarts unless explicit."""
    changes: dict[str, Any] = {path: getattr(patch, path) for path in patch.paths}
    if "tags" in changes:
        changes["tags"] = list(patch.tags)
    if "metadata" in changes:
        changes["metadata"] = dict(patch.metadata)
    if "tier" in changes:
        changes["tier"] = patch.tier or Tier.P1
    if "occurred_at" in changes and not patch.occurred_at:
        changes["occurred_at"] = current.created_at
    if "expire_at" in changes:
        changes["expire_explicit"] = bool(patch.expire_at)
    if "content" in changes:
        changes["content_hash"] = content_hash(patch.content)
        changes["embedding_model"] = model_id
    updated = bump(current, now, **changes)
    if not updated.expire_explicit:
        updated = dataclasses.replace(updated, expire_at=refreshed_expiry(updated, policy))
    return updated


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateResult:
    """The memory after an update, and the sensitive values masked or kept in the patch."""

    memory: Memory
    sensitive_data: tuple[Finding, ...] = ()


def screen_patch(
    guard: SensitiveDataGuard, tenant_id: str, patch: MemoryPatch
) -> tuple[MemoryPatch, tuple[Finding, ...]]:
    """The patch as it will be stored (content and metadata masked), and the findings.

    Raises:
        InvalidArgumentError: the patch holds a category the tenant's policy rejects.
    """
    screening = guard.begin(tenant_id)
    changes: dict[str, Any] = {}
    if "content" in patch.paths:
        changes["content"] = screening.text("memory.content", patch.content)
    if "metadata" in patch.paths:
        changes["metadata"] = screening.metadata("memory.metadata", patch.metadata)
    findings = screening.finish()
    return (dataclasses.replace(patch, **changes) if findings else patch), findings


class UpdateMemory:
    """Applies a field-masked change under the user's lock; a stale etag is refused."""

    def __init__(
        self,
        backends: Backends,
        memories: UserMemories,
        policy: Policy,
        guard: SensitiveDataGuard,
    ) -> None:
        self._store = backends.store
        self._embedder = backends.embedder
        self._locks = backends.locks
        self._clock = backends.clock
        self._changes = memories.changes
        self._policy = policy
        self._guard = guard

    async def __call__(
        self, principal: Principal, user_id: str, memory_id: str, etag: str, patch: MemoryPatch
    ) -> UpdateResult:
        """The updated memory (ABORTED on a stale etag, NOT_FOUND for others' ids)."""
        validation.validate_patch(user_id, memory_id, patch)
        authorization.require_writer(principal)
        if "agent_scope" in patch.paths:
            authorization.require_scope(principal, patch.agent_scope, "memory.agent_scope")
        tenant = principal.tenant_id
        patch, findings = screen_patch(self._guard, tenant, patch)
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            current = await load_visible(self._store, principal, user_id, memory_id)
            if etag and etag != current.etag:
                raise EtagMismatchError(memory_id, etag, current.etag)
            now = self._clock.now_ms()
            updated = apply_patch(
                current, patch, now, self._embedder.model_id, self._policy.lifecycle
            )
            vector = None
            if updated.content_hash != current.content_hash:
                try:
                    vector = (await self._embedder.embed([updated.content]))[0]
                except TextRefusedError as error:
                    raise InvalidArgumentError.single("memory.content", error.description) from None
            await self._changes.save(
                tenant, [Change(current, updated, Operation.UPDATE, vector=vector)], now
            )
            return UpdateResult(updated, findings)
