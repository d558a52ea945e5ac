"""Where a recall's candidates come from: the user's working set, or storage.

Both sources answer the same four questions (dense search, keyword search,
profile, recent events), so the recall pipeline ranks, filters and packs the
same way whichever served. The working set answers from process memory; the
storage source is the path for users too big to hold, for explain (which also
looks at superseded and archived memories), and for when the working set's
generations cannot be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recalld_server.domain.core.model import Memory, MemoryFilter
from recalld_server.domain.core.ports import Analyzer, SearchIndex, Vector
from recalld_server.domain.core.recall_model import Profile, RecallSource
from recalld_server.domain.core.text import DedupeKey, dedupe_key, nearly_same_keys
from recalld_server.domain.ranking.fusion import (
    KeywordEvidence,
    QueryTerms,
    keyword_evidence,
    query_terms,
)
from recalld_server.domain.working_set.profile import ProfileService, select_profile
from recalld_server.domain.working_set.user_set import UserSet


class Retrieval(Protocol):
    """The candidate searches of one recall, for one (tenant, user)."""

    @property
    def source(self) -> RecallSource:
        """Which path this is."""
        ...

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Cosine nearest memories passing the filter, best first."""
        ...

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 matches passing the filter, best first."""
        ...

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """The user's profile among the filter's memories, and any degraded stage."""
        ...

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """Active events of the window, newest first, and any degraded stage."""
        ...

    def deduper(self, duplicate_similarity: float) -> Deduper:
        """A fresh result de-duplicator for one recall."""
        ...

    def keyword_evidence(
        self, text: str, memories: Sequence[Memory]
    ) -> tuple[QueryTerms, dict[str, KeywordEvidence]]:
        """The query's terms and what each memory's terms say about them (`fusion`)."""
        ...

    def similarities(self, memories: Sequence[Memory]) -> npt.NDArray[np.float32] | None:
        """Pairwise cosine of the memories' vectors, or None where vectors are not at hand."""
        ...


class Deduper(Protocol):
    """Finds, among the results kept so far, one that says the same as a candidate."""

    def twin(self, memory: Memory) -> Memory | None:
        """A kept result that is a duplicate of the memory, if any."""
        ...

    def keep(self, memory: Memory) -> None:
        """Adds a result."""
        ...


class TextDeduper:
    """Same normalised content, or nearly the same characters (bigram Jaccard) and numbers.

    For results read from storage, which come without vectors.
    """

    def __init__(self) -> None:
        self._kept: list[tuple[Memory, DedupeKey]] = []

    def twin(self, memory: Memory) -> Memory | None:
        """The first kept result with the same or nearly the same text."""
        key = dedupe_key(memory.content)
        return next(
            (
                m
                for m, other in self._kept
                if m.content_hash == memory.content_hash or nearly_same_keys(other, key)
            ),
            None,
        )

    def keep(self, memory: Memory) -> None:
        """Adds a result."""
        self._kept.append((memory, dedupe_key(memory.content)))


class VectorDeduper:
    """Same normalised content, or the write path's near-duplicate test on vectors.

    Vectors at the model's calibrated similarity and the same numbers, dates and
    identifiers. Everything it compares was computed when the memory entered the working set: no
    text is compared pairwise while a recall waits. Unlike the write rules it ignores
    topics: two results saying the same thing under two topics are still one result.
    """

    def __init__(self, user_set: UserSet, similarity: float) -> None:
        self._set = user_set
        self._similarity = similarity
        self._kept: list[Memory] = []
        self._by_vector: list[Memory] = []
        self._vectors: list[Vector] = []

    def twin(self, memory: Memory) -> Memory | None:
        """The first kept result that is a duplicate of the memory."""
        same = next((m for m in self._kept if m.content_hash == memory.content_hash), None)
        vector = self._set.vector(memory.id)
        if same is not None or vector is None or not self._vectors:
            return same
        similarities = np.stack(self._vectors) @ vector
        salient = self._set.salient(memory)
        for index in np.flatnonzero(similarities >= self._similarity).tolist():
            kept = self._by_vector[index]
            if self._set.salient(kept) == salient:
                return kept
        return None

    def keep(self, memory: Memory) -> None:
        """Adds a result."""
        self._kept.append(memory)
        vector = self._set.vector(memory.id)
        if vector is not None:
            self._by_vector.append(memory)
            self._vectors.append(vector)


TERMS_CACHE = 65_536
"""Memory texts whose analysed terms storage recall remembers (first in, first out)."""


class StorageRetrieval:
    """Searches storage; profile and recent events through the profile cache."""

    def __init__(self, store: SearchIndex, profiles: ProfileService, analyzer: Analyzer) -> None:
        self._store = store
        self._profiles = profiles
        self._analyzer = analyzer
        self._terms: dict[str, frozenset[str]] = {}

    def keyword_evidence(
        self, text: str, memories: Sequence[Memory]
    ) -> tuple[QueryTerms, dict[str, KeywordEvidence]]:
        """Every informative term weighs the same: storage returns no term statistics."""
        query = query_terms(self._analyzer.terms(text))
        return query, {
            m.id: keyword_evidence(query, self._terms_of(m.content), _uniform) for m in memories
        }

    def similarities(self, memories: Sequence[Memory]) -> npt.NDArray[np.float32] | None:
        """Storage search results come without vectors."""
        return None

    def _terms_of(self, content: str) -> frozenset[str]:
        terms = self._terms.get(content)
        if terms is None:
            terms = frozenset(self._analyzer.terms(content))
            self._terms[content] = terms
            if len(self._terms) > TERMS_CACHE:
                self._terms.pop(next(iter(self._terms)))
        return terms

    @property
    def source(self) -> RecallSource:
        """Storage."""
        return RecallSource.STORAGE

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """One filtered vector search."""
        return await self._store.search(memory_filter, vector, limit)

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """One filtered BM25 search."""
        return await self._store.keyword_search(memory_filter, text, limit)

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """Through the profile cache (storage when it misses or fails)."""
        return await self._profiles.get(active.tenant_id, active.user_id or "", active.scopes)

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """Through the recent-events cache."""
        return await self._profiles.recent_events(
            active.tenant_id, active.user_id or "", active.scopes, window_ms
        )

    def deduper(self, duplicate_similarity: float) -> Deduper:
        """By text: storage results come without vectors."""
        return TextDeduper()


class WorkingSetRetrieval:
    """Answers from one user's set in process: no storage call."""

    def __init__(self, user_set: UserSet) -> None:
        self._set = user_set

    @property
    def source(self) -> RecallSource:
        """The working set."""
        return RecallSource.WORKING_SET

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """A matrix-vector product over the user's vectors."""
        return self._set.dense(memory_filter, vector, limit)

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 over the user's terms."""
        return self._set.keyword(memory_filter, text, limit)

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """Selected from the user's active memories."""
        return Profile(select_profile(self._set.matching(active)), from_cache=True), []

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """The user's active events of the window."""
        return self._set.events_since(active, now - window_ms), []

    def deduper(self, duplicate_similarity: float) -> Deduper:
        """By the vectors and salient tokens the set holds."""
        return VectorDeduper(self._set, duplicate_similarity)

    def keyword_evidence(
        self, text: str, memories: Sequence[Memory]
    ) -> tuple[QueryTerms, dict[str, KeywordEvidence]]:
        """Terms weighted by their rarity among the user's memories."""
        return self._set.keyword_evidence(text, [m.id for m in memories])

    def similarities(self, memories: Sequence[Memory]) -> npt.NDArray[np.float32] | None:
        """From the vectors the set holds (None if one is missing)."""
        vectors = [self._set.vector(m.id) for m in memories]
        if any(v is None for v in vectors) or not vectors:
            return None
        matrix = np.stack([v for v in vectors if v is not None])
        result: npt.NDArray[np.float32] = matrix @ matrix.T
        return result


def _uniform(term: str) -> float:
    return 1.0
