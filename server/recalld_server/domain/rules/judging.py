"""The optional judge: a model reads the pairs the offline rules cannot decide.

The wording rules merge only what they can vouch for (no false merge on the
labelled pairs, at the cost of most paraphrases: synonyms, other languages), and
an embedding cannot tell "vegetarian" from "loves a rare steak". With a judge
configured, consolidation asks it about a user's borderline pairs: similar
memories the rules did not merge, and each core (P0) memory against the memories
near it. Questions are bounded per user and run and each pair is asked about
once (verdicts are remembered by both contents, so an edited memory is judged
again and never merged on an old verdict). Consolidation asks before it takes
the user's lock: writers never wait on a model.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses

import numpy as np

from recalld_server.domain.core.model import Memory, Tier
from recalld_server.domain.core.ports import FactJudge
from recalld_server.domain.core.text import salient_tokens
from recalld_server.domain.rules.lifecycle import (
    LifecyclePolicy,
    PairKey,
    near_duplicate,
    pair_key,
    topics_compatible,
)


@dataclasses.dataclass(frozen=True, slots=True)
class JudgePolicy:
    """Which pairs the judge is asked about, and how many per user and run.

    Attributes:
        duplicate_similarity: Cosine at or above which two memories the rules keep
            apart are asked about, most similar first.
        contradiction_similarity: Cosine at or above which a memory is asked about
            against a core memory, newest first (contradictions are often far:
            "vegetarian" and "loves a rare steak" score 0.35 on the default model).
        max_questions: New questions per user and run, half for contradictions and
            half for duplicates (either takes what the other leaves). Remembered
            verdicts cost nothing, so later runs work through a backlog.
        concurrency: Questions in flight at once.
        remembered: Verdicts kept in memory, by the two contents.
    """

    duplicate_similarity: float = 0.6
    contradiction_similarity: float = 0.2
    max_questions: int = 24
    concurrency: int = 4
    remembered: int = 20_000


@dataclasses.dataclass(slots=True)
class Verdicts:
    """What the judge said about one user's pairs, by pair."""

    same: set[PairKey] = dataclasses.field(default_factory=set)
    contradicts: dict[PairKey, bool] = dataclasses.field(default_factory=dict)
    asked: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Question:
    """One pair to ask about: `first` is the core memory of a contradiction."""

    kind: str
    first: Memory
    second: Memory
    similarity: float


class VerdictMemory:
    """Verdicts by content, most recently used kept: a pair is asked about once."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._verdicts: collections.OrderedDict[tuple[str, str, str], bool] = (
            collections.OrderedDict()
        )

    @staticmethod
    def _key(question: Question) -> tuple[str, str, str]:
        a, b = question.first.content_hash, question.second.content_hash
        if question.kind == "duplicate" and b < a:
            a, b = b, a
        return (question.kind, a, b)

    def get(self, question: Question) -> bool | None:
        """The verdict given on these two contents, if any."""
        key = self._key(question)
        verdict = self._verdicts.get(key)
        if verdict is not None:
            self._verdicts.move_to_end(key)
        return verdict

    def put(self, question: Question, verdict: bool) -> None:
        """Remembers a verdict, forgetting the least recently used beyond capacity."""
        self._verdicts[self._key(question)] = verdict
        self._verdicts.move_to_end(self._key(question))
        while len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)


def questions(
    memories: list[Memory],
    vectors: np.ndarray,
    lifecycle: LifecyclePolicy,
    policy: JudgePolicy,
) -> tuple[list[Question], list[Question]]:
    """The pairs worth a model's time: (contradictions newest first, duplicates most similar)."""
    if len(memories) < 2:
        return [], []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = unit @ unit.T
    newest_first = sorted(range(len(memories)), key=lambda k: memories[k].id, reverse=True)
    cores = [i for i, m in enumerate(memories) if m.tier is Tier.P0]
    contradictions = [
        Question("contradiction", memories[i], memories[j], float(similarity[i, j]))
        for j in newest_first
        for i in cores
        if j != i
        and memories[j].agent_scope == memories[i].agent_scope
        and similarity[i, j] >= policy.contradiction_similarity
    ]
    duplicates: list[Question] = []
    # Only the pairs over the floor are looked at in Python (a user may hold thousands).
    for i, j in np.argwhere(np.triu(similarity >= policy.duplicate_similarity, k=1)):
        # The older first, as a merge keeps it.
        a, b = sorted((memories[i], memories[j]), key=lambda m: m.id)
        score = float(similarity[i, j])
        if (
            a.agent_scope == b.agent_scope
            and b.tier is not Tier.P0
            and topics_compatible(a.topic_key, b.topic_key)
            # A different number or identifier is a different fact, whatever a model says.
            and salient_tokens(a.content) == salient_tokens(b.content)
            and not near_duplicate(a.content, a.topic_key, b.content, b.topic_key, score, lifecycle)
        ):
            duplicates.append(Question("duplicate", a, b, score))
    duplicates.sort(key=lambda q: -q.similarity)
    return contradictions, duplicates


async def judge_user(
    judge: FactJudge,
    remembered: VerdictMemory,
    memories: list[Memory],
    vectors: np.ndarray,
    lifecycle: LifecyclePolicy,
    policy: JudgePolicy,
) -> Verdicts:
    """The verdicts on one user's pairs: remembered ones, then new ones within the bound."""
    contradictions, duplicates = questions(memories, vectors, lifecycle, policy)
    verdicts = Verdicts()

    def record(question: Question, verdict: bool) -> None:
        key = pair_key(question.first, question.second)
        if question.kind == "duplicate":
            if verdict:
                verdicts.same.add(key)
        else:
            verdicts.contradicts[key] = verdict

    def unanswered(candidates: list[Question]) -> list[Question]:
        out = []
        for question in candidates:
            verdict = remembered.get(question)
            if verdict is None:
                out.append(question)
            else:
                record(question, verdict)
        return out

    open_contradictions, open_duplicates = unanswered(contradictions), unanswered(duplicates)
    half = policy.max_questions // 2
    contradiction_share = max(half, policy.max_questions - len(open_duplicates))
    asked = open_contradictions[:contradiction_share]
    asked += open_duplicates[: policy.max_questions - len(asked)]
    verdicts.asked = len(asked)
    gate = asyncio.Semaphore(max(1, policy.concurrency))

    async def ask(question: Question) -> None:
        async with gate:
            if question.kind == "duplicate":
                verdict = await judge.same_fact(question.first.content, question.second.content)
            else:
                verdict = await judge.contradicts(question.first.content, question.second.content)
        if verdict is not None:
            remembered.put(question, verdict)
            record(question, verdict)

    await asyncio.gather(*(ask(q) for q in asked))
    return verdicts
