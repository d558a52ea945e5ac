"""Plain domain types: memories, who asks, what selects and changes them. No protobuf, no storage.

What a recall asks and answers is in `recall_model`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

from recalld_server.domain.core.sensitive_data import Finding

JsonObject = dict[str, Any]


class MemoryType(enum.IntEnum):
    """What kind of knowledge a memory holds (values match the proto enum)."""

    FACT = 1
    PREFERENCE = 2
    EVENT = 3
    STATE = 4
    DECISION = 5
    TASK = 6
    SKILL = 7
    SUMMARY = 8


class Tier(enum.IntEnum):
    """Lifetime class: P0 core never expires, P1 long-lived, P2 short-lived."""

    P0 = 1
    P1 = 2
    P2 = 3


DAY_MS = 86_400_000
"""Milliseconds in a day: timestamps are epoch milliseconds throughout."""


class Status(enum.IntEnum):
    """Lifecycle state; only ACTIVE memories are recalled."""

    ACTIVE = 1
    SUPERSEDED = 2
    ARCHIVED = 3
    DRAFT = 4
    CONFLICT = 5


LIVE = frozenset({Status.ACTIVE, Status.DRAFT})
"""The statuses of memories a user holds: the write rules, quotas and working sets count these."""


class WriteOutcome(enum.IntEnum):
    """What a write did with one memory."""

    CREATED = 1
    DUPLICATE = 2
    SUPERSEDED = 3
    CONFLICT = 4
    DRAFT = 5


class Operation(enum.IntEnum):
    """What produced a version of a memory (values match the proto enum)."""

    WRITE = 1
    SUPERSEDE = 2
    UPDATE = 3
    CONSOLIDATE = 4
    RESOLVE = 5
    FORGET = 6
    RESTORE = 7
    CONFIRM = 8
    REFRESH = 9
    PURGE = 10
    """A tombstone: purged after the retention period, nothing of the content kept."""


class Resolution(enum.IntEnum):
    """A person's decision on a conflict."""

    KEEP_EXISTING = 1
    ACCEPT_NEW = 2
    KEEP_BOTH = 3


class ForgetMode(enum.IntEnum):
    """SOFT archives (restorable); HARD deletes from every store."""

    SOFT = 1
    HARD = 2


@dataclasses.dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: resolved from the credential, never from the request body.

    Attributes:
        tenant_id: The tenant every storage call is confined to.
        role: "admin", "writer" or "reader".
        allowed_scopes: Agent scopes this caller may read and write; "*" allows all.
        key_id: Names the credential for per-key limits (a digest prefix, never the key).
        rate_limit: Calls per second this key may make (0: no per-key limit).
    """

    tenant_id: str
    role: str = "writer"
    allowed_scopes: frozenset[str] = frozenset({"*"})
    key_id: str = ""
    rate_limit: float = 0.0

    def may_write(self) -> bool:
        """Readers may only read."""
        return self.role in ("writer", "admin")

    def may_use_scope(self, scope: str) -> bool:
        """The shared (empty) scope is always allowed; others must be granted."""
        return scope == "" or "*" in self.allowed_scopes or scope in self.allowed_scopes


@dataclasses.dataclass(slots=True)
class Memory:
    """One stored memory. Times are milliseconds since the Unix epoch; 0 means unset."""

    id: str
    tenant_id: str
    user_id: str
    content: str
    type: MemoryType
    tier: Tier = Tier.P1
    status: Status = Status.ACTIVE
    agent_scope: str = ""
    session_id: str = ""
    topic_key: str = ""
    importance: float = 0.5
    confidence: float = 1.0
    source: str = ""
    tags: list[str] = dataclasses.field(default_factory=list)
    metadata: JsonObject = dataclasses.field(default_factory=dict)
    created_at: int = 0
    occurred_at: int = 0
    updated_at: int = 0
    expire_at: int = 0
    valid_to: int = 0
    supersedes_id: str = ""
    superseded_by_id: str = ""
    version: int = 1
    embedding_model: str = ""
    content_hash: str = ""
    last_accessed_at: int = 0
    access_count: int = 0
    expire_explicit: bool = False
    """True when expire_at was given by a caller; otherwise it follows the tier."""

    @property
    def last_used_at(self) -> int:
        """The later of creation and the last recall that returned it."""
        return max(self.created_at, self.last_accessed_at)

    @property
    def etag(self) -> str:
        """Opaque concurrency token; changes whenever the memory changes."""
        return f'W/"{self.version}"'

    def is_expired(self, now_ms: int) -> bool:
        """True once expire_at has passed; 0 means never."""
        return self.expire_at != 0 and self.expire_at <= now_ms


@dataclasses.dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory as a caller asks to write it, before the server fills in the rest.

    Fields left as None take the server's defaults.
    """

    content: str
    type: MemoryType
    tier: Tier | None = None
    agent_scope: str = ""
    session_id: str = ""
    topic_key: str = ""
    importance: float | None = None
    confidence: float | None = None
    source: str = ""
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    occurred_at: int = 0
    expire_at: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class WriteResult:
    """The outcome of writing one memory; `sensitive_data` says what was masked or kept."""

    memory: Memory
    outcome: WriteOutcome
    related_id: str = ""
    sensitive_data: tuple[Finding, ...] = ()


class DropReason(enum.IntEnum):
    """Why a recall candidate was not returned (values match the proto enum).

    EXPIRED, SUPERSEDED, OTHER_SCOPE, INACTIVE and FILTERED are a filter's
    (`MemoryFilter.reason`); the rest are recall's own.
    """

    BELOW_THRESHOLD = 1
    EXPIRED = 2
    SUPERSEDED = 3
    OTHER_SCOPE = 4
    OVER_BUDGET = 5
    DUPLICATE = 6
    BEYOND_TOP_K = 7
    INACTIVE = 8
    FILTERED = 9
    JUDGED_IRRELEVANT = 10


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Storage-level filter for one tenant (and one user unless user_id is None).

    Empty sets mean "any". `user_id=None` is only for tenant-wide operations
    (admin forget, consolidation).
    """

    tenant_id: str
    user_id: str | None
    statuses: frozenset[Status] = frozenset()
    types: frozenset[MemoryType] = frozenset()
    tiers: frozenset[Tier] = frozenset()
    scopes: frozenset[str] | None = None
    tags: frozenset[str] = frozenset()
    session_id: str = ""
    topic_keys: frozenset[str] = frozenset()
    """Any of these topic keys."""
    content_hashes: frozenset[str] = frozenset()
    """Any of these content hashes (normalised content)."""
    occurred_after: int = 0
    occurred_before: int = 0
    created_after: int = 0
    created_before: int = 0
    unexpired_at: int = 0
    """If non-zero, only memories not expired at this time (ms)."""
    expired_at: int = 0
    """If non-zero, only memories that have an expiry at or before this time (ms)."""
    tier_unused_before: int = 0
    """If non-zero, only memories neither created nor recalled since this time (ms)."""
    after_id: str = ""
    """If set, only ids greater than this (for scans in id order)."""

    def matches(self, m: Memory) -> bool:
        """Whether a memory passes the filter: the in-process meaning of every field.

        The Milvus adapter's `build_filter` says the same in Milvus's expression
        language; a congruence test holds the two together.
        """
        return self.reason(m) is None

    def reason(self, m: Memory) -> DropReason | None:
        """Why a memory fails the filter (None: it passes), in the words recall's explain uses.

        `matches` is this being None, so what a search returns and the reason
        explain gives for what it left out cannot disagree. The first failing test
        names the reason: a status not asked for (SUPERSEDED, else INACTIVE),
        expiry (EXPIRED), an agent scope not asked for (OTHER_SCOPE), then any
        other field (FILTERED).
        """
        if m.tenant_id != self.tenant_id or (
            self.user_id is not None and m.user_id != self.user_id
        ):
            return DropReason.FILTERED
        if self.statuses and m.status not in self.statuses:
            return DropReason.SUPERSEDED if m.status is Status.SUPERSEDED else DropReason.INACTIVE
        if self.unexpired_at and m.expire_at != 0 and m.expire_at <= self.unexpired_at:
            return DropReason.EXPIRED
        if self.scopes is not None and m.agent_scope not in self.scopes:
            return DropReason.OTHER_SCOPE
        if (
            (not self.types or m.type in self.types)
            and (not self.tiers or m.tier in self.tiers)
            and self.tags <= set(m.tags)
            and (not self.session_id or m.session_id == self.session_id)
            and (not self.topic_keys or m.topic_key in self.topic_keys)
            and (not self.content_hashes or m.content_hash in self.content_hashes)
            and (not self.occurred_after or m.occurred_at >= self.occurred_after)
            and (not self.occurred_before or m.occurred_at < self.occurred_before)
            and (not self.created_after or m.created_at >= self.created_after)
            and (not self.created_before or m.created_at < self.created_before)
            and (not self.expired_at or 0 < m.expire_at <= self.expired_at)
            and (
                not self.tier_unused_before
                or (
                    m.created_at < self.tier_unused_before
                    and m.last_accessed_at < self.tier_unused_before
                )
            )
            and (not self.after_id or m.id > self.after_id)
        ):
            return None
        return DropReason.FILTERED


PURGEABLE = frozenset({Status.SUPERSEDED, Status.ARCHIVED})
"""Statuses whose memories the retention purge deletes once they are old enough."""


@dataclasses.dataclass(frozen=True, slots=True)
class Upkeep:
    """Which memories the periodic upkeep (consolidation) has work for.

    A memory is due when it is live (active or draft) and its expiry has passed by
    `now`; or active, P1, unexpired and neither created nor recalled since
    `unused_before` (to demote); or active and changed at or after `changed_since`
    (near-duplicates to merge; 0 is every active memory, None none); or superseded
    or archived and last changed before `purge_before` (to purge; 0: never).
    Storage answers with the users that hold due memories, so the job visits them
    and nobody else.
    """

    now: int
    unused_before: int = 0
    """0: nothing is demoted."""
    changed_since: int | None = None
    tenant_id: str | None = None
    """One tenant, or every tenant."""
    scopes: frozenset[str] | None = None
    """Only these agent scopes (None: every scope)."""
    purge_before: int = 0
    """Superseded and archived memories last changed before this are due (0: none)."""

    def matches(self, m: Memory) -> bool:
        """Whether a memory is due: the in-process meaning, which storage must match."""
        if self.tenant_id is not None and m.tenant_id != self.tenant_id:
            return False
        if self.scopes is not None and m.agent_scope not in self.scopes:
            return False
        if m.status in PURGEABLE:
            return m.updated_at < self.purge_before
        expired = 0 < m.expire_at <= self.now
        if m.status is Status.DRAFT:
            return expired
        if m.status is not Status.ACTIVE:
            return False
        return (
            expired
            or (
                m.tier is Tier.P1
                and m.created_at < self.unused_before
                and m.last_accessed_at < self.unused_before
            )
            or (self.changed_since is not None and m.updated_at >= self.changed_since)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One page of a listing."""

    memories: list[Memory]
    next_page_token: str


UPDATABLE_FIELDS = frozenset(
    {
        "content",
        "type",
        "tier",
        "topic_key",
        "importance",
        "confidence",
        "source",
        "tags",
        "metadata",
        "expire_at",
        "occurred_at",
        "agent_scope",
        "session_id",
    }
)
"""Field mask paths Update accepts; everything else is output only."""


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryPatch:
    """New values for the fields named in `paths` (an AIP-134 field mask)."""

    paths: frozenset[str]
    content: str = ""
    type: MemoryType | None = None
    tier: Tier | None = None
    topic_key: str = ""
    importance: float = 0.0
    confidence: float = 0.0
    source: str = ""
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    expire_at: int = 0
    occurred_at: int = 0
    agent_scope: str = ""
    session_id: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Selector:
    """Forget-by-fields: every set condition must hold."""

    types: frozenset[MemoryType] = frozenset()
    tags: frozenset[str] = frozenset()
    session_id: str = ""
    occurred_after: int = 0
    occurred_before: int = 0

    def is_empty(self) -> bool:
        """No condition set (which would select everything: refused)."""
        return not (
            self.types
            or self.tags
            or self.session_id
            or self.occurred_after
            or self.occurred_before
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ForgetTarget:
    """Exactly one way of choosing the memories to forget."""

    ids: Sequence[str] = ()
    topic_key: str = ""
    selector: Selector | None = None
    all_of_user: bool = False
    whole_tenant: bool = False
    session_id: str = ""
    """Every memory from this session, and the session itself with its messages."""


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One version of a memory: its state after a change."""

    memory: Memory
    operation: Operation
    changed_fields: tuple[str, ...]
    changed_at: int
    related_id: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Conflict:
    """A parked write and the core memory it contradicts (None if gone)."""

    proposed: Memory
    existing: Memory | None


@dataclasses.dataclass(slots=True)
class ConsolidationReport:
    """What one consolidation run did (or would do); filled in as the run goes."""

    expired_ids: list[str] = dataclasses.field(default_factory=list)
    demoted_ids: list[str] = dataclasses.field(default_factory=list)
    merged: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)
    """(kept_id, merged_id, similarity)"""
    contradictions: list[tuple[str, str, float, str]] = dataclasses.field(default_factory=list)
    """(core_id, other_id, similarity, reason)"""
    access_stats_flushed: int = 0
    users_scanned: int = 0
    memories_scanned: int = 0
    purged_ids: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, slots=True)
class StoredWrite:
    """What an idempotent Write answered, kept under its request_id."""

    tenant_id: str
    user_id: str
    request_id: str
    fingerprint: str
    results: list[tuple[str, WriteOutcome, str]]
    """(memory_id, outcome, related_id) per request memory"""
    created_at: int
