"""Plain domain types: memories, queries, results. No protobuf, no storage."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

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


class Status(enum.IntEnum):
    """Lifecycle state; only ACTIVE memories are recalled."""

    ACTIVE = 1
    SUPERSEDED = 2
    ARCHIVED = 3
    DRAFT = 4
    CONFLICT = 5


class WriteOutcome(enum.IntEnum):
    """What a write did with one memory."""

    CREATED = 1
    DUPLICATE = 2
    SUPERSEDED = 3
    CONFLICT = 4
    DRAFT = 5


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
    """

    tenant_id: str
    role: str = "writer"
    allowed_scopes: frozenset[str] = frozenset({"*"})

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
    """The outcome of writing one memory."""

    memory: Memory
    outcome: WriteOutcome
    related_id: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class RecallQuery:
    """A validated recall request for one user."""

    user_id: str
    query: str = ""
    query_vector: Sequence[float] | None = None
    top_k: int = 10
    token_budget: int = 0
    types: frozenset[MemoryType] = frozenset()
    tiers: frozenset[Tier] = frozenset()
    tags: frozenset[str] = frozenset()
    session_id: str = ""
    agent_scope: str = ""
    extra_agent_scopes: frozenset[str] = frozenset()
    occurred_after: int = 0
    occurred_before: int = 0
    min_score: float | None = None

    @property
    def scopes(self) -> frozenset[str]:
        """Agent scopes whose memories may be recalled: shared, own, and extra ones."""
        return frozenset({"", self.agent_scope}) | self.extra_agent_scopes


@dataclasses.dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A recalled memory with its scores."""

    memory: Memory
    score: float
    dense_score: float


@dataclasses.dataclass(frozen=True, slots=True)
class RecallResult:
    """What Recall returns: ranked items, their token estimate, degraded stages."""

    items: list[ScoredMemory]
    token_estimate: int
    degraded_stages: list[str]


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Storage-level filter for one tenant and user. Empty sets mean "any"."""

    tenant_id: str
    user_id: str
    statuses: frozenset[Status] = frozenset()
    types: frozenset[MemoryType] = frozenset()
    tiers: frozenset[Tier] = frozenset()
    scopes: frozenset[str] | None = None
    tags: frozenset[str] = frozenset()
    session_id: str = ""
    topic_key: str = ""
    content_hash: str = ""
    occurred_after: int = 0
    occurred_before: int = 0
    unexpired_at: int = 0
    """If non-zero, only memories not expired at this time (ms)."""


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
