"""Memory lifecycle policy: what a write does, when a memory expires, what to merge.

Pure functions over domain values: no storage, no protobuf, no clock. The
service gathers the facts (existing memories, similarities, the time) and
applies the decisions.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Mapping

import numpy as np

from recalld_server.domain.core.model import DAY_MS, Memory, NewMemory, Status, Tier
from recalld_server.domain.core.text import salient_tokens
from recalld_server.domain.rules.constraints import affirmed, broken_by, core_rules
from recalld_server.domain.rules.wording import differ_in_detail, script


@dataclasses.dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """Thresholds of the lifecycle rules, with their documented defaults.

    Attributes:
        tier_ttl_days: Days after the last use at which a memory of the tier expires
            (0: never), unless the caller set expire_at.
        draft_below_confidence: Writes with lower confidence wait as drafts.
        near_duplicate_similarity: Cosine similarity at or above which two memories
            count as the same (docs/lifecycle.md has the calibration).
        demote_unused_days: P1 memories unused this long are demoted to P2, and their
            expiry restarts from the demotion with P2's TTL. It must come before P1's
            own expiry, or an unused P1 memory expires before it is ever demoted.
        retention_days: Superseded and archived (expired or soft-forgotten) memories
            are purged this long after they last changed, their history reduced to
            a tombstone (0: kept forever).
    """

    tier_ttl_days: dict[Tier, int] = dataclasses.field(
        default_factory=lambda: {Tier.P0: 0, Tier.P1: 90, Tier.P2: 30}
    )
    draft_below_confidence: float = 0.5
    near_duplicate_similarity: float = 0.88
    demote_unused_days: int = 60
    retention_days: float = 30.0

    def __post_init__(self) -> None:
        if self.retention_days < 0:
            raise ValueError("retention_days must be 0 (keep forever) or more")
        p1 = self.tier_ttl_days.get(Tier.P1, 0)
        if self.demote_unused_days <= 0:
            raise ValueError("demote_unused_days must be positive")
        if p1 and self.demote_unused_days >= p1:
            raise ValueError(
                f"demote_unused_days ({self.demote_unused_days}) must be under the P1 TTL "
                f"({p1} days): an unused P1 memory would expire before being demoted"
            )

    def expiry(self, tier: Tier, last_used_ms: int) -> int:
        """The tier's expiry counted from the last use (0: never)."""
        days = self.tier_ttl_days.get(tier, 0)
        return last_used_ms + days * DAY_MS if days else 0


class Action(enum.Enum):
    """What a write does."""

    CREATE = "create"
    DRAFT = "draft"
    DUPLICATE = "duplicate"
    PROMOTE = "promote"
    SUPERSEDE = "supersede"
    CONFLICT = "conflict"


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    """The action and the existing memory it concerns (if any)."""

    action: Action
    existing: Memory | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class WriteFacts:
    """What storage knows that matters for one write.

    Attributes:
        same_content: An active or draft memory with the same normalised content in the
            same user and scope.
        nearest: The most similar active or draft memory in the same user and scope,
            with its cosine similarity.
        topic_holder: The active memory with the same topic_key in the same user and
            scope.
    """

    same_content: Memory | None = None
    nearest: tuple[Memory, float] | None = None
    topic_holder: Memory | None = None


def topics_compatible(a: str, b: str) -> bool:
    """Two memories can be duplicates only if they do not name different topics."""
    return not a or not b or a == b


def near_duplicate(
    a_content: str,
    a_topic: str,
    b_content: str,
    b_topic: str,
    similarity: float,
    policy: LifecyclePolicy,
) -> bool:
    """Similar enough, same topic (or none), and nothing in the wording that tells them apart.

    The wording rules (no differing number, date or identifier; same script; no
    swapped or added detail) keep a merge from ever losing a fact; they miss
    paraphrases across languages, which the optional judge can decide.
    """
    return (
        similarity >= policy.near_duplicate_similarity
        and topics_compatible(a_topic, b_topic)
        and salient_tokens(a_content) == salient_tokens(b_content)
        and script(a_content) == script(b_content)
        and not differ_in_detail(a_content, b_content)
    )


def decide_write(new: NewMemory, facts: WriteFacts, policy: LifecyclePolicy) -> Decision:
    """Applies the write rules in order: duplicate, topic (supersede/conflict), draft.

    A duplicate of a draft promotes the draft (two observations confirm it),
    after which the topic rules apply to the promoted memory.
    """
    duplicate = facts.same_content
    if duplicate is None and facts.nearest is not None:
        candidate, similarity = facts.nearest
        if near_duplicate(
            candidate.content, candidate.topic_key, new.content, new.topic_key, similarity, policy
        ):
            duplicate = candidate
    if duplicate is not None:
        if duplicate.status is Status.DRAFT:
            return Decision(Action.PROMOTE, duplicate)
        return Decision(Action.DUPLICATE, duplicate)
    confidence = 1.0 if new.confidence is None else new.confidence
    if confidence < policy.draft_below_confidence:
        return Decision(Action.DRAFT)
    return decide_topic(facts.topic_holder)


def decide_topic(holder: Memory | None) -> Decision:
    """A memory entering a topic: supersede the holder, or park it if the holder is core."""
    if holder is None:
        return Decision(Action.CREATE)
    if holder.tier is Tier.P0:
        return Decision(Action.CONFLICT, holder)
    return Decision(Action.SUPERSEDE, holder)


def demoted_expiry(memory: Memory, policy: LifecyclePolicy, now_ms: int) -> int:
    """Expiry of a memory demoted to P2 now: an explicit one stays, else P2's TTL from now.

    Counted from the last use instead, a memory demoted for disuse would already be
    past P2's TTL and expire at the demotion itself.
    """
    if memory.expire_explicit:
        return memory.expire_at
    return policy.expiry(Tier.P2, now_ms)


def refreshed_expiry(memory: Memory, policy: LifecyclePolicy) -> int:
    """Expiry after a use: explicit expiries stay, tier expiries restart from last use."""
    if memory.expire_explicit:
        return memory.expire_at
    return policy.expiry(memory.tier, memory.last_used_at)


PairKey = tuple[str, str, str, str]
"""Two memories as they were judged: (older id, its content hash, newer id, its hash).

A verdict applies only while both contents are unchanged."""


def pair_key(a: Memory, b: Memory) -> PairKey:
    """The key of a pair, the older memory (smaller id) first."""
    if b.id < a.id:
        a, b = b, a
    return (a.id, a.content_hash, b.id, b.content_hash)


def near_duplicate_groups(
    memories: list[Memory],
    vectors: np.ndarray,
    policy: LifecyclePolicy,
    judged_same: Collection[PairKey] = (),
) -> list[tuple[Memory, Memory, float]]:
    """Pairs (keep, merge, similarity) folding near-duplicates into the oldest memory.

    Only memories of the same scope and compatible topics are compared. A memory
    is merged at most once, into the oldest member of its group. Pairs in
    `judged_same` (the judge's verdicts) merge as near-duplicates do.
    """
    if len(memories) < 2:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    # Memories in age order (oldest first), so that each pair (i, j) below has i older.
    order = sorted(range(len(memories)), key=lambda i: memories[i].id)
    aged = [memories[i] for i in order]
    unit = unit[order]
    similarity = unit @ unit.T
    # Only pairs over the threshold, or judged the same, are looked at in Python: a
    # user may hold thousands of memories, and the pairs are millions.
    candidates = np.triu(similarity >= policy.near_duplicate_similarity, k=1)
    if judged_same:
        position = {m.id: k for k, m in enumerate(aged)}
        for older, _, newer, _ in judged_same:
            if older in position and newer in position:
                candidates[position[older], position[newer]] = True
    merged: set[int] = set()
    pairs: list[tuple[Memory, Memory, float]] = []
    for i, j in np.argwhere(candidates):  # row-major: by the older memory, then the newer
        if i in merged or j in merged:
            continue
        a, b = aged[i], aged[j]
        score = float(similarity[i, j])
        if (
            a.agent_scope == b.agent_scope
            and b.tier is not Tier.P0
            and (
                near_duplicate(a.content, a.topic_key, b.content, b.topic_key, score, policy)
                or pair_key(a, b) in judged_same
            )
        ):
            merged.add(int(j))
            pairs.append((a, b, score))
    return pairs


def possible_contradictions(
    memories: list[Memory],
    vectors: np.ndarray,
    verdicts: Mapping[PairKey, bool] | None = None,
) -> list[tuple[Memory, Memory, float, str]]:
    """(core, other, similarity, reason) for each core memory another memory may contradict.

    A pair the judge decided is reported on its verdict (reason "judge"). Otherwise
    the offline rules: the other memory, of the same scope, breaks something the
    core memory rules out (domain/rules/constraints.py; the reason names it). Similarity
    decides nothing here: a contradiction is often far in embedding space.
    """
    core = [i for i, m in enumerate(memories) if m.tier is Tier.P0]
    if not core:
        return []
    judged = verdicts or {}
    rules = {i: core_rules(memories[i].content) for i in core}
    if not judged and all(r is None for r in rules.values()):
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    texts: dict[int, str | None] = {}  # each memory read once, however many core memories
    out = []
    for i in core:
        scores = unit @ unit[i]
        for j, other in enumerate(memories):
            if j == i or other.agent_scope != memories[i].agent_scope:
                continue
            verdict = judged.get(pair_key(memories[i], other)) if judged else None
            if verdict is not None:
                if verdict:
                    out.append((memories[i], other, float(scores[j]), "judge"))
                continue
            core_rule = rules[i]
            if core_rule is None:
                continue
            if j not in texts:
                texts[j] = affirmed(other.content)
            text = texts[j]
            broken = broken_by(core_rule, text) if text is not None else []
            if broken:
                out.append((memories[i], other, float(scores[j]), ", ".join(broken)))
    return out
