"""Ports: the small interfaces the domain needs from the outside world.

Adapters (Milvus, Redis, the embedding model) implement them and are passed in
by the composition root (`recalld_server.wiring.server`). The domain never imports an
adapter.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recalld_server.domain.core.conversation import (
    MemoryCandidate,
    Message,
)
from recalld_server.domain.core.conversation_ports import Conversations, ExtractionQueue
from recalld_server.domain.core.model import (
    HistoryEntry,
    Memory,
    MemoryFilter,
    NewMemory,
    Principal,
    StoredWrite,
    Upkeep,
    WriteResult,
)

Vector = npt.NDArray[np.float32]
"""One embedding, shape (dim,)."""

Vectors = npt.NDArray[np.float32]

Write = Callable[[Principal, str, Sequence[NewMemory], str], Awaitable[list[WriteResult]]]
"""The Write use case as the session use cases call it: (caller, user, memories, request id)."""
"""A batch of embeddings, shape (n, dim)."""


class Embedder(Protocol):
    """Turns text into normalised vectors of a fixed dimension."""

    @property
    def model_id(self) -> str:
        """Identifier stored with every memory so vector spaces are never mixed."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embeds memories' contents (what is stored); row i belongs to texts[i].

        Raises:
            BackendUnavailableError: The model cannot answer now (retry later).
            TextRefusedError: The model's service refused one of the texts.
        """
        ...

    async def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embeds recall queries (row i belongs to texts[i]).

        Models trained with query and passage framings (e5, bge, nomic) embed the
        two differently; symmetric models embed alike.
        """
        ...


class Analyzer(Protocol):
    """Turns text into BM25 terms, the same way storage analyses content."""

    def terms(self, text: str) -> list[str]:
        """The text's terms in order, repeats kept."""
        ...


class Generations(Protocol):
    """A counter per user that every change bumps, shared by replicas that share storage.

    A change moves it to an odd number before storage is written (`begin`) and to the
    next even number after (`end`). A reader trusts in-process state only while the
    counter is even and unchanged since that state was read from storage; an odd
    counter (a change in flight, or one whose end was lost) means read storage.
    Implementations raise BackendUnavailableError when they cannot answer.
    """

    async def current(self, tenant_id: str, user_id: str) -> int:
        """The user's counter now."""
        ...

    async def begin(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Marks changes to these users in flight; returns each one's (odd) counter."""
        ...

    async def end(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Marks the changes done; returns each one's (even) counter."""
        ...


class MemoryRows(Protocol):
    """The system of record: memory rows with their vectors, written by group commits.

    Every read and delete is confined to the tenant it names and must never touch
    rows of another tenant. Reads observe every write that completed before they
    started (read-your-writes).
    """

    async def insert(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Stores new memories with their vectors.

        Rows may belong to several tenants (group commits merge requests); each
        row carries its own tenant.
        """
        ...

    async def replace(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Writes whole rows by id, new or stored (an upsert), in one call.

        Rows may belong to several tenants (each row carries its own). One call, so
        that new memories and the ones they supersede change together.
        """
        ...

    async def get_vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Returns stored vectors by id for the tenant's memories."""
        ...

    async def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Deletes the tenant's memories with these ids, vectors included."""
        ...

    async def load_user(
        self, tenant_id: str, user_id: str, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """One user's live (active and draft) memories with their vectors, at most `limit`.

        One read: what a user's working set is built from.
        """
        ...


class SearchIndex(Protocol):
    """Vector and keyword search among the memories a filter selects (one tenant)."""

    async def search(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Nearest memories by cosine similarity among those matching the filter."""
        ...

    async def search_many(
        self, memory_filter: MemoryFilter, vectors: Vectors, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """`search` for several query vectors in one round trip, one result list each."""
        ...

    async def keyword_search(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """Best BM25 matches for the text (Chinese and English) among the filter's memories."""
        ...


class VectorStore(MemoryRows, SearchIndex, Protocol):
    """Everything a storage adapter offers.

    Rows and search, plus the scans that lists, forgets and consolidation need.
    """

    async def get(self, tenant_id: str, ids: Sequence[str]) -> list[Memory]:
        """Returns the tenant's memories with these ids; unknown ids are skipped."""
        ...

    async def find(self, memory_filter: MemoryFilter, limit: int) -> list[Memory]:
        """Memories matching the filter in ascending id order (scan with `after_id`)."""
        ...

    async def find_with_vectors(
        self, memory_filter: MemoryFilter, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """Like find, with each memory's stored vector."""
        ...

    async def count(self, memory_filter: MemoryFilter) -> int:
        """How many memories match the filter (quotas)."""
        ...

    async def list_ids(self, memory_filter: MemoryFilter, before_id: str, limit: int) -> list[str]:
        """Ids matching the filter (and below `before_id` if given), newest first."""
        ...

    async def users_with_upkeep(self, upkeep: Upkeep) -> dict[str, set[str]]:
        """The users (by tenant) holding memories the upkeep has work for.

        Storage selects the due memories itself; only their tenant and user come back.
        """
        ...

    async def tenants(self) -> list[str]:
        """Every tenant with at least one stored memory (for background jobs)."""
        ...

    async def close(self) -> None:
        """Releases connections."""
        ...


class HistoryStore(Protocol):
    """Every version of every memory, for audit (History RPC)."""

    async def append(self, entries: Sequence[HistoryEntry]) -> None:
        """Records versions of memories, of any tenants (each memory names its own)."""
        ...

    async def versions(self, tenant_id: str, memory_id: str) -> list[HistoryEntry]:
        """A memory's versions, oldest first."""
        ...

    async def delete_memories(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Forgets the history of these memories."""
        ...

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets the history of a user (or of the whole tenant when None)."""
        ...


class IdempotencyStore(Protocol):
    """Answers of Writes that carried a request_id, so retries are answered the same."""

    async def get(self, tenant_id: str, user_id: str, request_id: str) -> StoredWrite | None:
        """The stored answer to this user's request id, if any.

        Request ids are per (tenant, user): another user's id is another record,
        so reusing one tells nothing about other users.
        """
        ...

    async def put(self, record: StoredWrite) -> None:
        """Stores an answer (overwriting one with the same tenant, user and request id)."""
        ...

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets a user's records (or the whole tenant's when None)."""
        ...

    async def delete_older_than(self, cutoff_ms: int) -> int:
        """Drops records created before the cutoff; returns how many."""
        ...


class AccessTracker(Protocol):
    """Counts recalls per memory outside storage, to be flushed to storage in batches."""

    async def record(self, tenant_id: str, memory_ids: Sequence[str], at_ms: int) -> None:
        """Notes that Recall returned these memories.

        Never raises: statistics are best effort and must not fail a recall.
        """
        ...

    async def drain(self, tenant_id: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """Takes the pending stats: (tenant, id) -> (count, last access ms)."""
        ...

    async def restore(self, stats: dict[tuple[str, str], tuple[int, int]]) -> None:
        """Gives back drained stats that could not be written, for the next flush."""
        ...


class ProfileCache(Protocol):
    """Cached profiles, keyed by tenant, user and the set of scopes they were built for.

    Implementations must never return an entry stored for another tenant or user,
    and may raise BackendUnavailableError (the caller falls back to storage).
    """

    async def get(
        self, tenant_id: str, user_id: str, variant: str
    ) -> tuple[list[Memory] | None, int]:
        """The cached profile memories (None on a miss) and the user's generation."""
        ...

    async def put(
        self,
        tenant_id: str,
        user_id: str,
        variant: str,
        memories: Sequence[Memory],
        generation: int,
    ) -> None:
        """Caches a profile built while the user's generation was `generation`."""
        ...

    async def invalidate(self, tenant_id: str, user_id: str) -> None:
        """Drops every cached variant of a user's profile."""
        ...


class LockManager(Protocol):
    """Mutual exclusion on a key, shared by every replica that shares the backend."""

    def hold(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Holds the lock for `key` for the duration of the `async with` block."""
        ...


class Summarizer(Protocol):
    """Folds messages into a running summary."""

    @property
    def name(self) -> str:
        """Which summarizer (for spans and logs)."""
        ...

    async def fold(self, summary: str, messages: Sequence[Message], budget_tokens: int) -> str:
        """The summary of `summary` followed by `messages`, within about `budget_tokens`.

        Raises BackendUnavailableError when a remote model cannot answer.
        """
        ...


class FactJudge(Protocol):
    """Decides what the wording rules cannot: one fact twice, or a fact against a core one.

    A verdict of None means no verdict (the model could not answer, or not
    clearly); the offline rules then stand.
    """

    async def same_fact(self, a: str, b: str) -> bool | None:
        """Whether two memories state the same fact (in any wording or language)."""
        ...

    async def contradicts(self, core: str, other: str) -> bool | None:
        """Whether `other` cannot be true if the core memory is."""
        ...


class RelevanceJudge(Protocol):
    """Reads a question and a user's candidate memories: which answer it, best first.

    The offline gate cannot tell a related memory from an answer with the bundled
    model; a judge that reads both can. None means no verdict (the model could not
    answer, or not clearly); the offline ranking then stands.
    """

    async def rank(self, question: str, memories: Sequence[str]) -> list[int] | None:
        """Indices into `memories` of those that help answer, most useful first.

        [] when none does: the recall then returns no memories.
        """
        ...


class Extractor(Protocol):
    """Proposes memories from what a user said."""

    @property
    def name(self) -> str:
        """Which extractor (for spans and logs)."""
        ...

    async def extract(self, messages: Sequence[Message]) -> list[MemoryCandidate]:
        """Candidate memories, in message order; [] when nothing is worth keeping.

        Raises BackendUnavailableError when a remote model cannot answer.
        """
        ...


class Clock(Protocol):
    """Wall-clock time in milliseconds since the Unix epoch (injected for tests)."""

    def now_ms(self) -> int:
        """Current time."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class Backends:
    """Every adapter the domain services need, assembled by the composition root."""

    store: VectorStore
    embedder: Embedder
    locks: LockManager
    clock: Clock
    history: HistoryStore
    requests: IdempotencyStore
    access: AccessTracker
    profile_cache: ProfileCache
    generations: Generations
    analyzer: Analyzer
    conversations: Conversations
    extractions: ExtractionQueue
