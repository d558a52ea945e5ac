"""One user's live memories in process: fields, vectors and BM25 terms.

A `UserSet` answers everything a recall or a write rule asks about one user
without a storage call: dense search is a matrix-vector product over the
user's vectors, keyword search is BM25 over the user's terms, and the write
rules look up hashes, topic holders and nearest neighbours here. It holds the
user's ACTIVE and DRAFT memories (expired ones included: every reader checks
expiry at its own time), the only statuses recall and the write rules read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import numpy as np

from recalld_server.domain.core.model import LIVE, Memory, MemoryFilter, MemoryType, Status
from recalld_server.domain.core.ports import Analyzer, Vector, Vectors
from recalld_server.domain.core.text import salient_tokens
from recalld_server.domain.ranking.bm25 import Bm25Index
from recalld_server.domain.ranking.fusion import (
    KeywordEvidence,
    QueryTerms,
    keyword_evidence,
    query_terms,
)

K = TypeVar("K")
VECTOR_ITEM_BYTES = 4
MEMORY_OVERHEAD_BYTES = 1_400
INDEX_BYTES_PER_CHAR = 20


def memory_bytes(memory: Memory, dimension: int) -> int:
    """Estimated bytes one memory takes in a user's set.

    The vector (a row of the user's matrix, which grows by doubling), the Memory
    object and its index entries, and BM25 postings growing with the text.
    Measured with tracemalloc on the benchmark dataset (61 characters on average,
    512-d model) in docs/working-set.md.
    """
    return (
        MEMORY_OVERHEAD_BYTES
        + INDEX_BYTES_PER_CHAR * len(memory.content)
        + dimension * VECTOR_ITEM_BYTES * 3 // 2
    )


class UserSet:
    """The live memories of one (tenant, user), indexed for search and the write rules."""

    def __init__(self, tenant_id: str, user_id: str, dimension: int, analyzer: Analyzer) -> None:
        self.tenant_id = tenant_id
        self.user_id = user_id
        self._dimension = dimension
        self._analyzer = analyzer
        self._memories: dict[str, Memory] = {}
        # Vectors live in one matrix, a row per memory (appended in place, the last
        # row moved into a removed one's place), so search never restacks them.
        self._row: dict[str, int] = {}
        self._ids: list[str] = []
        self._matrix = np.zeros((8, dimension), dtype=np.float32)
        # Computed on first use, not on every write: BM25 terms (the first keyword
        # search indexes what is pending) and salient tokens (result de-duplication).
        self._salient: dict[str, tuple[str, ...]] = {}
        self._bm25 = Bm25Index()
        self._unindexed: set[str] = set()
        # Write-rule indexes: live ids by scope, by (scope, hash), by (scope, topic).
        # Hash and topic groups hold one id or a few: tuples of strings, which the
        # garbage collector stops tracking, where a set per memory would be scanned
        # by every full collection (see `gc.freeze` in the cli).
        self._by_scope: dict[str, set[str]] = {}
        self._by_hash: dict[tuple[str, str], tuple[str, ...]] = {}
        self._by_topic: dict[tuple[str, str], tuple[str, ...]] = {}
        self.bytes = 0
        self.generation = 0
        """The user's change counter when this state was read (see `Generations`)."""

    def __len__(self) -> int:
        return len(self._memories)

    # -- keeping it current -----------------------------------------------------

    def put(self, memory: Memory, vector: Vector | None) -> bool:
        """Adds or replaces a memory as it now stands; non-live memories leave the set.

        Returns False when a live memory comes without a vector and the set has none
        for it (the caller must then reload the user).
        """
        if memory.status not in LIVE:
            self.remove(memory.id)
            return True
        if vector is None and memory.id not in self._row:
            return False
        previous = self._memories.get(memory.id)
        if previous is not None:
            self._unindex(previous)
            self.bytes -= memory_bytes(previous, self._dimension)
            if previous.content != memory.content:
                self._salient.pop(memory.id, None)
                self._unindexed.add(memory.id)
        else:
            self._unindexed.add(memory.id)
        self._memories[memory.id] = memory
        self._index(memory)
        self.bytes += memory_bytes(memory, self._dimension)
        if vector is not None:
            self._set_row(memory.id, vector)
        return True

    def _set_row(self, memory_id: str, vector: Vector) -> None:
        norm = float(np.linalg.norm(vector))
        row = self._row.get(memory_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._matrix):
                grown = np.zeros((2 * row, self._dimension), dtype=np.float32)
                grown[:row] = self._matrix
                self._matrix = grown
            self._row[memory_id] = row
            self._ids.append(memory_id)
        self._matrix[row] = np.asarray(vector, dtype=np.float32) / (norm if norm > 0 else 1.0)

    def _index(self, memory: Memory) -> None:
        self._by_scope.setdefault(memory.agent_scope, set()).add(memory.id)
        _add(self._by_hash, (memory.agent_scope, memory.content_hash), memory.id)
        if memory.topic_key:
            _add(self._by_topic, (memory.agent_scope, memory.topic_key), memory.id)

    def _unindex(self, memory: Memory) -> None:
        _discard(self._by_scope, memory.agent_scope, memory.id)
        _remove(self._by_hash, (memory.agent_scope, memory.content_hash), memory.id)
        _remove(self._by_topic, (memory.agent_scope, memory.topic_key), memory.id)

    def remove(self, memory_id: str) -> None:
        """Drops a memory (unknown ids are ignored)."""
        memory = self._memories.pop(memory_id, None)
        if memory is None:
            return
        self._unindex(memory)
        row = self._row.pop(memory_id)
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._ids.pop()
        self._salient.pop(memory_id, None)
        self.bytes -= memory_bytes(memory, self._dimension)
        self._unindexed.discard(memory_id)
        self._bm25.remove(memory_id)

    def vector(self, memory_id: str) -> Vector | None:
        """The stored (normalised) vector of a live memory."""
        row = self._row.get(memory_id)
        return None if row is None else self._matrix[row].copy()

    def salient(self, memory: Memory) -> tuple[str, ...]:
        """The memory's numbers, dates and identifiers' digits, computed once."""
        found = self._salient.get(memory.id)
        if found is None:
            found = tuple(salient_tokens(memory.content))
            if memory.id in self._memories:
                self._salient[memory.id] = found
        return found

    # -- search -----------------------------------------------------------------

    def _stacked(self) -> tuple[list[str], np.ndarray]:
        """Ids and the matching rows of the vector matrix (a view, not a copy)."""
        return self._ids, self._matrix[: len(self._ids)]

    def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Cosine nearest memories passing the filter, best first."""
        ids, matrix = self._stacked()
        if not ids or limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        scores = matrix @ (query / (norm if norm > 0 else 1.0))
        # Most calls filter little: look at the best few first, everything only if needed.
        head = min(len(ids), 4 * limit)
        if head < len(ids):
            best = np.argpartition(-scores, head - 1)[:head]
            order = best[np.argsort(-scores[best], kind="stable")]
            found = self._passing(memory_filter, ids, scores, order, limit)
            if len(found) >= limit:
                return found
        order = np.argsort(-scores, kind="stable")
        return self._passing(memory_filter, ids, scores, order, limit)

    def _passing(
        self,
        memory_filter: MemoryFilter,
        ids: list[str],
        scores: np.ndarray,
        order: Iterable[int],
        limit: int,
    ) -> list[tuple[Memory, float]]:
        found: list[tuple[Memory, float]] = []
        for index in order:
            memory = self._memories[ids[int(index)]]
            if memory_filter.matches(memory):
                found.append((memory, float(scores[int(index)])))
                if len(found) >= limit:
                    break
        return found

    def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 matches passing the filter, best first."""
        self._index_pending()
        scores = self._bm25.scores(self._analyzer.terms(text))
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
        found: list[tuple[Memory, float]] = []
        for memory_id, score in ranked:
            memory = self._memories[memory_id]
            if memory_filter.matches(memory):
                found.append((memory, score))
                if len(found) >= limit:
                    break
        return found

    def keyword_evidence(
        self, text: str, memory_ids: Sequence[str]
    ) -> tuple[QueryTerms, dict[str, KeywordEvidence]]:
        """The query's terms and each memory's keyword evidence, terms weighted by IDF here."""
        self._index_pending()
        query = query_terms(self._analyzer.terms(text))
        weights = self._bm25.idf_weights(query.informative)
        return query, {
            memory_id: keyword_evidence(query, self._bm25.terms_of(memory_id), weights.__getitem__)
            for memory_id in memory_ids
        }

    def _index_pending(self) -> None:
        for memory_id in self._unindexed:
            self._bm25.add(memory_id, self._analyzer.terms(self._memories[memory_id].content))
        self._unindexed.clear()

    def matching(self, memory_filter: MemoryFilter) -> list[Memory]:
        """Every memory passing the filter, in id (creation) order."""
        return sorted(
            (m for m in self._memories.values() if memory_filter.matches(m)), key=lambda m: m.id
        )

    # -- what the write rules ask --------------------------------------------------

    def _live(self, ids: Iterable[str], now: int) -> list[Memory]:
        return [
            m
            for m in (self._memories[i] for i in ids)
            if m.status in LIVE and not m.is_expired(now)
        ]

    def same_content(self, scope: str, content_hash: str, now: int) -> Memory | None:
        """The newest live memory of the scope with this normalised-content hash."""
        same = self._live(self._by_hash.get((scope, content_hash), ()), now)
        return max(same, key=lambda m: m.id) if same else None

    def topic_holder(self, scope: str, topic_key: str, now: int) -> Memory | None:
        """The newest active, unexpired memory holding the topic in the scope."""
        holders = [
            m
            for m in self._live(self._by_topic.get((scope, topic_key), ()), now)
            if m.status is Status.ACTIVE
        ]
        return max(holders, key=lambda m: m.id) if holders else None

    def nearest(self, scope: str, vectors: Vectors, now: int) -> list[tuple[Memory, float] | None]:
        """For each vector, the most similar live memory of the scope."""
        candidates = self._live(self._by_scope.get(scope, ()), now)
        if not candidates:
            return [None] * len(vectors)
        rows = np.fromiter((self._row[m.id] for m in candidates), dtype=np.intp)
        scores = np.asarray(vectors, dtype=np.float32) @ self._matrix[rows].T
        best = np.argmax(scores, axis=1)
        return [(candidates[int(j)], float(scores[i, int(j)])) for i, j in enumerate(best.tolist())]

    # -- derived views ----------------------------------------------------------

    def events_since(self, memory_filter: MemoryFilter, since_ms: int) -> list[Memory]:
        """Active events of the filter that occurred since the time, newest first."""
        events = [
            m
            for m in self._memories.values()
            if m.type is MemoryType.EVENT and m.occurred_at >= since_ms and memory_filter.matches(m)
        ]
        return sorted(events, key=lambda m: m.occurred_at, reverse=True)


def _add(index: dict[K, tuple[str, ...]], key: K, memory_id: str) -> None:
    ids = index.get(key, ())
    if memory_id not in ids:
        index[key] = (*ids, memory_id)


def _remove(index: dict[K, tuple[str, ...]], key: K, memory_id: str) -> None:
    ids = index.get(key)
    if ids is not None:
        kept = tuple(i for i in ids if i != memory_id)
        if kept:
            index[key] = kept
        else:
            del index[key]


def _discard(index: dict[K, set[str]], key: K, memory_id: str) -> None:
    ids = index.get(key)
    if ids is not None:
        ids.discard(memory_id)
        if not ids:
            del index[key]
