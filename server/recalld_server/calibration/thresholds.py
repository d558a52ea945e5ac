"""Choosing the similarity thresholds from labelled pairs: pure rules, no model.

Near-duplicates: a false merge loses a fact (a change of mind swallowed as a
duplicate), a missed duplicate only stores a redundant row, so the threshold is
set above the most similar pair known to be distinct that the server's other
guards (topics, numbers and identifiers, script, wording: `lifecycle.near_duplicate`)
would let through, plus a margin. The margin is a share of the headroom left
below 1.0 rather than a fixed step, because models spread their cosines
differently: on the default model the highest such pair of the older 40-pair
set (0.832) gives 0.88, on WordLlama (0.926) 0.95: the thresholds shipped for
them. A model that leaves no headroom merges exact duplicates only.

The judge's floors decide which pairs a model is asked about; they keep nearly
all true pairs above them (a low quantile of the labelled positives), but never
sink below the model's noise, the similarity of unrelated memories: under it a
floor selects pairs no better than chance, and the pair scan grows with the
square of a user's memories.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from recalld_server.calibration.model import EXACT_HASH_ONLY

HEADROOM_SHARE = 0.3
"""The margin above the most similar unsafe pair, as a share of what is left below 1.0."""
MAX_USEFUL_THRESHOLD = 0.99
"""Above this no paraphrase would merge: the model leaves no room, so exact duplicates only."""
JUDGE_KEEP = 0.95
"""The share of labelled true pairs a judge floor keeps above it."""


@dataclasses.dataclass(frozen=True, slots=True)
class ScoredPair:
    """One labelled pair under a model.

    Attributes:
        similarity: The two texts' cosine.
        same: Labelled as one fact (a duplicate).
        mergeable: Passes every guard of the write rules except the similarity.
    """

    similarity: float
    same: bool
    mergeable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class MergeCounts:
    """What a near-duplicate threshold does to a set of pairs."""

    caught: int
    duplicates: int
    false_merges: int
    distinct: int


def round2(value: float) -> float:
    """Rounds to the nearest two decimals (halves up)."""
    return math.floor(round(value * 100, 6) + 0.5) / 100


def floor2(value: float) -> float:
    """Rounds down to two decimals (a value already on two decimals stays)."""
    return math.floor(round(value * 100, 6)) / 100


def highest_unsafe(pairs: Sequence[ScoredPair]) -> float | None:
    """The most similar distinct pair the other guards would merge (None: there is none)."""
    unsafe = [p.similarity for p in pairs if not p.same and p.mergeable]
    return max(unsafe) if unsafe else None


def near_duplicate_threshold(unsafe: float | None) -> float:
    """The lowest threshold that merges no pair at or below `unsafe`, plus the margin.

    None (no distinct pair to measure against) is no evidence that any threshold is
    safe: EXACT_HASH_ONLY, as is a threshold above MAX_USEFUL_THRESHOLD.
    """
    if unsafe is None or not math.isfinite(unsafe):
        return EXACT_HASH_ONLY
    threshold = round2(unsafe + HEADROOM_SHARE * max(0.0, 1.0 - unsafe))
    if threshold <= unsafe:  # rounding never lands on or under the pair itself
        threshold = math.floor(round(unsafe * 100, 6) + 1) / 100
    return threshold if threshold <= MAX_USEFUL_THRESHOLD else EXACT_HASH_ONLY


def merge_counts(pairs: Sequence[ScoredPair], threshold: float) -> MergeCounts:
    """Duplicates caught and distinct pairs falsely merged at a threshold."""
    merged = [p.mergeable and p.similarity >= threshold for p in pairs]
    return MergeCounts(
        caught=sum(m and p.same for p, m in zip(pairs, merged, strict=True)),
        duplicates=sum(p.same for p in pairs),
        false_merges=sum(m and not p.same for p, m in zip(pairs, merged, strict=True)),
        distinct=sum(not p.same for p in pairs),
    )


def judge_floor(positives: Sequence[float], noise: float, keep: float = JUDGE_KEEP) -> float:
    """A floor keeping `keep` of the labelled true pairs above it, never under `noise`.

    Rounded down to two decimals; EXACT_HASH_ONLY (never ask) without positives.
    """
    if not positives:
        return EXACT_HASH_ONLY
    quantile = float(np.quantile(np.asarray(positives, dtype=np.float64), 1.0 - keep))
    return floor2(max(quantile, noise))


def kept_share(positives: Sequence[float], floor: float) -> float:
    """The share of `positives` at or above `floor`."""
    if not positives:
        return 0.0
    return sum(s >= floor for s in positives) / len(positives)
