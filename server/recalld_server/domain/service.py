"""Use cases: write, recall, get, list, update, forget.

The service holds the rules; storage and the embedding model come in through
ports. Every method takes the caller's Principal, and every storage call it
makes is confined to that principal's tenant and the named user.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from recalld_server.domain import validation
from recalld_server.domain.errors import (
    EtagMismatchError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
)
from recalld_server.domain.ids import new_id
from recalld_server.domain.model import (
    UPDATABLE_FIELDS,
    ForgetMode,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Page,
    Principal,
    RecallQuery,
    RecallResult,
    ScoredMemory,
    Status,
    Tier,
    WriteOutcome,
    WriteResult,
)
from recalld_server.domain.ports import Clock, Embedder, LockManager, VectorStore
from recalld_server.domain.text import content_hash, estimate_tokens

DAY_MS = 86_400_000


@dataclasses.dataclass(frozen=True, slots=True)
class Policy:
    """Tunable rules, with the documented defaults.

    Attributes:
        tier_ttl_days: Lifetime per tier when a write gives no expire_at (P0: never).
        default_importance: Importance of a memory written without one.
        default_min_score: Cosine similarity below which Recall drops a hit unless the
            caller sets min_score. For the default model (USE v3) unrelated pairs score
            about 0.0-0.1 (mean 0.10 on a bilingual probe), correct matches 0.38 on
            average, but question-style queries can score a true match as low as
            0.11-0.15 ("Where does the user live?" vs "I live in Hangzhou"). The default
            favours not missing a memory; callers that prefer precision raise it.
        search_overfetch: Candidates fetched per requested item, so that thresholding
            and budgeting still leave top_k items.
        max_list_scan: Most ids one List page scans for one user.
    """

    tier_ttl_days: dict[Tier, int] = dataclasses.field(
        default_factory=lambda: {Tier.P0: 0, Tier.P1: 90, Tier.P2: 30}
    )
    default_importance: float = 0.5
    default_min_score: float = 0.1
    search_overfetch: int = 2
    max_list_scan: int = 16_384


class MemoryService:
    """The memory use cases, independent of transport and storage engine."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        locks: LockManager,
        clock: Clock,
        policy: Policy | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._locks = locks
        self._clock = clock
        self._policy = policy or Policy()

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
        vectors = await self._embedder.embed([m.content for m in memories])
        now = self._clock.now_ms()
        rows = [self._new_row(principal.tenant_id, user_id, m, now) for m in memories]
        await self._store.insert(rows, vectors)
        return [WriteResult(memory=row, outcome=WriteOutcome.CREATED) for row in rows]

    def _new_row(self, tenant_id: str, user_id: str, new: NewMemory, now: int) -> Memory:
        tier = new.tier or Tier.P1
        return Memory(
            id=new_id(now),
            tenant_id=tenant_id,
            user_id=user_id,
            content=new.content,
            type=new.type,
            tier=tier,
            status=Status.ACTIVE,
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
            expire_at=new.expire_at or self._default_expiry(tier, now),
            version=1,
            embedding_model=self._embedder.model_id,
            content_hash=content_hash(new.content),
        )

    def _default_expiry(self, tier: Tier, from_ms: int) -> int:
        days = self._policy.tier_ttl_days.get(tier, 0)
        return from_ms + days * DAY_MS if days else 0

    # -- recall --------------------------------------------------------------

    async def recall(self, principal: Principal, query: RecallQuery) -> RecallResult:
        """The user's active, unexpired memories most similar to the query, best first."""
        validation.validate_recall(query, self._embedder.dimension)
        for scope in sorted(query.scopes):
            self._require_scope(
                principal,
                scope,
                "agent_scope" if scope == query.agent_scope else "extra_agent_scopes",
            )
        if query.query_vector:
            vector = np.asarray(query.query_vector, dtype=np.float32)
        else:
            vector = (await self._embedder.embed([query.query]))[0]
        now = self._clock.now_ms()
        memory_filter = MemoryFilter(
            tenant_id=principal.tenant_id,
            user_id=query.user_id,
            statuses=frozenset({Status.ACTIVE}),
            types=query.types,
            tiers=query.tiers,
            scopes=query.scopes,
            tags=query.tags,
            session_id=query.session_id,
            occurred_after=query.occurred_after,
            occurred_before=query.occurred_before,
            unexpired_at=now,
        )
        hits = await self._store.search(
            memory_filter, vector, query.top_k * self._policy.search_overfetch
        )
        min_score = self._policy.default_min_score if query.min_score is None else query.min_score
        items: list[ScoredMemory] = []
        used_tokens = 0
        for memory, similarity in sorted(hits, key=lambda h: h[1], reverse=True):
            if similarity < min_score or len(items) >= query.top_k:
                continue
            cost = estimate_tokens(memory.content)
            if query.token_budget and used_tokens + cost > query.token_budget:
                continue
            used_tokens += cost
            items.append(ScoredMemory(memory=memory, score=similarity, dense_score=similarity))
        return RecallResult(items=items, token_estimate=used_tokens, degraded_stages=[])

    # -- read ----------------------------------------------------------------

    async def get(self, principal: Principal, user_id: str, memory_id: str) -> Memory:
        """One memory of this tenant and user, whatever its status."""
        violations: list[FieldViolation] = []
        validation.check_identifier(user_id, "user_id", required=True, violations=violations)
        validation.check_memory_id(memory_id, "id", violations)
        if violations:
            raise InvalidArgumentError(violations)
        return await self._load(principal, user_id, memory_id)

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
        if not 0 <= page_size <= validation.MAX_PAGE_SIZE:
            violations.append(
                FieldViolation("page_size", f"must be between 0 and {validation.MAX_PAGE_SIZE}")
            )
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
        """Applies a field-masked change under the memory's lock, guarded by its etag."""
        self._validate_patch(user_id, memory_id, patch)
        self._require_writer(principal)
        if "agent_scope" in patch.paths:
            self._require_scope(principal, patch.agent_scope, "memory.agent_scope")
        async with self._locks.hold(f"{principal.tenant_id}/memory/{memory_id}"):
            current = await self._load(principal, user_id, memory_id)
            if etag and etag != current.etag:
                raise EtagMismatchError(memory_id, etag, current.etag)
            updated = self._apply_patch(current, patch)
            if "content" in patch.paths and updated.content_hash != current.content_hash:
                vector = (await self._embedder.embed([updated.content]))[0]
            else:
                stored = await self._store.get_vectors(principal.tenant_id, [memory_id])
                vector = stored[memory_id]
            await self._store.replace(updated, vector)
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

    def _apply_patch(self, current: Memory, patch: MemoryPatch) -> Memory:
        now = self._clock.now_ms()
        changes: dict[str, Any] = {path: getattr(patch, path) for path in patch.paths}
        if "tags" in changes:
            changes["tags"] = list(patch.tags)
        if "metadata" in changes:
            changes["metadata"] = dict(patch.metadata)
        if "tier" in changes:
            changes["tier"] = patch.tier or Tier.P1
            if "expire_at" not in changes:
                changes["expire_at"] = self._default_expiry(changes["tier"], current.created_at)
        if "occurred_at" in patch.paths and not patch.occurred_at:
            changes["occurred_at"] = current.created_at
        if "content" in patch.paths:
            changes["content_hash"] = content_hash(patch.content)
            changes["embedding_model"] = self._embedder.model_id
        return dataclasses.replace(
            current,
            **changes,
            version=current.version + 1,
            updated_at=now,
        )

    # -- forget --------------------------------------------------------------

    async def forget(
        self,
        principal: Principal,
        user_id: str,
        ids: Sequence[str],
        mode: ForgetMode,
        dry_run: bool,
    ) -> list[str]:
        """Archives (SOFT) or deletes (HARD) the named memories; all or nothing."""
        validation.validate_ids(user_id, ids, "ids", validation.MAX_FORGET_IDS)
        self._require_writer(principal)
        unique_ids = list(dict.fromkeys(ids))
        found = {
            m.id: m
            for m in await self._store.get(principal.tenant_id, unique_ids)
            if self._visible(principal, user_id, m)
        }
        missing = [i for i in unique_ids if i not in found]
        if missing:
            raise NotFoundError(missing[0])
        if dry_run:
            return unique_ids
        if mode is ForgetMode.HARD:
            await self._store.delete(principal.tenant_id, unique_ids)
            return unique_ids
        now = self._clock.now_ms()
        for memory_id in unique_ids:
            async with self._locks.hold(f"{principal.tenant_id}/memory/{memory_id}"):
                current = await self._load(principal, user_id, memory_id)
                if current.status is Status.ARCHIVED:
                    continue
                archived = dataclasses.replace(
                    current, status=Status.ARCHIVED, version=current.version + 1, updated_at=now
                )
                vector = (await self._store.get_vectors(principal.tenant_id, [memory_id]))[
                    memory_id
                ]
                await self._store.replace(archived, vector)
        return unique_ids

    # -- helpers -------------------------------------------------------------

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
