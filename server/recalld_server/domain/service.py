"""Use cases: write, recall, read, update, forget, restore, confirm, conflicts, history.

The service holds the rules (with `lifecycle` for the pure policy); storage,
history, idempotency records and the embedding model come in through ports.
Every method takes the caller's Principal, and every storage call it makes is
confined to that principal's tenant and the named user. Every change to a
user's memories happens under that user's lock, so rules that read and then
write (duplicates, supersede, etags) cannot interleave.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from recalld_server.domain import validation
from recalld_server.domain.changes import Batch, Change, bump, scan
from recalld_server.domain.errors import (
    BackendUnavailableError,
    EtagMismatchError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RequestIdReusedError,
)
from recalld_server.domain.ids import new_id
from recalld_server.domain.lifecycle import (
    Action,
    Decision,
    LifecyclePolicy,
    WriteFacts,
    decide_topic,
    decide_write,
    refreshed_expiry,
)
from recalld_server.domain.model import (
    UPDATABLE_FIELDS,
    Conflict,
    ForgetMode,
    ForgetTarget,
    HistoryEntry,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Operation,
    Page,
    Principal,
    Profile,
    RecallQuery,
    RecallResult,
    Resolution,
    Status,
    StoredWrite,
    Tier,
    WriteOutcome,
    WriteResult,
)
from recalld_server.domain.ports import Backends, Vector, Vectors
from recalld_server.domain.profile import ProfileService
from recalld_server.domain.recall import RecallPipeline, RecallPolicy
from recalld_server.domain.stages import NullStages, Stages
from recalld_server.domain.text import content_hash
from recalld_server.domain.user_memories import UserMemories
from recalld_server.domain.user_set import UserSet

SCAN_BATCH = 1000
LIVE = frozenset({Status.ACTIVE, Status.DRAFT})


@dataclasses.dataclass(frozen=True, slots=True)
class Policy:
    """Tunable rules, with the documented defaults.

    Attributes:
        lifecycle: Duplicate, draft, tier and consolidation thresholds.
        recall: Ranking, fusion and relevance knobs of the recall pipeline.
        default_importance: Importance of a memory written without one.
    """

    lifecycle: LifecyclePolicy = dataclasses.field(default_factory=LifecyclePolicy)
    recall: RecallPolicy = dataclasses.field(default_factory=RecallPolicy)
    default_importance: float = 0.5


def user_lock_key(tenant_id: str, user_id: str) -> str:
    """The lock serialising changes to one user's memories."""
    return json.dumps(["user", tenant_id, user_id], ensure_ascii=False)


class MemoryService:
    """The memory use cases, independent of transport and storage engine."""

    def __init__(
        self,
        backends: Backends,
        profiles: ProfileService,
        memories: UserMemories,
        stages: Stages | None = None,
        policy: Policy | None = None,
        write_stages: Stages | None = None,
    ) -> None:
        self._store = backends.store
        self._embedder = backends.embedder
        self._locks = backends.locks
        self._clock = backends.clock
        self._history = backends.history
        self._requests = backends.requests
        self._access = backends.access
        self._profiles = profiles
        self._write_stages = write_stages or NullStages()
        self._policy = policy or Policy()
        self._changes = memories.changes
        self._working_set = memories.working_set
        self._pipeline = RecallPipeline(
            backends.store,
            backends.embedder,
            profiles,
            backends.access,
            stages or NullStages(),
            backends.clock,
            memories.working_set,
            self._policy.recall,
        )

    @property
    def dimension(self) -> int:
        """Dimension of stored vectors (and of caller-supplied query vectors)."""
        return self._embedder.dimension

    # -- write ---------------------------------------------------------------

    async def write(
        self,
        principal: Principal,
        user_id: str,
        memories: Sequence[NewMemory],
        request_id: str = "",
    ) -> list[WriteResult]:
        """Stores a batch of memories for one user and says what happened to each."""
        validation.validate_write(user_id, memories, request_id)
        self._require_writer(principal)
        for i, memory in enumerate(memories):
            self._require_scope(principal, memory.agent_scope, f"memories[{i}].agent_scope")
        fingerprint = _write_fingerprint(user_id, memories)
        if request_id:
            replay = await self._replay(principal, user_id, request_id, fingerprint)
            if replay is not None:
                return replay
        with self._write_stages.stage("embed") as record:
            vectors = await self._embedder.embed([m.content for m in memories])
            record.set("memories", len(memories))
        tenant = principal.tenant_id
        async with contextlib.AsyncExitStack() as held:
            with self._write_stages.stage("lock_wait"):
                await held.enter_async_context(self._locks.hold(user_lock_key(tenant, user_id)))
            if request_id:  # a concurrent retry may have finished while we embedded
                replay = await self._replay(principal, user_id, request_id, fingerprint)
                if replay is not None:
                    return replay
            batch = Batch()
            with self._write_stages.stage("decide") as record:
                user_set = await self._user_set(tenant, user_id)
                record.set("source", "storage" if user_set is None else "working_set")
                stored = (
                    _facts_from_set(user_set, memories, vectors, self._clock.now_ms())
                    if user_set is not None
                    else await self._prefetch(tenant, user_id, memories, vectors)
                )
                results = [
                    await self._write_one(batch, stored, i, tenant, user_id, new, vector)
                    for i, (new, vector) in enumerate(zip(memories, vectors, strict=True))
                ]
                for outcome in WriteOutcome:
                    record.set(outcome.name.lower(), sum(r.outcome is outcome for r in results))
            with self._write_stages.stage("store") as record:
                await self._changes.commit(tenant, batch)
                record.set("new", len(batch.new))
                record.set("changed", len(batch.changed))
            if request_id:
                await self._requests.put(
                    StoredWrite(
                        tenant,
                        user_id,
                        request_id,
                        fingerprint,
                        [(r.memory.id, r.outcome, r.related_id) for r in results],
                        self._clock.now_ms(),
                    )
                )
        return results

    async def _replay(
        self, principal: Principal, user_id: str, request_id: str, fingerprint: str
    ) -> list[WriteResult] | None:
        stored = await self._requests.get(principal.tenant_id, request_id)
        if stored is None:
            return None
        if stored.fingerprint != fingerprint or stored.user_id != user_id:
            raise RequestIdReusedError(
                f"request_id {request_id!r} was already used for a different Write"
            )
        current = {
            m.id: m
            for m in await self._store.get(
                principal.tenant_id, [memory_id for memory_id, _, _ in stored.results]
            )
        }
        replayed = []
        for memory_id, outcome, related_id in stored.results:
            memory = current.get(memory_id)
            if memory is None:  # hard-forgotten since: report the id, not the content
                memory = Memory(
                    id=memory_id,
                    tenant_id=principal.tenant_id,
                    user_id=user_id,
                    content="",
                    type=MemoryType.FACT,
                    status=Status.ARCHIVED,
                )
            replayed.append(WriteResult(memory, outcome, related_id))
        return replayed

    async def _user_set(self, tenant: str, user_id: str) -> UserSet | None:
        """The user's working set for the write rules (None: read storage instead)."""
        try:
            return await self._working_set.open(tenant, user_id)
        except BackendUnavailableError:
            return None

    async def _prefetch(
        self, tenant: str, user_id: str, memories: Sequence[NewMemory], vectors: Vectors
    ) -> _Stored:
        """What storage holds that the request's rules need, read once for the request.

        Nothing of the request is stored until it commits, so these reads stay valid for
        the whole request; what the request itself changes is looked up in its Batch.
        """
        now = self._clock.now_ms()
        scopes = frozenset(m.agent_scope for m in memories)
        live = MemoryFilter(tenant, user_id, statuses=LIVE, scopes=scopes, unexpired_at=now)
        same = await self._store.find(
            dataclasses.replace(
                live, content_hashes=frozenset(content_hash(m.content) for m in memories)
            ),
            16_384,
        )
        topics = frozenset(m.topic_key for m in memories if m.topic_key)
        holders = (
            await self._store.find(
                dataclasses.replace(live, statuses=frozenset({Status.ACTIVE}), topic_keys=topics),
                16_384,
            )
            if topics
            else []
        )
        nearest: list[tuple[Memory, float] | None] = [None] * len(memories)
        for scope in scopes:
            indices = [i for i, m in enumerate(memories) if m.agent_scope == scope]
            hits = await self._store.search_many(
                dataclasses.replace(live, scopes=frozenset({scope})), vectors[indices], 1
            )
            for i, found in zip(indices, hits, strict=True):
                nearest[i] = found[0] if found else None
        return _Stored(
            by_hash={(m.agent_scope, m.content_hash): m for m in same},
            holders={(m.agent_scope, m.topic_key): m for m in holders},
            nearest=nearest,
        )

    async def _write_one(
        self,
        batch: Batch,
        stored: _Stored,
        index: int,
        tenant: str,
        user_id: str,
        new: NewMemory,
        vector: Vector,
    ) -> WriteResult:
        now = self._clock.now_ms()
        facts = self._facts(batch, stored, index, new, vector, now)
        decision = decide_write(new, facts, self._policy.lifecycle)
        if decision.action in (Action.DUPLICATE, Action.PROMOTE):
            assert decision.existing is not None
            return await self._absorb_duplicate(batch, tenant, user_id, new, decision, now)
        status = {Action.DRAFT: Status.DRAFT, Action.CONFLICT: Status.CONFLICT}.get(
            decision.action, Status.ACTIVE
        )
        related = decision.existing.id if decision.existing else ""
        row = self._new_row(
            tenant,
            user_id,
            new,
            now,
            status,
            supersedes_id=related if decision.action is not Action.CREATE else "",
        )
        batch.add(row, vector, related, now)
        if decision.action is Action.SUPERSEDE:
            assert decision.existing is not None
            self._supersede(batch, decision.existing, row.id, now)
        outcome = {
            Action.CREATE: WriteOutcome.CREATED,
            Action.DRAFT: WriteOutcome.DRAFT,
            Action.SUPERSEDE: WriteOutcome.SUPERSEDED,
            Action.CONFLICT: WriteOutcome.CONFLICT,
        }[decision.action]
        return WriteResult(row, outcome, related)

    def _facts(
        self,
        batch: Batch,
        stored: _Stored,
        index: int,
        new: NewMemory,
        vector: Vector,
        now: int,
    ) -> WriteFacts:
        """What storage and the request so far know about the memory being written."""

        def live(memory: Memory) -> bool:
            return (
                memory.status in LIVE
                and memory.agent_scope == new.agent_scope
                and not memory.is_expired(now)
            )

        digest = content_hash(new.content)
        pending = [(m, v) for m, v in batch.pending() if live(m)]
        same = next((m for m, _ in pending if m.content_hash == digest), None)
        if same is None:
            found = stored.by_hash.get((new.agent_scope, digest))
            if found is not None and live(batch.current(found)):
                same = batch.current(found)
        nearest: tuple[Memory, float] | None = None
        if same is None:
            for memory, other in pending:
                if other is not None:
                    similarity = float(np.dot(vector, other))
                    if nearest is None or similarity > nearest[1]:
                        nearest = (memory, similarity)
            hit = stored.nearest[index]
            if hit is not None:
                memory = batch.current(hit[0])
                if live(memory) and (nearest is None or hit[1] > nearest[1]):
                    nearest = (memory, hit[1])
        holder = None
        if new.topic_key:
            holder = self._pending_holder(batch, new.agent_scope, new.topic_key, now)
            known = stored.holders.get((new.agent_scope, new.topic_key))
            if holder is None and known is not None:
                current = batch.current(known)
                holder = current if _holds(current, new.agent_scope, new.topic_key, now) else None
        return WriteFacts(same, nearest, holder)

    @staticmethod
    def _pending_holder(
        batch: Batch, scope: str, topic_key: str, now: int, exclude_id: str = ""
    ) -> Memory | None:
        pending = [
            m for m, _ in batch.pending() if m.id != exclude_id and _holds(m, scope, topic_key, now)
        ]
        return pending[-1] if pending else None

    async def _topic_holder(
        self,
        batch: Batch,
        tenant: str,
        user_id: str,
        scope: str,
        topic_key: str,
        now: int,
        exclude_id: str = "",
    ) -> Memory | None:
        """The active memory of a topic, as the request has left things so far."""
        if not topic_key:
            return None
        pending = self._pending_holder(batch, scope, topic_key, now, exclude_id)
        if pending is not None:
            return pending
        stored = await self._store.find(
            MemoryFilter(
                tenant,
                user_id,
                statuses=frozenset({Status.ACTIVE}),
                scopes=frozenset({scope}),
                topic_key=topic_key,
                unexpired_at=now,
            ),
            2,
        )
        return next(
            (
                m
                for m in map(batch.current, stored)
                if m.id != exclude_id and _holds(m, scope, topic_key, now)
            ),
            None,
        )

    def _supersede(self, batch: Batch, old: Memory, successor_id: str, now: int) -> None:
        old = batch.current(old)
        after = bump(
            old, now, status=Status.SUPERSEDED, valid_to=now, superseded_by_id=successor_id
        )
        batch.change(Change(old, after, Operation.SUPERSEDE, successor_id), now)

    async def _absorb_duplicate(
        self,
        batch: Batch,
        tenant: str,
        user_id: str,
        new: NewMemory,
        decision: Decision,
        now: int,
    ) -> WriteResult:
        """A duplicate refreshes the existing memory; a duplicate of a draft promotes it."""
        assert decision.existing is not None
        existing = batch.current(decision.existing)
        importance = max(existing.importance, new.importance or 0.0)
        tags = list(dict.fromkeys([*existing.tags, *new.tags]))
        refreshed = bump(existing, now, importance=importance, tags=tags, last_accessed_at=now)
        refreshed = dataclasses.replace(
            refreshed, expire_at=refreshed_expiry(refreshed, self._policy.lifecycle)
        )
        if decision.action is Action.DUPLICATE:
            batch.change(Change(existing, refreshed, Operation.REFRESH), now)
            return WriteResult(refreshed, WriteOutcome.DUPLICATE, existing.id)
        promoted, outcome, related = await self._activate(batch, tenant, user_id, refreshed, now)
        batch.change(Change(existing, promoted, Operation.CONFIRM, related), now)
        if outcome is WriteOutcome.CREATED:  # the write itself added nothing new
            outcome, related = WriteOutcome.DUPLICATE, existing.id
        return WriteResult(promoted, outcome, related)

    async def _activate(
        self, batch: Batch, tenant: str, user_id: str, memory: Memory, now: int
    ) -> tuple[Memory, WriteOutcome, str]:
        """Makes a draft active under the topic rules (supersede, or conflict with P0)."""
        holder = await self._topic_holder(
            batch,
            tenant,
            user_id,
            memory.agent_scope,
            memory.topic_key,
            now,
            exclude_id=memory.id,
        )
        decision = decide_topic(holder)
        if decision.action is Action.CONFLICT:
            assert holder is not None
            return (
                dataclasses.replace(memory, status=Status.CONFLICT, supersedes_id=holder.id),
                WriteOutcome.CONFLICT,
                holder.id,
            )
        if decision.action is Action.SUPERSEDE:
            assert holder is not None
            self._supersede(batch, holder, memory.id, now)
            return (
                dataclasses.replace(memory, status=Status.ACTIVE, supersedes_id=holder.id),
                WriteOutcome.SUPERSEDED,
                holder.id,
            )
        return dataclasses.replace(memory, status=Status.ACTIVE), WriteOutcome.CREATED, ""

    def _new_row(
        self,
        tenant_id: str,
        user_id: str,
        new: NewMemory,
        now: int,
        status: Status,
        supersedes_id: str = "",
    ) -> Memory:
        tier = new.tier or Tier.P1
        return Memory(
            id=new_id(now),
            tenant_id=tenant_id,
            user_id=user_id,
            content=new.content,
            type=new.type,
            tier=tier,
            status=status,
            agent_scope=new.agent_scope,
            session_id=new.session_id,
            topic_key=new.topic_key,
            importance=(
                self._policy.default_importance if new.importance is None else new.importance
            ),
            confidence=1.0 if new.confidence is None else new.confidence,
            source=new.source,
            tags=list(new.tags),
            metadata=dict(new.metadata),
            created_at=now,
            occurred_at=new.occurred_at or now,
            updated_at=now,
            expire_at=new.expire_at or self._policy.lifecycle.expiry(tier, now),
            expire_explicit=bool(new.expire_at),
            supersedes_id=supersedes_id,
            version=1,
            embedding_model=self._embedder.model_id,
            content_hash=content_hash(new.content),
        )

    # -- recall --------------------------------------------------------------

    async def recall(
        self, principal: Principal, query: RecallQuery, deadline_s: float | None = None
    ) -> RecallResult:
        """The user's most relevant active memories, their profile and a context block."""
        validation.validate_recall(query, self._embedder.dimension)
        for scope in sorted(query.scopes):
            field = "agent_scope" if scope == query.agent_scope else "extra_agent_scopes"
            self._require_scope(principal, scope, field)
        return await self._pipeline.run(
            principal.tenant_id, query, self._readable_scopes(principal), deadline_s
        )

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
        self._require_scope(principal, agent_scope, "agent_scope")
        return await self._profiles.get(principal.tenant_id, user_id, frozenset({"", agent_scope}))

    # -- read ----------------------------------------------------------------

    async def get(self, principal: Principal, user_id: str, memory_id: str) -> Memory:
        """One memory of this tenant and user, whatever its status."""
        self._validate_one_id(user_id, memory_id, "id")
        return await self._load(principal, user_id, memory_id)

    async def history(
        self, principal: Principal, user_id: str, memory_id: str
    ) -> list[HistoryEntry]:
        """Every version of a memory, oldest first."""
        self._validate_one_id(user_id, memory_id, "id")
        await self._load(principal, user_id, memory_id)
        return await self._history.versions(principal.tenant_id, memory_id)

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
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        _check_page_size(page_size, violations)
        if violations:
            raise InvalidArgumentError(violations)
        effective_statuses = statuses or frozenset(set(Status) - {Status.ARCHIVED})
        memory_filter = MemoryFilter(
            tenant_id=principal.tenant_id,
            user_id=user_id,
            statuses=effective_statuses,
            types=types,
            scopes=self._readable_scopes(principal),
        )
        fingerprint = _fingerprint(user_id, effective_statuses, types)
        before_id = _decode_page_token(page_token, fingerprint)
        size = page_size or 50
        ids = await self._store.list_ids(memory_filter, before_id, size + 1)
        page_ids = ids[:size]
        by_id = {m.id: m for m in await self._store.get(principal.tenant_id, page_ids)}
        memories = [by_id[i] for i in page_ids if i in by_id]
        next_token = _encode_page_token(page_ids[-1], fingerprint) if len(ids) > size else ""
        return Page(memories=memories, next_page_token=next_token)

    # -- update --------------------------------------------------------------

    async def update(
        self, principal: Principal, user_id: str, memory_id: str, etag: str, patch: MemoryPatch
    ) -> Memory:
        """Applies a field-masked change under the user's lock, guarded by the etag."""
        self._validate_patch(user_id, memory_id, patch)
        self._require_writer(principal)
        if "agent_scope" in patch.paths:
            self._require_scope(principal, patch.agent_scope, "memory.agent_scope")
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            current = await self._load(principal, user_id, memory_id)
            if etag and etag != current.etag:
                raise EtagMismatchError(memory_id, etag, current.etag)
            now = self._clock.now_ms()
            updated = self._apply_patch(current, patch, now)
            vector = None
            if updated.content_hash != current.content_hash:
                vector = (await self._embedder.embed([updated.content]))[0]
            await self._changes.save(
                tenant, [Change(current, updated, Operation.UPDATE, vector=vector)], now
            )
            return updated

    def _validate_patch(self, user_id: str, memory_id: str, patch: MemoryPatch) -> None:
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        validation.check_memory_id(memory_id, "memory.id", violations)
        if not patch.paths:
            violations.append(FieldViolation("update_mask", "must name at least one field"))
        for path in sorted(patch.paths - UPDATABLE_FIELDS):
            violations.append(FieldViolation("update_mask", f"{path!r} cannot be updated"))
        paths = patch.paths
        if "content" in paths:
            validation.check_content(patch.content, "memory.content", violations)
        if "type" in paths and patch.type is None:
            violations.append(FieldViolation("memory.type", "is required"))
        if "importance" in paths:
            validation.check_unit_interval(patch.importance, "memory.importance", violations)
        if "confidence" in paths:
            validation.check_unit_interval(patch.confidence, "memory.confidence", violations)
        if "tags" in paths:
            validation.check_tags(patch.tags, "memory.tags", violations)
        if "metadata" in paths:
            validation.check_metadata(patch.metadata, "memory.metadata", violations)
        for name, limit in (
            ("topic_key", validation.MAX_TOPIC_KEY_CHARS),
            ("source", validation.MAX_SOURCE_CHARS),
            ("agent_scope", validation.MAX_KEY_CHARS),
            ("session_id", validation.MAX_KEY_CHARS),
        ):
            if name in paths:
                validation.check_identifier(
                    getattr(patch, name),
                    f"memory.{name}",
                    required=False,
                    max_chars=limit,
                    violations=violations,
                )
        if violations:
            raise InvalidArgumentError(violations)

    def _apply_patch(self, current: Memory, patch: MemoryPatch, now: int) -> Memory:
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
            changes["embedding_model"] = self._embedder.model_id
        updated = bump(current, now, **changes)
        if not updated.expire_explicit:
            updated = dataclasses.replace(
                updated, expire_at=refreshed_expiry(updated, self._policy.lifecycle)
            )
        return updated

    # -- forget and restore --------------------------------------------------

    async def forget(
        self,
        principal: Principal,
        user_id: str,
        target: ForgetTarget,
        mode: ForgetMode,
        dry_run: bool,
    ) -> list[str]:
        """Archives (SOFT) or deletes (HARD) the targeted memories."""
        self._validate_forget(principal, user_id, target)
        self._require_writer(principal)
        tenant = principal.tenant_id
        if target.whole_tenant:
            return await self._forget_tenant(principal, mode, dry_run)
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            if target.ids:
                unique_ids = list(dict.fromkeys(target.ids))
                found = {
                    m.id: m
                    for m in await self._store.get(tenant, unique_ids)
                    if self._visible(principal, user_id, m)
                }
                missing = [i for i in unique_ids if i not in found]
                if missing:
                    raise NotFoundError(missing[0])
                memories = [found[i] for i in unique_ids]
            else:
                memories = await self._scan(self._target_filter(principal, user_id, target))
            if dry_run:
                return [m.id for m in memories]
            await self._forget_memories(tenant, memories, mode)
            if mode is ForgetMode.HARD and target.all_of_user:
                await self._history.delete_user(tenant, user_id)
                await self._requests.delete_user(tenant, user_id)
            await self._access.drain(tenant)  # stats of deleted ids must not resurrect them
            return [m.id for m in memories]

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
        memories = await self._scan(MemoryFilter(tenant, None))
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
        await self._access.drain(tenant)
        return [m.id for m in memories]

    def _target_filter(
        self, principal: Principal, user_id: str, target: ForgetTarget
    ) -> MemoryFilter:
        base = MemoryFilter(principal.tenant_id, user_id, scopes=self._readable_scopes(principal))
        if target.topic_key:
            return dataclasses.replace(base, topic_key=target.topic_key)
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

    async def _scan(self, memory_filter: MemoryFilter) -> list[Memory]:
        return await scan(self._store, memory_filter, SCAN_BATCH)

    def _validate_forget(self, principal: Principal, user_id: str, target: ForgetTarget) -> None:
        chosen = [
            name
            for name, on in (
                ("ids", bool(target.ids)),
                ("topic_key", bool(target.topic_key)),
                ("selector", target.selector is not None),
                ("all_of_user", target.all_of_user),
                ("whole_tenant", target.whole_tenant),
            )
            if on
        ]
        violations: list[FieldViolation] = []
        if len(chosen) != 1:
            violations.append(
                FieldViolation(
                    "ids", "set exactly one of ids, topic_key, selector, all_of_user, whole_tenant"
                )
            )
        if target.whole_tenant:
            if user_id:
                violations.append(FieldViolation("user_id", "must be empty with whole_tenant"))
        else:
            validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        if len(target.ids) > validation.MAX_FORGET_IDS:
            violations.append(
                FieldViolation("ids", f"must contain at most {validation.MAX_FORGET_IDS} ids")
            )
        else:
            for i, memory_id in enumerate(target.ids):
                validation.check_memory_id(memory_id, f"ids[{i}]", violations)
        validation.check_identifier(
            target.topic_key,
            "topic_key",
            required=False,
            max_chars=validation.MAX_TOPIC_KEY_CHARS,
            violations=violations,
        )
        if target.selector is not None:
            if target.selector.is_empty():
                violations.append(FieldViolation("selector", "must set at least one condition"))
            validation.check_tags(sorted(target.selector.tags), "selector.tags", violations)
        if violations:
            raise InvalidArgumentError(violations)
        if target.whole_tenant and principal.role != "admin":
            raise PermissionDeniedError("forgetting a whole tenant needs an admin key")

    async def restore(self, principal: Principal, user_id: str, ids: Sequence[str]) -> list[Memory]:
        """Brings archived memories back to active."""
        validation.validate_ids(user_id, ids, "ids", validation.MAX_FORGET_IDS)
        self._require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            memories = [await self._load(principal, user_id, i) for i in dict.fromkeys(ids)]
            now = self._clock.now_ms()
            for memory in memories:
                if memory.status is not Status.ARCHIVED:
                    raise FailedPreconditionError(f"memory {memory.id!r} is not archived")
                holder = await self._topic_holder(
                    Batch(), tenant, user_id, memory.agent_scope, memory.topic_key, now
                )
                if holder is not None:
                    raise FailedPreconditionError(
                        f"topic {memory.topic_key!r} already has the active memory {holder.id!r}"
                    )
            changes = []
            for memory in memories:
                restored = bump(memory, now, status=Status.ACTIVE, last_accessed_at=now)
                restored = dataclasses.replace(
                    restored, expire_at=refreshed_expiry(restored, self._policy.lifecycle)
                )
                changes.append(Change(memory, restored, Operation.RESTORE))
            await self._changes.save(tenant, changes, now)
            return [c.after for c in changes]

    # -- drafts and conflicts ------------------------------------------------

    async def confirm(
        self, principal: Principal, user_id: str, ids: Sequence[str]
    ) -> list[WriteResult]:
        """Promotes drafts to active under the topic rules."""
        validation.validate_ids(user_id, ids, "ids", validation.MAX_FORGET_IDS)
        self._require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            drafts = [await self._load(principal, user_id, i) for i in dict.fromkeys(ids)]
            for draft in drafts:
                if draft.status is not Status.DRAFT:
                    raise FailedPreconditionError(f"memory {draft.id!r} is not a draft")
            results = []
            batch = Batch()
            for draft in drafts:
                now = self._clock.now_ms()
                promoted, outcome, related = await self._activate(
                    batch, tenant, user_id, bump(draft, now), now
                )
                batch.change(Change(draft, promoted, Operation.CONFIRM, related), now)
                results.append(WriteResult(promoted, outcome, related))
            await self._changes.commit(tenant, batch)
            return results

    async def list_conflicts(
        self, principal: Principal, user_id: str, page_size: int, page_token: str
    ) -> tuple[list[Conflict], str]:
        """Parked conflicts (of one user, or the tenant), oldest first."""
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=False, violations=violations)
        _check_page_size(page_size, violations)
        if violations:
            raise InvalidArgumentError(violations)
        fingerprint = _fingerprint(user_id, frozenset({Status.CONFLICT}), frozenset())
        after = _decode_page_token(page_token, fingerprint)
        size = page_size or 50
        found = await self._store.find(
            MemoryFilter(
                principal.tenant_id,
                user_id or None,
                statuses=frozenset({Status.CONFLICT}),
                scopes=self._readable_scopes(principal),
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
        conflicts = [Conflict(c, existing.get(c.supersedes_id)) for c in page]
        token = _encode_page_token(page[-1].id, fingerprint) if len(found) > size else ""
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
        self._require_writer(principal)
        tenant = principal.tenant_id
        async with self._locks.hold(user_lock_key(tenant, user_id)):
            proposed = await self._load(principal, user_id, conflict_id)
            if proposed.status is not Status.CONFLICT:
                raise FailedPreconditionError(f"memory {conflict_id!r} is not a conflict")
            now = self._clock.now_ms()
            batch = Batch()
            holder = await self._topic_holder(
                batch, tenant, user_id, proposed.agent_scope, proposed.topic_key, now
            )
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
                    self._supersede(batch, holder, proposed.id, now)
            batch.change(
                Change(proposed, after, Operation.RESOLVE, holder.id if holder else ""), now
            )
            await self._changes.commit(tenant, batch)
            return Conflict(after, batch.current(holder) if holder else None)

    # -- helpers -------------------------------------------------------------

    def _validate_one_id(self, user_id: str, memory_id: str, field: str) -> None:
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        validation.check_memory_id(memory_id, field, violations)
        if violations:
            raise InvalidArgumentError(violations)

    async def _load(self, principal: Principal, user_id: str, memory_id: str) -> Memory:
        found = await self._store.get(principal.tenant_id, [memory_id])
        if not found or not self._visible(principal, user_id, found[0]):
            raise NotFoundError(memory_id)
        return found[0]

    @staticmethod
    def _visible(principal: Principal, user_id: str, memory: Memory) -> bool:
        # The store is already confined to the tenant; checking it again costs nothing
        # and keeps one storage bug from becoming a cross-tenant leak.
        return (
            memory.tenant_id == principal.tenant_id
            and memory.user_id == user_id
            and principal.may_use_scope(memory.agent_scope)
        )

    @staticmethod
    def _readable_scopes(principal: Principal) -> frozenset[str] | None:
        if "*" in principal.allowed_scopes:
            return None
        return principal.allowed_scopes | {""}

    @staticmethod
    def _require_writer(principal: Principal) -> None:
        if not principal.may_write():
            raise PermissionDeniedError("this credential is read-only")

    @staticmethod
    def _require_scope(principal: Principal, scope: str, field: str) -> None:
        if not principal.may_use_scope(scope):
            raise PermissionDeniedError(f"{field}: agent scope {scope!r} is not allowed")


@dataclasses.dataclass(frozen=True, slots=True)
class _Stored:
    """Storage's answers for one Write request, read before its rules run."""

    by_hash: dict[tuple[str, str], Memory]
    holders: dict[tuple[str, str], Memory]
    nearest: list[tuple[Memory, float] | None]


def _facts_from_set(
    user_set: UserSet, memories: Sequence[NewMemory], vectors: Vectors, now: int
) -> _Stored:
    """What `_prefetch` reads from storage, answered by the user's working set."""
    by_hash: dict[tuple[str, str], Memory] = {}
    holders: dict[tuple[str, str], Memory] = {}
    for new in memories:
        digest = content_hash(new.content)
        same = user_set.same_content(new.agent_scope, digest, now)
        if same is not None:
            by_hash[(new.agent_scope, digest)] = same
        if new.topic_key:
            holder = user_set.topic_holder(new.agent_scope, new.topic_key, now)
            if holder is not None:
                holders[(new.agent_scope, new.topic_key)] = holder
    nearest: list[tuple[Memory, float] | None] = [None] * len(memories)
    for scope in {m.agent_scope for m in memories}:
        indices = [i for i, m in enumerate(memories) if m.agent_scope == scope]
        for i, found in zip(indices, user_set.nearest(scope, vectors[indices], now), strict=True):
            nearest[i] = found
    return _Stored(by_hash=by_hash, holders=holders, nearest=nearest)


def _holds(memory: Memory, scope: str, topic_key: str, now: int) -> bool:
    """Whether the memory is the active holder of a topic in a scope."""
    return (
        memory.status is Status.ACTIVE
        and memory.topic_key == topic_key
        and memory.agent_scope == scope
        and not memory.is_expired(now)
    )


def _check_page_size(page_size: int, violations: list[FieldViolation]) -> None:
    if not 0 <= page_size <= validation.MAX_PAGE_SIZE:
        violations.append(
            FieldViolation("page_size", f"must be between 0 and {validation.MAX_PAGE_SIZE}")
        )


def _write_fingerprint(user_id: str, memories: Sequence[NewMemory]) -> str:
    """Identifies a Write's content, so a reused request_id with other content is caught."""
    payload = [
        user_id,
        [
            [
                m.content,
                int(m.type),
                int(m.tier or 0),
                m.agent_scope,
                m.session_id,
                m.topic_key,
                m.importance,
                m.confidence,
                m.source,
                list(m.tags),
                dict(m.metadata),
                m.occurred_at,
                m.expire_at,
            ]
            for m in memories
        ],
    ]
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _fingerprint(user_id: str, statuses: frozenset[Status], types: frozenset[MemoryType]) -> str:
    raw = json.dumps([user_id, sorted(statuses), sorted(types)])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _encode_page_token(last_id: str, fingerprint: str) -> str:
    raw = json.dumps({"after": last_id, "f": fingerprint}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_page_token(token: str, fingerprint: str) -> str:
    if not token:
        return ""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        after, token_fingerprint = str(data["after"]), str(data["f"])
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise InvalidArgumentError.single("page_token", "is not a valid page token") from error
    if token_fingerprint != fingerprint:
        raise InvalidArgumentError.single("page_token", "was issued for a different user or filter")
    return after
