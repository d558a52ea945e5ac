"""The recall pipeline: fan out, fuse, weigh, threshold, de-duplicate, budget, render.

Stages that do not depend on each other run concurrently:
`embed -> dense search` || `keyword search` || `profile` || `recent events`.
Every one of them, and the optional relevance judge after fusion, is optional:
one that fails or runs out of time degrades the answer and says so.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

import numpy as np

from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.domain.core.model import (
    DAY_MS,
    Candidate,
    DropReason,
    Memory,
    MemoryFilter,
    MemoryType,
    Profile,
    RecallQuery,
    RecallResult,
    ScoreBreakdown,
    ScoredMemory,
    Status,
    Tier,
)
from recalld_server.domain.core.ports import (
    AccessTracker,
    Analyzer,
    Clock,
    Embedder,
    RelevanceJudge,
    Vector,
    VectorStore,
)
from recalld_server.domain.core.stages import Stages
from recalld_server.domain.core.text import token_weight
from recalld_server.domain.ranking.fusion import (
    NO_EVIDENCE,
    FusionPolicy,
    KeywordEvidence,
    QueryTerms,
    floor_for,
    fuse,
    passes,
    unlifted,
)
from recalld_server.domain.ranking.packing import pack, render_context
from recalld_server.domain.ranking.reranking import Judgement, RerankPolicy, judgement, passage
from recalld_server.domain.recall.retrieval import (
    Retrieval,
    StorageRetrieval,
    WorkingSetRetrieval,
    active_filter,
)
from recalld_server.domain.working_set.cache import WorkingSet
from recalld_server.domain.working_set.profile import ProfileService

log = logging.getLogger(__name__)
T = TypeVar("T")
NO_TERMS = QueryTerms((), ())
QUERY_VECTOR_CACHE = 2048
LINE_COST_CACHE = 65_536
"""Context lines whose token cost is remembered (first in, first out)."""
"""Recent query texts whose vectors are kept (about 2 KB each with the default model)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecallPolicy:
    """Ranking knobs, with the documented defaults (docs/recall.md).

    Attributes:
        fusion: How dense and keyword evidence make one relevance score, and the
            gate that leaves out what is not relevant (`domain.fusion`); measured per
            embedding model on the labelled set (benchmarks/precision).
        recency_half_life_days: Recency halves every this many days since the
            memory occurred: decay = 2 ** (-age_days / half_life).
        recency_share: How much of the ranking recency decides: the ranking score is
            relevance * (1 - share + share * decay), so an old fact that answers the
            question beats a new one that does not, and between two that answer
            alike the newer wins. Measured on the training half of
            benchmarks/precision at the data's present: 0.5 put last week's
            unrelated memories above a year-old answer (train hit@1 0.58 against
            0.73 at 0.1; shares up to 0.1 tie, larger ones rank worse). Questions
            about now are served by the fusion's newest-of-similar rule instead.
        use_decay_per_day: A memory's use factor falls by this per day since it was
            last recalled (never recalled: since it was written): 0.95 ** days.
        use_share: How much of the ranking use decides: the score is multiplied by
            1 - share + share * use_decay_per_day ** days_unused. Core (P0) memories
            never decay. Chosen on the training half of benchmarks/precision with a
            simulated history of recalls (docs/recall.md, "Decay by use").
        pool_per_item / min_pool: Candidates fetched from each search.
        recent_days / recent_limit: The recent-events stage looks this far back.
        sequential: Run the stages one after another instead of concurrently (only to
            measure what the fan-out saves; `--recall-sequential`).
        retrieval: "hybrid" (default), "dense" or "keyword": which searches run (for
            benchmarks that compare them through the server; `--recall-mode`).
        duplicate_similarity: Results from the working set whose vectors are this
            similar (and whose numbers match) are one result: the model's calibrated
            near-duplicate threshold, as the write rules use.
        rerank: What the relevance judge reads, when one is configured.
    """

    fusion: FusionPolicy = dataclasses.field(default_factory=FusionPolicy)
    recency_half_life_days: float = 30.0
    recency_share: float = 0.1
    use_decay_per_day: float = 0.95
    use_share: float = 0.02
    pool_per_item: int = 4
    min_pool: int = 20
    recent_days: int = 7
    recent_limit: int = 5
    sequential: bool = False
    retrieval: str = "hybrid"
    duplicate_similarity: float = 0.88
    rerank: RerankPolicy = dataclasses.field(default_factory=RerankPolicy)


@dataclasses.dataclass(slots=True)
class _Hit:
    memory: Memory
    dense: float | None = None
    dense_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    recent_rank: int | None = None


def use_decay(memory: Memory, now_ms: int, share: float, per_day: float) -> float:
    """1 - share + share * per_day ** days since the memory was last recalled.

    A memory never recalled counts from when it was written; a core (P0) memory
    never decays. The last recall is the flushed statistic (`last_accessed_at`),
    at most one flush interval (5 minutes) behind: nothing at a scale of days.
    """
    if share <= 0.0 or memory.tier is Tier.P0:
        return 1.0
    days = max(0.0, (now_ms - memory.last_used_at) / DAY_MS)
    return 1.0 - share + share * math.pow(per_day, days)


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
        strict = MemoryFilter(
            tenant_id=tenant_id,
            user_id=query.user_id,
            statuses=frozenset({Status.ACTIVE}),
            types=query.types,
            tiers=query.tiers,
            scopes=query.scopes,
            tags=query.tags,
            session_id=query.session_id,
            occurred_after=query.occurred_after,
            occurred_before=query.occurred_before,
            created_after=query.created_after,
            created_before=query.created_before,
            unexpired_at=now,
        )
        # Explain looks wider (every status and allowed scope) to say why things were left out.
        search_filter = (
            MemoryFilter(tenant_id, query.user_id, scopes=readable) if query.explain else strict
        )
        pool = max(self._policy.min_pool, query.top_k * self._policy.pool_per_item)
        degraded: list[str] = []

        async def optional(name: str, work: Callable[[], Awaitable[T]], fallback: T) -> T:
            try:
                if deadline_s is None:
                    return await work()
                return await asyncio.wait_for(work(), timeout=max(0.01, deadline_s * 0.9))
            except (BackendUnavailableError, TimeoutError) as error:
                log.warning("recall stage %s degraded: %s", name, error)
                degraded.append(name)
                return fallback

        mode = self._policy.retrieval
        # The query embedding does not depend on where the user's memories are read
        # from: it runs while a cold user's set is loaded.
        embedding = (
            asyncio.ensure_future(self._embed(query.query))
            if mode != "keyword" and not query.query_vector
            else None
        )
        try:
            retrieval = await self._retrieval(tenant_id, query, degraded)
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        no_hits: list[tuple[Memory, float]] = []
        no_profile: tuple[Profile | None, list[str]] = (None, [])
        no_events: tuple[list[Memory], list[str]] = ([], [])
        active = active_filter(tenant_id, query.user_id, strict.scopes, now)
        stages = (
            # Without the model (its process down or late) keyword search, the
            # profile and recent events still answer; the stage is reported degraded.
            optional(
                "dense_search",
                lambda: self._dense(retrieval, query, embedding, search_filter, pool),
                no_hits,
            )
            if mode != "keyword"
            else _nothing(no_hits),
            optional(
                "keyword_search",
                lambda: self._keyword(retrieval, query, search_filter, pool),
                no_hits,
            )
            if mode != "dense"
            else _nothing(no_hits),
            optional("profile", lambda: self._profile(retrieval, query, active), no_profile),
            optional("recent", lambda: self._recent(retrieval, strict, active, now), no_events),
        )
        if self._policy.sequential:  # for measuring what the fan-out saves
            dense = await stages[0]
            keyword = await stages[1]
            profile_result = await stages[2]
            recent_result = await stages[3]
        else:
            dense, keyword, profile_result, recent_result = await asyncio.gather(*stages)
        profile, profile_degraded = profile_result
        recent, recent_degraded = recent_result
        for stage in [*profile_degraded, *recent_degraded]:
            if stage not in degraded:
                degraded.append(stage)

        with self._stages.stage("fuse") as record:
            hits = self._merge(dense, keyword, recent)
            terms, evidence = (
                retrieval.keyword_evidence(query.query, [h.memory for h in hits.values()])
                if query.query.strip() and mode != "dense"
                else (NO_TERMS, {})
            )
            scored = [
                (hit, self._score(hit, evidence.get(memory_id, NO_EVIDENCE), now))
                for memory_id, hit in hits.items()
            ]
            if terms.wants_latest and self._policy.fusion.latest_bonus:
                scored = self._prefer_latest(scored, terms, retrieval)
            scored.sort(key=lambda pair: pair[1].final, reverse=True)
            record.set("candidates_in", len(scored))
            verdict = (
                await optional("rerank", lambda: self._rerank(query, strict, scored, now), None)
                if self._judge is not None and query.query.strip()
                else None
            )
            candidates, kept = self._select(query, strict, scored, now, retrieval, terms, verdict)
            record.set("candidates_out", len(kept))

        with self._stages.stage("budget") as record:
            items, context, tokens, candidates = self._pack(query, profile, kept, candidates)
            record.set("items", len(items))
            record.set("tokens", tokens)
        await self._access.record(tenant_id, [i.memory.id for i in items], now)
        return RecallResult(
            items=items,
            token_estimate=tokens,
            degraded_stages=degraded,
            profile=profile,
            context=context,
            candidates=candidates if query.explain else [],
            source=retrieval.source,
        )

    # -- stages ----------------------------------------------------------------

    async def _retrieval(
        self, tenant_id: str, query: RecallQuery, degraded: list[str]
    ) -> Retrieval:
        """The user's working set, or storage (explain, big users, counters unreachable)."""
        if query.explain:  # explain also shows superseded and archived memories
            return self._storage
        with self._stages.stage("working_set") as record:
            try:
                user_set = await self._working_set.open(tenant_id, query.user_id)
            except BackendUnavailableError as error:
                log.warning("working set bypassed: %s", error)
                degraded.append("working_set")
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

    async def _dense(
        self,
        retrieval: Retrieval,
        query: RecallQuery,
        embedding: asyncio.Future[Vector] | None,
        memory_filter: MemoryFilter,
        pool: int,
    ) -> list[tuple[Memory, float]]:
        if embedding is None:
            vector: Vector = np.asarray(query.query_vector, dtype=np.float32)
        else:
            vector = await embedding
        with self._stages.stage("dense_search") as record:
            hits = await retrieval.dense(memory_filter, vector, pool)
            record.set("candidates_out", len(hits))
            record.set("source", retrieval.source.name.lower())
            return hits

    async def _keyword(
        self, retrieval: Retrieval, query: RecallQuery, memory_filter: MemoryFilter, pool: int
    ) -> list[tuple[Memory, float]]:
        if not query.query.strip():
            return []
        with self._stages.stage("keyword_search") as record:
            hits = await retrieval.keyword(memory_filter, query.query, pool)
            record.set("candidates_out", len(hits))
            return hits

    async def _profile(
        self, retrieval: Retrieval, query: RecallQuery, active: MemoryFilter
    ) -> tuple[Profile | None, list[str]]:
        if query.skip_profile:
            return None, []
        with self._stages.stage("profile") as record:
            profile, degraded = await retrieval.profile(active)
            record.set("cache_hit", profile.from_cache)
            record.set("degraded", bool(degraded))
            record.set("memories", len(profile.memories))
            return profile, degraded

    async def _recent(
        self, retrieval: Retrieval, strict: MemoryFilter, active: MemoryFilter, now: int
    ) -> tuple[list[Memory], list[str]]:
        if strict.types and MemoryType.EVENT not in strict.types:
            return [], []
        with self._stages.stage("recent") as record:
            events, degraded = await retrieval.recent_events(
                active, self._policy.recent_days * DAY_MS, now
            )
            matching = [e for e in events if _filter_reason(e, strict, now) is None]
            record.set("candidates_out", min(len(matching), self._policy.recent_limit))
            return matching[: self._policy.recent_limit], degraded

    # -- fusion and selection --------------------------------------------------

    @staticmethod
    def _merge(
        dense: list[tuple[Memory, float]], keyword: list[tuple[Memory, float]], recent: list[Memory]
    ) -> dict[str, _Hit]:
        hits: dict[str, _Hit] = {}
        for rank, (memory, score) in enumerate(sorted(dense, key=lambda h: -h[1]), start=1):
            hits.setdefault(memory.id, _Hit(memory)).dense = score
            hits[memory.id].dense_rank = rank
        for rank, (memory, score) in enumerate(sorted(keyword, key=lambda h: -h[1]), start=1):
            hit = hits.setdefault(memory.id, _Hit(memory))
            hit.keyword, hit.keyword_rank = score, rank
        for rank, memory in enumerate(recent, start=1):
            hits.setdefault(memory.id, _Hit(memory)).recent_rank = rank
        return hits

    def _score(self, hit: _Hit, evidence: KeywordEvidence, now: int) -> ScoreBreakdown:
        p = self._policy
        if p.retrieval == "keyword":  # keyword-only: the match share is all there is
            fused, base = evidence.match, 0.0
        else:
            fused = fuse(hit.dense, evidence, hit.recent_rank is not None, p.fusion)
            base = unlifted(hit.dense, evidence, p.fusion)
        age_days = max(0.0, (now - hit.memory.occurred_at) / DAY_MS)
        decay = 2.0 ** (-age_days / p.recency_half_life_days)
        return ScoreBreakdown(
            dense=hit.dense or 0.0,
            keyword=hit.keyword or 0.0,
            fused=fused,
            decay=1.0 - p.recency_share + p.recency_share * decay,
            importance_weight=0.75 + 0.5 * hit.memory.importance,
            keyword_match=evidence.match,
            use_decay=use_decay(hit.memory, now, p.use_share, p.use_decay_per_day),
            unlifted=base,
        )

    def _prefer_latest(
        self,
        scored: list[tuple[_Hit, ScoreBreakdown]],
        terms: QueryTerms,
        retrieval: Retrieval,
    ) -> list[tuple[_Hit, ScoreBreakdown]]:
        """For a question about now: the newer of two similar relevant memories gains.

        "What phone does the user use now?" matches the old phone as well as the
        switch to a new one, often the old one better: of two memories about one
        thing, the one that happened later is the current state.
        """
        fusion = self._policy.fusion
        over = [i for i, (_, b) in enumerate(scored) if b.fused >= floor_for(terms, fusion)]
        similarities = retrieval.similarities([scored[i][0].memory for i in over])
        if len(over) < 2 or similarities is None:
            return scored
        out = list(scored)
        for a, i in enumerate(over):
            newer = scored[i][0].memory.occurred_at
            if any(
                b != a
                and similarities[a, b] >= fusion.latest_similarity
                and scored[j][0].memory.occurred_at < newer
                for b, j in enumerate(over)
            ):
                hit, breakdown = scored[i]
                out[i] = (
                    hit,
                    dataclasses.replace(breakdown, fused=breakdown.fused + fusion.latest_bonus),
                )
        return out

    async def _rerank(
        self,
        query: RecallQuery,
        strict: MemoryFilter,
        scored: list[tuple[_Hit, ScoreBreakdown]],
        now: int,
    ) -> Judgement | None:
        """The judge's verdict on the best candidates that pass the request's filters."""
        assert self._judge is not None
        policy = self._policy.rerank
        read = [
            hit.memory
            for hit, _ in scored
            if _filter_reason(hit.memory, strict, now) is None
            and not _under_min_score(hit, query.min_score)
        ][: max(policy.candidates, query.top_k)]
        if not read:
            return None
        with self._stages.stage("rerank") as record:
            record.set("candidates_in", len(read))
            verdict = await self._judge.rank(query.query, [passage(m, policy) for m in read])
            if verdict is None:  # reported as degraded: the offline ranking answers
                raise BackendUnavailableError("the relevance judge gave no verdict")
            judged = judgement(read, verdict)
            record.set("candidates_out", len(judged.kept))
            return judged

    def _select(
        self,
        query: RecallQuery,
        strict: MemoryFilter,
        scored: list[tuple[_Hit, ScoreBreakdown]],
        now: int,
        retrieval: Retrieval,
        terms: QueryTerms,
        judged: Judgement | None = None,
    ) -> tuple[list[Candidate], list[tuple[Memory, ScoreBreakdown]]]:
        """Applies filters, the relevance gate, duplicate removal and top_k, in that order.

        With the judge's verdict, the memories it kept come first in its order and
        replace the calibrated gate; the rest are dropped.
        """
        if judged is not None:
            scored = sorted(scored, key=lambda pair: judged.rank_of(pair[0].memory.id))
        gate = self._policy.fusion
        if self._policy.retrieval == "keyword":
            gate = dataclasses.replace(
                gate, floor=gate.keyword_min_match, short_query_floor=gate.keyword_min_match
            )
        best = max((b.final for _, b in scored), default=0.0)
        best_unlifted = max((b.unlifted_final for _, b in scored), default=0.0)
        candidates: list[Candidate] = []
        kept: list[tuple[Memory, ScoreBreakdown]] = []
        deduper = retrieval.deduper(self._policy.duplicate_similarity)
        for hit, breakdown in scored:
            memory = hit.memory
            reason = _filter_reason(memory, strict, now)
            duplicate_of = ""
            # A floor the caller chose is a hard floor on the dense score; the judge's
            # verdict, else the calibrated gate on the fused score, decides the rest.
            if reason is None and _under_min_score(hit, query.min_score):
                reason = DropReason.BELOW_THRESHOLD
            elif reason is None and judged is not None and memory.id not in judged.kept:
                # What the judge did not read ranked below everything it did.
                read = memory.id in judged.read
                reason = DropReason.JUDGED_IRRELEVANT if read else DropReason.BELOW_THRESHOLD
            elif (
                reason is None
                and judged is None
                and query.min_score is None
                and not passes(
                    breakdown.fused,
                    breakdown.final,
                    best,
                    terms,
                    gate,
                    breakdown.unlifted_final,
                    best_unlifted,
                )
            ):
                reason = DropReason.BELOW_THRESHOLD
            if reason is None:
                twin = deduper.twin(memory)
                if twin is not None:
                    reason, duplicate_of = DropReason.DUPLICATE, twin.id
            if reason is None and len(kept) >= query.top_k:
                reason = DropReason.BEYOND_TOP_K
            if reason is None:
                kept.append((memory, breakdown))
                deduper.keep(memory)
            candidates.append(Candidate(memory, breakdown, reason, duplicate_of))
        return candidates, kept

    def _weight(self, line: str) -> float:
        """token_weight of a context line, remembered: the same memories recur in recalls."""
        weight = self._line_weights.get(line)
        if weight is None:
            weight = token_weight(line)
            self._line_weights[line] = weight
            if len(self._line_weights) > LINE_COST_CACHE:
                self._line_weights.pop(next(iter(self._line_weights)))
        return weight

    def _pack(
        self,
        query: RecallQuery,
        profile: Profile | None,
        kept: list[tuple[Memory, ScoreBreakdown]],
        candidates: list[Candidate],
    ) -> tuple[list[ScoredMemory], str, int, list[Candidate]]:
        """Packs items and profile into the budget (`packing.pack`) and renders them."""
        packed = pack(
            query.token_budget or None,
            profile.memories if profile else [],
            [m for m, _ in kept],
            self._weight,
        )
        items = [ScoredMemory(m, b.final, b) for i, (m, b) in enumerate(kept) if i in packed.items]
        over = {m.id for i, (m, _) in enumerate(kept) if i not in packed.items}
        candidates = [
            dataclasses.replace(c, drop_reason=DropReason.OVER_BUDGET)
            if c.memory.id in over and c.drop_reason is None
            else c
            for c in candidates
        ]
        context = render_context(packed.profile, [i.memory for i in items])
        return items, context, round(packed.weight), candidates


async def _nothing(value: T) -> T:
    return value


def _under_min_score(hit: _Hit, min_score: float | None) -> bool:
    """Below the caller's hard floor on the dense score (None: no such floor)."""
    return min_score is not None and (hit.dense is None or hit.dense < min_score)


def _filter_reason(memory: Memory, strict: MemoryFilter, now: int) -> DropReason | None:
    """Why a memory fails the request's filters (explain mode searches wider)."""
    if memory.status is Status.SUPERSEDED:
        return DropReason.SUPERSEDED
    if memory.status is not Status.ACTIVE:
        return DropReason.INACTIVE
    if memory.is_expired(now):
        return DropReason.EXPIRED
    if strict.scopes is not None and memory.agent_scope not in strict.scopes:
        return DropReason.OTHER_SCOPE
    if (
        (strict.types and memory.type not in strict.types)
        or (strict.tiers and memory.tier not in strict.tiers)
        or (strict.tags and not strict.tags <= set(memory.tags))
        or (strict.session_id and memory.session_id != strict.session_id)
        or (strict.occurred_after and memory.occurred_at < strict.occurred_after)
        or (strict.occurred_before and memory.occurred_at >= strict.occurred_before)
        or (strict.created_after and memory.created_at < strict.created_after)
        or (strict.created_before and memory.created_at >= strict.created_before)
    ):
        return DropReason.FILTERED
    return None
