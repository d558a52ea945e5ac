"""A second backend of the storage ports, in process memory.

`InMemoryVectorStore`, `InMemoryHistoryStore` and `InMemoryIdempotencyStore`
implement the `VectorStore`, `HistoryStore` and `IdempotencyStore` ports with
plain dictionaries, for tests and development. Nothing is durable: a process
exit forgets everything.

The Milvus adapters are the production backend. The congruence tests
(`tests/integration/storage/test_store_congruence.py`, modelled on qdrant-client's
congruence tests against its local mode) run the same assertions on both
backends, which keeps this one an honest stand-in: filters mean exactly
`MemoryFilter.matches` (the in-process meaning that Milvus's `build_filter`
must agree with), search is exact cosine similarity, keyword search is BM25 over
the same analyzer Milvus is configured with. The memory scripts can run on it too.

Every method confines itself to the tenant it is given, stores copies of what it
is handed and returns copies of what it holds, so no caller can change stored
state except through the port. No method awaits in the middle of a change, so
concurrent asyncio tasks always see whole writes.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from recalld_server.domain.core.model import (
    LIVE,
    HistoryEntry,
    Memory,
    MemoryFilter,
    StoredWrite,
    Upkeep,
)
from recalld_server.domain.core.ports import Vector, Vectors
from recalld_server.domain.ranking.bm25 import Bm25Index
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer

QUERY_LIMIT = 16_384
"""Most rows one `find` returns, as Milvus caps one query (milvus_store.QUERY_LIMIT)."""


def _copy_memory(memory: Memory) -> Memory:
    """A copy sharing no mutable state (tags, metadata) with the original."""
    return dataclasses.replace(
        memory, tags=list(memory.tags), metadata=copy.deepcopy(memory.metadata)
    )


@dataclasses.dataclass(slots=True)
class _Row:
    memory: Memory
    vector: Vector


class InMemoryVectorStore:
    """The VectorStore port in process memory (exact search; not durable).

    Rows live in one dictionary per tenant, keyed by memory id, so a call can
    only ever reach the tenant it names.

    Args:
        dimension: Length of every stored and query vector.
    """

    def __init__(self, dimension: int) -> None:
        if dimension <= 0:
            raise ValueError("dimension must be positive")
        self._dimension = dimension
        self._rows: dict[str, dict[str, _Row]] = {}
        self._analyzer = JiebaAnalyzer()
        self._analyzer_warm = False
        self._warm_lock = asyncio.Lock()
        self._terms: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
        """tenant -> id -> (content analysed, its BM25 terms)."""

    @property
    def dimension(self) -> int:
        """Length of every vector the store holds."""
        return self._dimension

    def _checked_vectors(self, memories: Sequence[Memory], vectors: Vectors) -> Vectors:
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim != 2 or array.shape != (len(memories), self._dimension):
            raise ValueError(
                f"expected vectors of shape ({len(memories)}, {self._dimension}), got {array.shape}"
            )
        return array

    def _put(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        # Copies first, then one synchronous pass: the write lands whole.
        rows = [
            _Row(_copy_memory(m), np.array(v, dtype=np.float32, copy=True))
            for m, v in zip(memories, vectors, strict=True)
        ]
        for row in rows:
            tenant = row.memory.tenant_id
            self._rows.setdefault(tenant, {})[row.memory.id] = row
            self._terms.get(tenant, {}).pop(row.memory.id, None)

    async def insert(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Stores new memories with their vectors, each under its own tenant.

        One call may mix tenants (group commits merge requests).

        Args:
            memories: The memories; an id already stored in its tenant is overwritten.
            vectors: One row per memory, shape (len(memories), dimension).

        Raises:
            ValueError: If the vectors have the wrong shape.
        """
        if not memories:
            return
        self._put(memories, self._checked_vectors(memories, vectors))

    async def replace(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Overwrites memories by id under their tenant (an upsert, like Milvus's).

        Args:
            memories: The new states; each replaces the row with its id in its tenant.
            vectors: One row per memory, shape (len(memories), dimension).

        Raises:
            ValueError: If the vectors have the wrong shape.
        """
        if not memories:
            return
        self._put(memories, self._checked_vectors(memories, vectors))

    def _found(self, tenant_id: str, ids: Sequence[str]) -> list[_Row]:
        rows = self._rows.get(tenant_id, {})
        return [rows[i] for i in dict.fromkeys(ids) if i in rows]

    async def get(self, tenant_id: str, ids: Sequence[str]) -> list[Memory]:
        """The tenant's memories with these ids, in the order asked; unknown ids skipped."""
        return [_copy_memory(r.memory) for r in self._found(tenant_id, ids)]

    async def get_vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Copies of the stored vectors of the tenant's memories, by id."""
        return {r.memory.id: r.vector.copy() for r in self._found(tenant_id, ids)}

    def _matching(self, memory_filter: MemoryFilter) -> list[_Row]:
        """The filter's rows (of its tenant only) in ascending id order."""
        rows = self._rows.get(memory_filter.tenant_id, {})
        return [rows[i] for i in sorted(rows) if memory_filter.matches(rows[i].memory)]

    async def search(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Exact cosine nearest neighbours among the filter's memories, best first.

        Args:
            memory_filter: Which memories may be returned.
            vector: The query, of the store's dimension (need not be normalised).
            limit: Most results.

        Returns:
            (memory, cosine similarity) pairs; ties go to the lower id.
        """
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        return (await self.search_many(memory_filter, query, limit))[0]

    async def search_many(
        self, memory_filter: MemoryFilter, vectors: Vectors, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """`search` for several query vectors, one result list per vector.

        Raises:
            ValueError: If the query vectors are not of the store's dimension.
        """
        queries = np.asarray(vectors, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self._dimension:
            raise ValueError(f"expected query vectors of dimension {self._dimension}")
        candidates = self._matching(memory_filter)
        if not candidates or limit <= 0:
            return [[] for _ in range(len(queries))]
        stored = np.stack([r.vector for r in candidates])
        scores = _unit_rows(queries) @ _unit_rows(stored).T
        out: list[list[tuple[Memory, float]]] = []
        for row_scores in scores:
            # Candidates are in id order and the sort is stable: ties go to the lower id.
            order = np.argsort(-row_scores, kind="stable")[:limit]
            out.append([(_copy_memory(candidates[i].memory), float(row_scores[i])) for i in order])
        return out

    async def _warm_analyzer(self) -> None:
        if self._analyzer_warm:
            return
        async with self._warm_lock:
            if not self._analyzer_warm:
                await asyncio.to_thread(self._analyzer.warm)  # loads jieba's dictionary
                self._analyzer_warm = True

    def _memory_terms(self, memory: Memory) -> tuple[str, ...]:
        cache = self._terms.setdefault(memory.tenant_id, {})
        cached = cache.get(memory.id)
        if cached is not None and cached[0] == memory.content:
            return cached[1]
        terms = tuple(self._analyzer.terms(memory.content))
        cache[memory.id] = (memory.content, terms)
        return terms

    async def keyword_search(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 matches of the text among the filter's memories, best first.

        Terms come from the same jieba analyzer Milvus is configured with; the
        corpus statistics are those of the filter's memories. Terms are cached
        per memory, so a search analyses only memories new since the last one.

        Returns:
            (memory, BM25 score) pairs with a positive score, at most `limit`.
        """
        await self._warm_analyzer()
        # Nothing below awaits: the search sees one state of the store.
        query = self._analyzer.terms(text)
        if not query or limit <= 0:
            return []
        candidates = {r.memory.id: r for r in self._matching(memory_filter)}
        index = Bm25Index()
        for memory_id, row in candidates.items():
            index.add(memory_id, self._memory_terms(row.memory))
        ranked = sorted(
            ((score, memory_id) for memory_id, score in index.scores(query).items() if score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )[:limit]
        return [(_copy_memory(candidates[i].memory), score) for score, i in ranked]

    async def find(self, memory_filter: MemoryFilter, limit: int) -> list[Memory]:
        """The filter's memories in ascending id order, at most `limit` (capped at 16384)."""
        rows = self._matching(memory_filter)[: max(0, min(limit, QUERY_LIMIT))]
        return [_copy_memory(r.memory) for r in rows]

    async def load_user(
        self, tenant_id: str, user_id: str, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """One user's active and draft memories with their vectors (one query)."""
        return await self.find_with_vectors(MemoryFilter(tenant_id, user_id, statuses=LIVE), limit)

    async def find_with_vectors(
        self, memory_filter: MemoryFilter, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """Like find, with a copy of each memory's stored vector."""
        rows = self._matching(memory_filter)[: max(0, min(limit, QUERY_LIMIT))]
        return [(_copy_memory(r.memory), r.vector.copy()) for r in rows]

    async def count(self, memory_filter: MemoryFilter) -> int:
        """How many of the tenant's memories match the filter."""
        return len(self._matching(memory_filter))

    async def list_ids(self, memory_filter: MemoryFilter, before_id: str, limit: int) -> list[str]:
        """The filter's ids below `before_id` (if given), newest (highest) first."""
        ids = [
            r.memory.id
            for r in self._matching(memory_filter)
            if not before_id or r.memory.id < before_id
        ]
        return ids[::-1][: max(0, limit)]

    async def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Deletes the tenant's memories with these ids; other tenants' rows are untouched."""
        rows = self._rows.get(tenant_id)
        if rows is None:
            return
        terms = self._terms.get(tenant_id, {})
        for memory_id in ids:
            rows.pop(memory_id, None)
            terms.pop(memory_id, None)
        if not rows:
            del self._rows[tenant_id]
            self._terms.pop(tenant_id, None)

    async def users_with_upkeep(self, upkeep: Upkeep) -> dict[str, set[str]]:
        """The users (by tenant) holding memories the upkeep has work for."""
        tenants = (
            self._rows
            if upkeep.tenant_id is None
            else {upkeep.tenant_id: self._rows.get(upkeep.tenant_id, {})}
        )
        found: dict[str, set[str]] = {}
        for tenant, rows in tenants.items():
            for row in rows.values():
                if upkeep.matches(row.memory):
                    found.setdefault(tenant, set()).add(row.memory.user_id)
        return found

    async def tenants(self) -> list[str]:
        """Every tenant with at least one stored memory, sorted."""
        return sorted(t for t, rows in self._rows.items() if rows)

    async def close(self) -> None:
        """Nothing to release; the data stays readable until the object is dropped."""


def _unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Rows scaled to unit length (zero rows stay zero, so their cosine is 0)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def _copy_entry(entry: HistoryEntry) -> HistoryEntry:
    return dataclasses.replace(entry, memory=_copy_memory(entry.memory))


class InMemoryHistoryStore:
    """The HistoryStore port in process memory (not durable).

    Versions are keyed per tenant by (memory id, version): appending a version
    again overwrites it, as the Milvus store's upsert does.
    """

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, dict[int, HistoryEntry]]] = {}
        """tenant -> memory id -> version -> entry."""

    async def append(self, entries: Sequence[HistoryEntry]) -> None:
        """Records versions of memories, each under its memory's tenant."""
        for entry in map(_copy_entry, entries):
            memories = self._entries.setdefault(entry.memory.tenant_id, {})
            memories.setdefault(entry.memory.id, {})[entry.memory.version] = entry

    async def versions(self, tenant_id: str, memory_id: str) -> list[HistoryEntry]:
        """The memory's versions in this tenant, oldest first."""
        versions = self._entries.get(tenant_id, {}).get(memory_id, {})
        return [_copy_entry(versions[v]) for v in sorted(versions)]

    async def delete_memories(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Forgets the history of these memories of the tenant."""
        memories = self._entries.get(tenant_id)
        if memories is None:
            return
        for memory_id in memory_ids:
            memories.pop(memory_id, None)
        if not memories:
            del self._entries[tenant_id]

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets a user's history in the tenant (the whole tenant's when None)."""
        if user_id is None:
            self._entries.pop(tenant_id, None)
            return
        memories = self._entries.get(tenant_id)
        if memories is None:
            return
        for memory_id in list(memories):
            versions = memories[memory_id]
            for version in [v for v, e in versions.items() if e.memory.user_id == user_id]:
                del versions[version]
            if not versions:
                del memories[memory_id]
        if not memories:
            del self._entries[tenant_id]


def _copy_write(record: StoredWrite) -> StoredWrite:
    return dataclasses.replace(record, results=list(record.results))


class InMemoryIdempotencyStore:
    """The IdempotencyStore port in process memory (not durable).

    Records are keyed by (tenant, user, request id): the same request id for two
    users or in two tenants names two records.
    """

    def __init__(self) -> None:
        self._records: dict[str, dict[tuple[str, str], StoredWrite]] = {}
        """tenant -> (user id, request id) -> record."""

    async def get(self, tenant_id: str, user_id: str, request_id: str) -> StoredWrite | None:
        """The stored answer to this user's request id, if any."""
        record = self._records.get(tenant_id, {}).get((user_id, request_id))
        return None if record is None else _copy_write(record)

    async def put(self, record: StoredWrite) -> None:
        """Stores an answer (overwriting one with the same tenant, user and request id)."""
        key = (record.user_id, record.request_id)
        self._records.setdefault(record.tenant_id, {})[key] = _copy_write(record)

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets a user's records in the tenant (the whole tenant's when None)."""
        if user_id is None:
            self._records.pop(tenant_id, None)
            return
        self._drop(
            tenant_id,
            (k for k, r in self._records.get(tenant_id, {}).items() if r.user_id == user_id),
        )

    async def delete_older_than(self, cutoff_ms: int) -> int:
        """Drops every tenant's records created before the cutoff.

        Returns:
            How many records were dropped.
        """
        dropped = 0
        for tenant_id in list(self._records):
            old = [k for k, r in self._records[tenant_id].items() if r.created_at < cutoff_ms]
            dropped += len(old)
            self._drop(tenant_id, old)
        return dropped

    def _drop(self, tenant_id: str, keys: Iterable[tuple[str, str]]) -> None:
        records = self._records.get(tenant_id)
        if records is None:
            return
        for key in list(keys):
            records.pop(key, None)
        if not records:
            del self._records[tenant_id]
