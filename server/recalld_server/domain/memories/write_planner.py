"""The write planner: what a Write request does to a user's memories, decided in memory.

Pure: it reads what the user's memories were before the request (`StoredFacts`,
from the working set or one storage read) and what the request has done so far
(its `Batch`), and records every change in the batch. Nothing here awaits,
touches storage, or reads a clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import (
    LIVE,
    Memory,
    NewMemory,
    Operation,
    Status,
    Tier,
    WriteOutcome,
    WriteResult,
)
from recalld_server.domain.core.ports import Vector, Vectors
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.rules.lifecycle import (
    Action,
    Decision,
    LifecyclePolicy,
    WriteFacts,
    decide_topic,
    decide_write,
    refreshed_expiry,
)
from recalld_server.domain.working_set.changes import Batch, Change, bump
from recalld_server.domain.working_set.user_set import UserSet

_OUTCOMES = {
    Action.CREATE: WriteOutcome.CREATED,
    Action.DRAFT: WriteOutcome.DRAFT,
    Action.SUPERSEDE: WriteOutcome.SUPERSEDED,
    Action.CONFLICT: WriteOutcome.CONFLICT,
}


@dataclasses.dataclass(frozen=True, slots=True)
class StoredFacts:
    """The user's memories the request's rules need, as they were before it.

    Attributes:
        by_hash: Live, unexpired memories by (scope, normalised-content hash).
        holders: Active, unexpired topic holders by (scope, topic), for the request's
            topics and the topics of drafts it may promote.
        nearest: For each request memory, the most similar live memory of its scope.
    """

    by_hash: dict[tuple[str, str], Memory] = dataclasses.field(default_factory=dict)
    holders: dict[tuple[str, str], Memory] = dataclasses.field(default_factory=dict)
    nearest: list[tuple[Memory, float] | None] = dataclasses.field(default_factory=list)


def facts_from_set(
    user_set: UserSet, memories: Sequence[NewMemory], vectors: Vectors, now: int
) -> StoredFacts:
    """The facts of a request, answered by the user's working set."""
    by_hash: dict[tuple[str, str], Memory] = {}
    nearest: list[tuple[Memory, float] | None] = [None] * len(memories)
    for new in memories:
        digest = content_hash(new.content)
        same = user_set.same_content(new.agent_scope, digest, now)
        if same is not None:
            by_hash[(new.agent_scope, digest)] = same
    for scope in {m.agent_scope for m in memories}:
        indices = [i for i, m in enumerate(memories) if m.agent_scope == scope]
        for i, found in zip(indices, user_set.nearest(scope, vectors[indices], now), strict=True):
            nearest[i] = found
    holders: dict[tuple[str, str], Memory] = {}
    for scope, topic in topics_to_hold(memories, by_hash.values(), nearest):
        holder = user_set.topic_holder(scope, topic, now)
        if holder is not None:
            holders[(scope, topic)] = holder
    return StoredFacts(by_hash, holders, nearest)


def topics_to_hold(
    memories: Sequence[NewMemory],
    same: Iterable[Memory],
    nearest: Sequence[tuple[Memory, float] | None],
) -> set[tuple[str, str]]:
    """(scope, topic) pairs whose holders the rules may ask for.

    The request's own topics, and those of drafts that a duplicate would promote.
    """
    wanted = {(m.agent_scope, m.topic_key) for m in memories if m.topic_key}
    found = [*same, *(hit[0] for hit in nearest if hit is not None)]
    wanted.update(
        (m.agent_scope, m.topic_key) for m in found if m.status is Status.DRAFT and m.topic_key
    )
    return wanted


def holds(memory: Memory, scope: str, topic_key: str, now: int) -> bool:
    """Whether the memory is the active holder of a topic in a scope."""
    return (
        memory.status is Status.ACTIVE
        and memory.topic_key == topic_key
        and memory.agent_scope == scope
        and not memory.is_expired(now)
    )


class WritePlanner:
    """Applies the write rules for one request of one user, change by change."""

    def __init__(
        self,
        tenant_id: str,
        user_id: str,
        stored: StoredFacts,
        policy: LifecyclePolicy,
        default_importance: float = 0.5,
        model_id: str = "",
    ) -> None:
        self.batch = Batch()
        self._tenant_id = tenant_id
        self._user_id = user_id
        self._stored = stored
        self._policy = policy
        self._default_importance = default_importance
        self._model_id = model_id

    def write(self, index: int, new: NewMemory, vector: Vector, now: int) -> WriteResult:
        """Plans the request's memory number `index`."""
        decision = decide_write(new, self._facts(index, new, vector, now), self._policy)
        if decision.action in (Action.DUPLICATE, Action.PROMOTE):
            return self._absorb_duplicate(new, decision, now)
        status = {Action.DRAFT: Status.DRAFT, Action.CONFLICT: Status.CONFLICT}.get(
            decision.action, Status.ACTIVE
        )
        related = decision.existing.id if decision.existing else ""
        row = self._new_row(
            new,
            now,
            status,
            supersedes_id=related if decision.action is not Action.CREATE else "",
        )
        self.batch.add(row, vector, related, now)
        if decision.action is Action.SUPERSEDE:
            assert decision.existing is not None
            self.supersede(decision.existing, row.id, now)
        return WriteResult(row, _OUTCOMES[decision.action], related)

    def _facts(self, index: int, new: NewMemory, vector: Vector, now: int) -> WriteFacts:
        """What storage and the request so far know about the memory being written."""

        def live(memory: Memory) -> bool:
            return (
                memory.status in LIVE
                and memory.agent_scope == new.agent_scope
                and not memory.is_expired(now)
            )

        batch = self.batch
        digest = content_hash(new.content)
        pending = [(m, v) for m, v in batch.pending() if live(m)]
        same = next((m for m, _ in pending if m.content_hash == digest), None)
        if same is None:
            found = self._stored.by_hash.get((new.agent_scope, digest))
            if found is not None and live(batch.current(found)):
                same = batch.current(found)
        nearest: tuple[Memory, float] | None = None
        if same is None:
            earlier = [(m, v) for m, v in pending if v is not None]
            if earlier:  # one product for all the request's earlier memories
                similarities = np.stack([v for _, v in earlier]) @ vector
                best = int(np.argmax(similarities))
                nearest = (earlier[best][0], float(similarities[best]))
            hit = self._stored.nearest[index] if index < len(self._stored.nearest) else None
            if hit is not None:
                memory = batch.current(hit[0])
                if live(memory) and (nearest is None or hit[1] > nearest[1]):
                    nearest = (memory, hit[1])
        holder = self.topic_holder(new.agent_scope, new.topic_key, now) if new.topic_key else None
        return WriteFacts(same, nearest, holder)

    def topic_holder(
        self, scope: str, topic_key: str, now: int, exclude_id: str = ""
    ) -> Memory | None:
        """The active memory of a topic, as the request has left things so far."""
        if not topic_key:
            return None
        pending = [
            m
            for m, _ in self.batch.pending()
            if m.id != exclude_id and holds(m, scope, topic_key, now)
        ]
        if pending:
            return pending[-1]
        known = self._stored.holders.get((scope, topic_key))
        if known is None:
            return None
        current = self.batch.current(known)
        return (
            current if current.id != exclude_id and holds(current, scope, topic_key, now) else None
        )

    def supersede(self, old: Memory, successor_id: str, now: int) -> None:
        """The old memory steps down for its successor (kept for audit)."""
        old = self.batch.current(old)
        after = bump(
            old, now, status=Status.SUPERSEDED, valid_to=now, superseded_by_id=successor_id
        )
        self.batch.change(Change(old, after, Operation.SUPERSEDE, successor_id), now)

    def _absorb_duplicate(self, new: NewMemory, decision: Decision, now: int) -> WriteResult:
        """A duplicate refreshes the existing memory; a duplicate of a draft promotes it."""
        assert decision.existing is not None
        existing = self.batch.current(decision.existing)
        importance = max(existing.importance, new.importance or 0.0)
        tags = list(dict.fromkeys([*existing.tags, *new.tags]))
        refreshed = bump(existing, now, importance=importance, tags=tags, last_accessed_at=now)
        refreshed = dataclasses.replace(
            refreshed, expire_at=refreshed_expiry(refreshed, self._policy)
        )
        if decision.action is Action.DUPLICATE:
            self.batch.change(Change(existing, refreshed, Operation.REFRESH), now)
            return WriteResult(refreshed, WriteOutcome.DUPLICATE, existing.id)
        promoted, outcome, related = self.activate(refreshed, now)
        self.batch.change(Change(existing, promoted, Operation.CONFIRM, related), now)
        if outcome is WriteOutcome.CREATED:  # the write itself added nothing new
            outcome, related = WriteOutcome.DUPLICATE, existing.id
        return WriteResult(promoted, outcome, related)

    def activate(self, memory: Memory, now: int) -> tuple[Memory, WriteOutcome, str]:
        """Makes a draft active under the topic rules (supersede, or conflict with P0)."""
        holder = self.topic_holder(memory.agent_scope, memory.topic_key, now, memory.id)
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
            self.supersede(holder, memory.id, now)
            return (
                dataclasses.replace(memory, status=Status.ACTIVE, supersedes_id=holder.id),
                WriteOutcome.SUPERSEDED,
                holder.id,
            )
        return dataclasses.replace(memory, status=Status.ACTIVE), WriteOutcome.CREATED, ""

    def _new_row(self, new: NewMemory, now: int, status: Status, supersedes_id: str = "") -> Memory:
        tier = new.tier or Tier.P1
        return Memory(
            id=new_id(now),
            tenant_id=self._tenant_id,
            user_id=self._user_id,
            content=new.content,
            type=new.type,
            tier=tier,
            status=status,
            agent_scope=new.agent_scope,
            session_id=new.session_id,
            topic_key=new.topic_key,
            importance=self._default_importance if new.importance is None else new.importance,
            confidence=1.0 if new.confidence is None else new.confidence,
            source=new.source,
            tags=list(new.tags),
            metadata=dict(new.metadata),
            created_at=now,
            occurred_at=new.occurred_at or now,
            updated_at=now,
            expire_at=new.expire_at or self._policy.expiry(tier, now),
            expire_explicit=bool(new.expire_at),
            supersedes_id=supersedes_id,
            version=1,
            embedding_model=self._model_id,
            content_hash=content_hash(new.content),
        )
