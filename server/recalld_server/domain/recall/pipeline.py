"""The recall pipeline: fan out, fuse, weigh, threshold, de-duplicate, budget, render.

Stages that do not depend on each other run concurrently:
`embed -> dense search` || `keyword search` || `profile` || `recent events`.
Every one of them, and the optional relevance judge after fusion, is optional:
one that fails or runs out of time degrades the answer and says so. The rules
the steps apply live beside this module, without I/O: the request's filters
(`filters`), scoring (`scoring`), and what is returned and why not (`selection`).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import numpy as np

from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.domain.core.model import DAY_MS, Memory, MemoryType
from recalld_server.domain.core.ports import (
    AccessTracker,
    Analyzer,
    Clock,
    Embedder,
    RelevanceJudge,
    Vector,
    VectorStore,
)
from recalld_server.domain.core.recall_model import (
    Candidate,
    Profile,
    RecallQuery,
    RecallResult,
)
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.core.text import token_weight
from recalld_server.domain.ranking.reranking import Judgement, judgement, passage
from recalld_server.domain.recall.filters import RecallFilter
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.recall.retrieval import Retrieval, StorageRetrieval, WorkingSetRetrieval
from recalld_server.domain.recall.scoring import Scored, merge, rank
from recalld_server.domain.recall.selection import (
    Answer,
    Kept,
    Relevance,
    fit_budget,
    judge_reads,
    select,
)
from recalld_server.domain.working_set.cache import WorkingSet
from recalld_server.domain.working_set.profile import ProfileService

log = logging.getLogger(__name__)
T = TypeVar("T")
QUERY_VECTOR_CACHE = 2048
"""Recent query texts whose vectors are kept (about 2 KB each with the default model)."""
LINE_COST_CACHE = 65_536
"""Context lines whose token cost is remembered (first in, first out)."""
DEADLINE_SHARE = 0.9
"""An optional stage may take this share of the call's remaining deadline."""

Hits = list[tuple[Memory, float]]


@dataclasses.dataclass(frozen=True, slots=True)
class _Recall:
    """One recall in flight: its request and filters, when it started, what degraded."""

    tenant_id: str
    query: RecallQuery
    filters: RecallFilter
    now: int
    deadline_s: float | None
    degraded: list[str] = dataclasses.field(default_factory=list)

    async def optional(self, name: str, work: Callable[[], Awaitable[T]], fallback: T) -> T:
        """The stage's answer, or the fallback when its backend fails or it runs late."""
        try:
            if self.deadline_s is None:
                return await work()
            timeout = max(0.01, self.deadline_s * DEADLINE_SHARE)
            return await asyncio.wait_for(work(), timeout=timeout)
        except (BackendUnavailableError, TimeoutError) as error:
            log.warning("recall stage %s degraded: %s", name, error)
            self.degraded.append(name)
            return fallback

    def degrade(self, stages: Iterable[str]) -> None:
        """Names stages degraded (each once), as a stage's own answer reported them."""
        for stage in stages:
            if stage not in self.degraded:
                self.degraded.append(stage)


@dataclasses.dataclass(frozen=True, slots=True)
class _Found:
    """What the searches found: dense and keyword hits, the profile and recent events."""

    dense: Hits
    keyword: Hits
    profile: Profile | None
    recent: list[Memory]


class RecallPipeline:
    """Runs one recall for an already validated query and authorised principal."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        profiles: ProfileService,
        access: AccessTracker,
        stages: Stages,
        clock: Clock,
        working_set: WorkingSet,
        analyzer: Analyzer,
        policy: RecallPolicy | None = None,
        judge: RelevanceJudge | None = None,
    ) -> None:
        self._storage = StorageRetrieval(store, profiles, analyzer)
        self._judge = judge
        # Agents repeat queries (retries, the same question each turn, several users
        # asked the same thing): the model's vector for a text never changes.
        self._query_vectors: collections.OrderedDict[str, Vector] = collections.OrderedDict()
        self._line_weights: dict[str, float] = {}
        self._working_set = working_set
        self._embedder = embedder
        self._access = access
        self._stages = stages
        self._clock = clock
        self._policy = policy or RecallPolicy()

    async def run(
        self,
        tenant_id: str,
        query: RecallQuery,
        readable: frozenset[str] | None,
        deadline_s: float | None = None,
    ) -> RecallResult:
        """Recall for one user. `readable` are the scopes the caller may see at all."""
        now = self._clock.now_ms()
        filters = RecallFilter.of(tenant_id, query, readable, now)
        recall = _Recall(tenant_id, query, filters, now, deadline_s)
        # The query embedding does not depend on where the user's memories are read
        # from: it runs while a cold user's set is loaded.
        embedding = self._start_embedding(query)
        try:
            retrieval = await self._retrieval(recall)
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        found = await self._search(recall, retrieval, embedding)
        candidates, kept = await self._fuse(recall, retrieval, found)
        answer = self._budget(query, found.profile, kept, candidates)
        await self._access.record(tenant_id, [i.memory.id for i in answer.items], now)
        return RecallResult(
            items=answer.items,
            token_estimate=answer.tokens,
            degraded_stages=recall.degraded,
            profile=found.profile,
            context=answer.context,
            candidates=answer.candidates if query.explain else [],
            source=retrieval.source,
        )

    # -- stages ----------------------------------------------------------------

    def _start_embedding(self, query: RecallQuery) -> asyncio.Future[Vector] | None:
        """The query text's vector, started now (None: no dense search, or a given vector)."""
        if self._policy.retrieval == "keyword" or query.query_vector:
            return None
        return asyncio.ensure_future(self._embed(query.query))

    async def _retrieval(self, recall: _Recall) -> Retrieval:
        """The user's working set, or storage (explain, big users, counters unreachable)."""
        if recall.query.explain:  # explain also shows superseded and archived memories
            return self._storage
        with self._stages.stage("working_set") as record:
            try:
                user_set = await self._working_set.open(recall.tenant_id, recall.query.user_id)
            except BackendUnavailableError as error:
                log.warning("working set bypassed: %s", error)
                recall.degraded.append("working_set")
                user_set = None
            record.set("source", "storage" if user_set is None else "working_set")
            record.set("memories", len(user_set) if user_set is not None else 0)
        return self._storage if user_set is None else WorkingSetRetrieval(user_set)

    async def _embed(self, text: str) -> Vector:
        with self._stages.stage("embed") as record:
            record.set("model", self._embedder.model_id)
            vector = self._query_vectors.get(text)
            record.set("cache_hit", vector is not None)
            if vector is not None:
                self._query_vectors.move_to_end(text)
                return vector
            try:
                embedded: Vector = (await self._embedder.embed_query([text]))[0]
            except TextRefusedError as error:  # keyword search still answers
                raise BackendUnavailableError(error.description) from None
            vector = embedded
            vector.flags.writeable = False  # shared by every recall that asks the same
            self._query_vectors[text] = vector
            while len(self._query_vectors) > QUERY_VECTOR_CACHE:
                self._query_vectors.popitem(last=False)
            return vector

    async def _search(
        self, recall: _Recall, retrieval: Retrieval, embedding: asyncio.Future[Vector] | None
    ) -> _Found:
        """The four searches, concurrently unless the policy measures them one by one."""
        mode = self._policy.retrieval
        pool = max(self._policy.min_pool, recall.query.top_k * self._policy.pool_per_item)
        no_hits: Hits = []
        no_profile: tuple[Profile | None, list[str]] = (None, [])
        no_events: tuple[list[Memory], list[str]] = ([], [])
        stages = (
            # Without the model (its process down or late) keyword search, the
            # profile and recent events still answer; the stage is reported degraded.
            recall.optional(
                "dense_search", lambda: self._dense(retrieval, recall, embedding, pool), no_hits
            )
            if mode != "keyword"
            else _nothing(no_hits),
            recall.optional(
                "keyword_search", lambda: self._keyword(retrieval, recall, pool), no_hits
            )
            if mode != "dense"
            else _nothing(no_hits),
            recall.optional("profile", lambda: self._profile(retrieval, recall), no_profile),
            recall.optional("recent", lambda: self._recent(retrieval, recall), no_events),
        )
        if self._policy.sequential:  # for measuring what the fan-out saves
            dense = await stages[0]
            keyword = await stages[1]
            profile = await stages[2]
            recent = await stages[3]
        else:
            dense, keyword, profile, recent = await asyncio.gather(*stages)
        recall.degrade([*profile[1], *recent[1]])
        return _Found(dense, keyword, profile[0], recent[0])

    async def _dense(
        self,
        retrieval: Retrieval,
        recall: _Recall,
        embedding: asyncio.Future[Vector] | None,
        pool: int,
    ) -> Hits:
        if embedding is None:
            vector: Vector = np.asarray(recall.query.query_vector, dtype=np.float32)
        else:
            vector = await embedding
        with self._stages.stage("dense_search") as record:
            hits = await retrieval.dense(recall.filters.search, vector, pool)
            record.set("candidates_out", len(hits))
            record.set("source", retrieval.source.name.lower())
            return hits

    async def _keyword(self, retrieval: Retrieval, recall: _Recall, pool: int) -> Hits:
        if not recall.query.query.strip():
            return []
        with self._stages.stage("keyword_search") as record:
            hits = await retrieval.keyword(recall.filters.search, recall.query.query, pool)
            record.set("candidates_out", len(hits))
            return hits

    async def _profile(
        self, retrieval: Retrieval, recall: _Recall
    ) -> tuple[Profile | None, list[str]]:
        if recall.query.skip_profile:
            return None, []
        with self._stages.stage("profile") as record:
            profile, degraded = await retrieval.profile(recall.filters.active)
            record.set("cache_hit", profile.from_cache)
            record.set("degraded", bool(degraded))
            record.set("memories", len(profile.memories))
            return profile, degraded

    async def _recent(
        self, retrieval: Retrieval, recall: _Recall
    ) -> tuple[list[Memory], list[str]]:
        if not recall.filters.asks_for(MemoryType.EVENT):
            return [], []
        with self._stages.stage("recent") as record:
            events, degraded = await retrieval.recent_events(
                recall.filters.active, self._policy.recent_days * DAY_MS, recall.now
            )
            matching = [e for e in events if recall.filters.admits(e)]
            record.set("candidates_out", min(len(matching), self._policy.recent_limit))
            return matching[: self._policy.recent_limit], degraded

    async def _fuse(
        self, recall: _Recall, retrieval: Retrieval, found: _Found
    ) -> tuple[list[Candidate], list[Kept]]:
        """Scores what the searches found and selects what the recall returns."""
        with self._stages.stage("fuse") as record:
            hits = merge(found.dense, found.keyword, found.recent)
            terms, scored = rank(hits, recall.query.query, recall.now, self._policy, retrieval)
            record.set("candidates_in", len(scored))
            verdict = await self._judged(recall, scored)
            relevance = Relevance(self._policy.gate, terms, recall.query.min_score, verdict)
            deduper = retrieval.deduper(self._policy.duplicate_similarity)
            candidates, kept = select(
                scored, recall.filters, relevance, deduper, recall.query.top_k
            )
            record.set("candidates_out", len(kept))
        return candidates, kept

    async def _judged(self, recall: _Recall, scored: list[Scored]) -> Judgement | None:
        """The relevance judge's verdict, when one is configured and the query has text."""
        if self._judge is None or not recall.query.query.strip():
            return None
        return await recall.optional("rerank", lambda: self._rerank(recall, scored), None)

    async def _rerank(self, recall: _Recall, scored: list[Scored]) -> Judgement | None:
        """The judge's verdict on the best candidates that pass the request's filters."""
        assert self._judge is not None
        policy = self._policy.rerank
        limit = max(policy.candidates, recall.query.top_k)
        read = judge_reads(scored, recall.filters, recall.query.min_score, limit)
        if not read:
            return None
        with self._stages.stage("rerank") as record:
            record.set("candidates_in", len(read))
            verdict = await self._judge.rank(recall.query.query, [passage(m, policy) for m in read])
            if verdict is None:  # reported as degraded: the offline ranking answers
                raise BackendUnavailableError("the relevance judge gave no verdict")
            judged = judgement(read, verdict)
            record.set("candidates_out", len(judged.kept))
            return judged

    def _budget(
        self,
        query: RecallQuery,
        profile: Profile | None,
        kept: list[Kept],
        candidates: list[Candidate],
    ) -> Answer:
        with self._stages.stage("budget") as record:
            answer = fit_budget(query.token_budget, profile, kept, candidates, self._weight)
            record.set("items", len(answer.items))
            record.set("tokens", answer.tokens)
        return answer

    def _weight(self, line: str) -> float:
        """token_weight of a context line, remembered: the same memories recur in recalls."""
        weight = self._line_weights.get(line)
        if weight is None:
            weight = token_weight(line)
            self._line_weights[line] = weight
            if len(self._line_weights) > LINE_COST_CACHE:
                self._line_weights.pop(next(iter(self._line_weights)))
        return weight


async def _nothing(value: T) -> T:
    return value
