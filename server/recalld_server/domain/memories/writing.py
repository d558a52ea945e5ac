"""The Write use case: validate, embed, then plan and commit under the user's lock.

The rules read the user's working set (or, for users served from storage, one
storage read per request); storage sees one group-committed write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Sequence

from recalld_server.domain.core.errors import (
    BackendUnavailableError,
    InvalidArgumentError,
    RequestIdReusedError,
    ResourceExhaustedError,
    TextRefusedError,
)
from recalld_server.domain.core.model import (
    LIVE,
    Memory,
    MemoryFilter,
    MemoryType,
    NewMemory,
    Principal,
    Status,
    StoredWrite,
    WriteOutcome,
    WriteResult,
)
from recalld_server.domain.core.ports import Backends, Clock, Vectors, VectorStore
from recalld_server.domain.core.sensitive_data import Finding
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.guards import authorization, validation
from recalld_server.domain.memories.policy import Policy, user_lock_key
from recalld_server.domain.memories.write_planner import (
    StoredFacts,
    WritePlanner,
    facts_from_set,
    topics_to_hold,
)
from recalld_server.domain.sensitive.guard import SensitiveDataGuard
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.domain.working_set.user_set import UserSet

PREFETCH_LIMIT = 16_384
TENANT_COUNT_TTL_MS = 10_000
"""How long a tenant's live-memory count (for its quota) is trusted before a recount."""


class TenantCounts:
    """Live memories per tenant, for the tenant quota, without a count on every Write.

    A count read from storage is trusted for `TENANT_COUNT_TTL_MS`, plus what this
    process added since; within a tenth of the quota every Write recounts. Replicas
    each keep their own, so across replicas the quota holds exactly near the limit
    and within a few seconds of writes elsewhere.
    """

    def __init__(self, store: VectorStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._counts: dict[str, tuple[int, int]] = {}  # tenant -> (count, counted at ms)

    async def live(self, tenant: str, quota: int) -> int:
        """The tenant's live memories (recounted when stale or near the quota)."""
        now = self._clock.now_ms()
        count, at = self._counts.get(tenant, (0, -TENANT_COUNT_TTL_MS - 1))
        if now - at > TENANT_COUNT_TTL_MS or count >= quota - max(1, quota // 10):
            count = await self._store.count(MemoryFilter(tenant, None, statuses=LIVE))
            self._counts[tenant] = (count, now)
        return count

    def added(self, tenant: str, memories: int) -> None:
        """Counts memories this process is about to store."""
        count, at = self._counts.get(tenant, (0, 0))
        self._counts[tenant] = (count + memories, at)


def screen_memories(
    guard: SensitiveDataGuard, tenant_id: str, memories: Sequence[NewMemory]
) -> tuple[list[NewMemory], list[tuple[Finding, ...]]]:
    """The memories as they will be stored (masked), and what was found in each.

    Raises:
        InvalidArgumentError: a memory holds a category the tenant's policy rejects
            (every such field is named).
    """
    screening = guard.begin(tenant_id)
    screened: list[NewMemory] = []
    found: list[tuple[Finding, ...]] = []
    for i, memory in enumerate(memories):
        mark = len(screening.findings)
        content = screening.text(f"memories[{i}].content", memory.content)
        metadata = screening.metadata(f"memories[{i}].metadata", memory.metadata)
        findings = screening.since(mark)
        found.append(findings)
        screened.append(
            dataclasses.replace(memory, content=content, metadata=metadata) if findings else memory
        )
    screening.finish()
    return screened, found


def _with_findings(
    results: list[WriteResult], found: Sequence[tuple[Finding, ...]]
) -> list[WriteResult]:
    return [
        dataclasses.replace(result, sensitive_data=findings) if findings else result
        for result, findings in zip(results, found, strict=True)
    ]


class WriteMemories:
    """Stores a batch of memories for one user and says what happened to each."""

    def __init__(
        self,
        backends: Backends,
        memories: UserMemories,
        policy: Policy,
        stages: Stages,
        guard: SensitiveDataGuard,
    ) -> None:
        self._store = backends.store
        self._embedder = backends.embedder
        self._locks = backends.locks
        self._clock = backends.clock
        self._requests = backends.requests
        self._memories = memories
        self._policy = policy
        self._stages = stages
        self._tenant_counts = TenantCounts(self._store, self._clock)
        self._guard = guard

    async def __call__(
        self,
        principal: Principal,
        user_id: str,
        memories: Sequence[NewMemory],
        request_id: str = "",
    ) -> list[WriteResult]:
        """Runs one Write; a reused request_id replays the first answer."""
        validation.validate_write(user_id, memories, request_id)
        authorization.require_writer(principal)
        for i, memory in enumerate(memories):
            authorization.require_scope(principal, memory.agent_scope, f"memories[{i}].agent_scope")
        with self._stages.stage("screen") as record:
            memories, found = screen_memories(self._guard, principal.tenant_id, memories)
            record.set("findings", sum(len(f) for f in found))
        fingerprint = write_fingerprint(user_id, memories)
        if request_id:
            replay = await self._replay(principal, user_id, request_id, fingerprint)
            if replay is not None:
                return _with_findings(replay, found)
        with self._stages.stage("embed") as record:
            try:
                vectors = await self._embedder.embed([m.content for m in memories])
            except TextRefusedError as error:
                raise InvalidArgumentError.single(
                    f"memories[{error.position}].content", error.description
                ) from None
            record.set("memories", len(memories))
        tenant = principal.tenant_id
        async with contextlib.AsyncExitStack() as held:
            with self._stages.stage("lock_wait"):
                await held.enter_async_context(self._locks.hold(user_lock_key(tenant, user_id)))
            if request_id:  # a concurrent retry may have finished while we embedded
                replay = await self._replay(principal, user_id, request_id, fingerprint)
                if replay is not None:
                    return _with_findings(replay, found)
            with self._stages.stage("decide") as record:
                stored, source, user_set = await self._facts(tenant, user_id, memories, vectors)
                record.set("source", source)
                planner = WritePlanner(
                    tenant,
                    user_id,
                    stored,
                    self._policy.lifecycle,
                    self._policy.default_importance,
                    self._embedder.model_id,
                )
                results = [
                    planner.write(i, new, vector, self._clock.now_ms())
                    for i, (new, vector) in enumerate(zip(memories, vectors, strict=True))
                ]
                for outcome in WriteOutcome:
                    record.set(outcome.name.lower(), sum(r.outcome is outcome for r in results))
            await self._check_quota(tenant, user_id, planner, user_set)
            with self._stages.stage("store") as record:
                await self._memories.changes.commit(tenant, planner.batch)
                record.set("new", len(planner.batch.new))
                record.set("changed", len(planner.batch.changed))
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
        return _with_findings(results, found)

    async def _replay(
        self, principal: Principal, user_id: str, request_id: str, fingerprint: str
    ) -> list[WriteResult] | None:
        stored = await self._requests.get(principal.tenant_id, user_id, request_id)
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
            if memory is None or not authorization.visible(principal, user_id, memory):
                # Hard-forgotten since, or moved to a scope this caller may not read
                # (a key of another scope can send the same shared-scope content
                # with the same request_id): report the id, never the content.
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

    async def _facts(
        self, tenant: str, user_id: str, memories: Sequence[NewMemory], vectors: Vectors
    ) -> tuple[StoredFacts, str, UserSet | None]:
        """From the user's working set, or read from storage when it cannot serve."""
        now = self._clock.now_ms()
        try:
            user_set = await self._memories.working_set.open(tenant, user_id)
        except BackendUnavailableError:
            user_set = None
        if user_set is not None:
            return facts_from_set(user_set, memories, vectors, now), "working_set", user_set
        facts = await self._prefetch(tenant, user_id, memories, vectors, now)
        return facts, "storage", None

    async def _check_quota(
        self, tenant: str, user_id: str, planner: WritePlanner, user_set: UserSet | None
    ) -> None:
        """Refuses a Write that would take the user or the tenant past a live-memory quota."""
        added = sum(m.status in LIVE for m, _ in planner.batch.new.values()) - sum(
            m.status not in LIVE for m in planner.batch.changed.values()
        )
        if added <= 0:
            return
        quota = self._policy.max_memories_per_user
        if quota > 0:
            if user_set is not None:
                held = len(user_set)
            else:
                held = await self._store.count(MemoryFilter(tenant, user_id, statuses=LIVE))
            if held + added > quota:
                raise ResourceExhaustedError(
                    f"user {user_id!r} holds {held} live memories; {added} more would pass "
                    f"the quota of {quota} (forget or consolidate some first)",
                    cause="quota_memories_per_user",
                )
        tenant_quota = self._policy.max_memories_per_tenant
        if tenant_quota > 0:
            held = await self._tenant_counts.live(tenant, tenant_quota)
            if held + added > tenant_quota:
                raise ResourceExhaustedError(
                    f"the tenant holds {held} live memories; {added} more would pass its "
                    f"quota of {tenant_quota}",
                    cause="quota_memories_per_tenant",
                )
            self._tenant_counts.added(tenant, added)

    async def _prefetch(
        self,
        tenant: str,
        user_id: str,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        now: int,
    ) -> StoredFacts:
        """What storage holds that the request's rules need, read once for the request.

        Nothing of the request is stored until it commits, so these reads stay valid for
        the whole request; what the request itself changes is looked up in its Batch.
        """
        scopes = frozenset(m.agent_scope for m in memories)
        live = MemoryFilter(tenant, user_id, statuses=LIVE, scopes=scopes, unexpired_at=now)
        same = await self._store.find(
            dataclasses.replace(
                live, content_hashes=frozenset(content_hash(m.content) for m in memories)
            ),
            PREFETCH_LIMIT,
        )
        nearest: list[tuple[Memory, float] | None] = [None] * len(memories)
        for scope in scopes:
            indices = [i for i, m in enumerate(memories) if m.agent_scope == scope]
            hits = await self._store.search_many(
                dataclasses.replace(live, scopes=frozenset({scope})), vectors[indices], 1
            )
            for i, found in zip(indices, hits, strict=True):
                nearest[i] = found[0] if found else None
        return StoredFacts(
            by_hash={(m.agent_scope, m.content_hash): m for m in same},
            holders=await read_holders(
                self._store, tenant, user_id, topics_to_hold(memories, same, nearest), now
            ),
            nearest=nearest,
        )


async def read_holders(
    store: VectorStore, tenant: str, user_id: str, wanted: set[tuple[str, str]], now: int
) -> dict[tuple[str, str], Memory]:
    """The active, unexpired holder (the newest) of each (scope, topic), read from storage."""
    if not wanted:
        return {}
    found = await store.find(
        MemoryFilter(
            tenant,
            user_id,
            statuses=frozenset({Status.ACTIVE}),
            scopes=frozenset(scope for scope, _ in wanted),
            topic_keys=frozenset(topic for _, topic in wanted),
            unexpired_at=now,
        ),
        PREFETCH_LIMIT,
    )
    # Ascending ids: the newest holder of a topic wins.
    return {
        (m.agent_scope, m.topic_key): m for m in found if (m.agent_scope, m.topic_key) in wanted
    }


def write_fingerprint(user_id: str, memories: Sequence[NewMemory]) -> str:
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
