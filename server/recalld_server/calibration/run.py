"""The calibration run: measure a model on the shipped labelled sets, choose its thresholds.

Two steps. `measure` embeds every text of the sets once (memories and pair
sides with `embed`, questions with `embed_query` where the model has it) and
keeps what the choices need: each labelled pair's cosine and whether the
server's other guards would merge it, the similarity of unrelated memories
(pairs of memories of different people in the precision set: distinct facts by
construction) and every question's evidence. `choose` then sets the
near-duplicate threshold and the judge's floors (`thresholds`) and searches the
fusion on the training half (`fusion_search`); `figures` scores any calibration
on the same measurements, the test half included, so a shipped calibration and
a new one can be compared.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from recalld_server.calibration import dataset, thresholds
from recalld_server.calibration.fallback import FALLBACK_FUSION
from recalld_server.calibration.fusion_search import (
    GRID,
    Choice,
    Question,
    dense_only,
    keyword_gate,
    keyword_only,
    question_features,
    score,
    search,
)
from recalld_server.calibration.model import Calibration, now_iso
from recalld_server.calibration.thresholds import ScoredPair
from recalld_server.domain.core.ports import Embedder
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy, near_duplicate

BATCH = 128
"""Texts per embedding call."""
FIGURE_METRICS = ("hit@1", "hit@3", "mrr", "macro_hit@1", "abstain", "false_inclusion")
_ANY_SIMILARITY = LifecyclePolicy(near_duplicate_similarity=-math.inf)

StepFn = Callable[[str], None]


@dataclasses.dataclass
class Measurements:
    """What one model scores on the labelled sets (see the module docstring).

    Attributes:
        model_id: The model measured.
        duplicates: Duplicate/distinct pairs by set: "train" and "test" (pairs.json),
            "older" (near_duplicates.json, no split: calibration uses it as train).
        contradictions: The cosines of the contradiction pairs, by split.
        unrelated_unsafe: The most similar pair of unrelated memories the other
            guards would merge (None: none above the labelled ones).
        unrelated_median / unrelated_p99: Cosines of unrelated memories.
        questions: The precision questions' evidence (both splits).
        texts: Texts embedded.
    """

    model_id: str
    duplicates: dict[str, list[ScoredPair]]
    contradictions: dict[str, list[float]]
    unrelated_unsafe: float | None
    unrelated_median: float
    unrelated_p99: float
    questions: list[Question]
    texts: int

    def split(self, name: str) -> list[Question]:
        """The questions of one split."""
        return [q for q in self.questions if q.split == name]


def _quiet(_: str) -> None:
    pass


async def _embed_all(
    embed: Callable[[Sequence[str]], Any], texts: Sequence[str], step: StepFn, what: str
) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(unique), BATCH):
        chunk = unique[start : start + BATCH]
        vectors = np.asarray(await embed(chunk), dtype=np.float32)
        out.update(zip(chunk, vectors, strict=True))
        step(f"embedded {min(start + BATCH, len(unique))}/{len(unique)} {what}")
    return out


async def measure(embedder: Embedder, step: StepFn = _quiet) -> Measurements:
    """Embeds the labelled sets once and measures the model on them."""
    users, queries = dataset.load_precision()
    pairs = dataset.load_pairs()
    older = dataset.load_near_duplicates()
    stored = [m["content"] for memories in users.values() for m in memories]
    for row in pairs["duplicates"]:
        stored += [row["a"], row["b"]]
    for row in pairs["contradictions"]:
        stored += [row["core"], row["other"]]
    stored += [t for row in older for t in (row["a"], row["b"])]
    vector = await _embed_all(embedder.embed, stored, step, "memories and pairs")
    query_embed = getattr(embedder, "embed_query", embedder.embed)
    asked = await _embed_all(query_embed, [q["query"] for q in queries], step, "questions")

    def cosine(a: str, b: str) -> float:
        return float(vector[a] @ vector[b])

    duplicates: dict[str, list[ScoredPair]] = {"train": [], "test": [], "older": []}
    for row in pairs["duplicates"]:
        duplicates[row["split"]].append(
            _scored(row["a"], row["b"], cosine(row["a"], row["b"]), row["label"] == "duplicate")
        )
    for row in older:
        duplicates["older"].append(
            _scored(row["a"], row["b"], cosine(row["a"], row["b"]), bool(row["duplicate"]))
        )
    contradictions: dict[str, list[float]] = {"train": [], "test": []}
    for row in pairs["contradictions"]:
        if row["label"] == "contradiction":
            contradictions[row["split"]].append(cosine(row["core"], row["other"]))
    matrices = {u: np.stack([vector[m["content"]] for m in ms]) for u, ms in users.items()}
    labelled = thresholds.highest_unsafe(duplicates["train"] + duplicates["older"])
    unsafe, median, p99 = _unrelated(users, matrices, labelled)
    step("scoring the questions' keyword evidence")
    questions = question_features(
        users,
        queries,
        matrices,
        {q["id"]: asked[q["query"]] for q in queries},
        dataset.present_ms(),
    )
    return Measurements(
        embedder.model_id,
        duplicates,
        contradictions,
        unsafe,
        median,
        p99,
        questions,
        len(set(stored)) + len({q["query"] for q in queries}),
    )


def _scored(a: str, b: str, similarity: float, same: bool) -> ScoredPair:
    return ScoredPair(similarity, same, near_duplicate(a, "", b, "", 0.0, _ANY_SIMILARITY))


def _unrelated(
    users: Mapping[str, list[dict[str, Any]]],
    matrices: Mapping[str, np.ndarray],
    above: float | None,
    checks: int = 5000,
) -> tuple[float | None, float, float]:
    """(most similar mergeable pair over `above`, median, 99th percentile) of unrelated pairs.

    Unrelated: memories of two different people. Only pairs over `above` are put to
    the guards, most similar first, at most `checks` for each two people.
    """
    names = list(users)
    cosines = []
    unsafe: float | None = None
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            similarity = matrices[first] @ matrices[second].T
            cosines.append(similarity.ravel())
            floor = max(x for x in (above, unsafe, -1.0) if x is not None)
            over = np.argwhere(similarity > floor)
            order = np.argsort(-similarity[over[:, 0], over[:, 1]], kind="stable")[:checks]
            for a, b in over[order]:
                x, y = users[first][a], users[second][b]
                if near_duplicate(
                    x["content"],
                    x.get("topic_key", ""),
                    y["content"],
                    y.get("topic_key", ""),
                    0.0,
                    _ANY_SIMILARITY,
                ):
                    unsafe = float(similarity[a, b])
                    break
    every = np.concatenate(cosines)
    return unsafe, float(np.median(every)), float(np.quantile(every, 0.99))


def starts(recall: RecallPolicy) -> list[Choice]:
    """Where the fusion search starts: the default model's policy, two variations, the fallback."""
    share, half_life = recall.recency_share, recall.recency_half_life_days
    return [
        Choice(FusionPolicy(), share, half_life),
        Choice(
            FusionPolicy(keyword_weight=0.2, latest_bonus=0.2, latest_similarity=0.5),
            share,
            half_life,
        ),
        Choice(
            FusionPolicy(keyword_weight=0.1, relative_floor=0.7, latest_bonus=0.3), share, half_life
        ),
        Choice(FALLBACK_FUSION, share, half_life),
    ]


def choose(
    measured: Measurements, grid: Mapping[str, Sequence[float]] = GRID, rounds: int = 4
) -> Calibration:
    """The calibration the measurements call for, with its figures."""
    labelled = measured.duplicates["train"] + measured.duplicates["older"]
    unsafe = [
        x for x in (thresholds.highest_unsafe(labelled), measured.unrelated_unsafe) if x is not None
    ]
    near = thresholds.near_duplicate_threshold(max(unsafe) if unsafe else None)
    same = [p.similarity for p in labelled if p.same]
    judge_duplicate = thresholds.judge_floor(same, measured.unrelated_p99)
    judge_contradiction = thresholds.judge_floor(
        measured.contradictions["train"], measured.unrelated_median
    )
    recall = RecallPolicy()
    choice, _ = search(measured.split("train"), starts(recall), grid, rounds)
    calibration = Calibration(
        model_id=measured.model_id,
        near_duplicate_similarity=near,
        judge_duplicate_similarity=judge_duplicate,
        judge_contradiction_similarity=judge_contradiction,
        fusion=choice.fusion,
        created_at=now_iso(),
    )
    return dataclasses.replace(calibration, figures=figures(measured, calibration))


def figures(measured: Measurements, calibration: Calibration) -> dict[str, float]:
    """What a calibration reaches on the measurements: merges, judge floors, recall."""
    out: dict[str, float] = {"texts_embedded": float(measured.texts)}
    unsafe = thresholds.highest_unsafe(measured.duplicates["train"] + measured.duplicates["older"])
    for name, value in (
        ("near_duplicate.labelled_unsafe", unsafe),
        ("near_duplicate.unrelated_unsafe", measured.unrelated_unsafe),
        ("unrelated.median", measured.unrelated_median),
        ("unrelated.p99", measured.unrelated_p99),
    ):
        if value is not None:
            out[name] = round(value, 4)
    for name, pairs in measured.duplicates.items():
        counts = thresholds.merge_counts(pairs, calibration.near_duplicate_similarity)
        for field in dataclasses.fields(counts):
            out[f"near_duplicate.{name}.{field.name}"] = float(getattr(counts, field.name))
    for split in ("train", "test"):
        same = [p.similarity for p in measured.duplicates[split] if p.same]
        out[f"judge.duplicate.{split}.kept"] = round(
            thresholds.kept_share(same, calibration.judge_duplicate_similarity), 4
        )
        out[f"judge.contradiction.{split}.kept"] = round(
            thresholds.kept_share(
                measured.contradictions[split], calibration.judge_contradiction_similarity
            ),
            4,
        )
    out.update(_recall_figures(measured, calibration.fusion))
    return out


def _recall_figures(measured: Measurements, fusion: FusionPolicy) -> dict[str, float]:
    recall = RecallPolicy()
    chosen = Choice(fusion, recall.recency_share, recall.recency_half_life_days)
    fallback = dataclasses.replace(chosen, fusion=FALLBACK_FUSION)
    train, test = measured.split("train"), measured.split("test")
    runs: dict[str, dict[str, float]] = {
        "hybrid.train": score(train, chosen),
        "hybrid.test": score(test, chosen),
        "dense.test": score([dense_only(q) for q in test], chosen),
        "dense.train": score([dense_only(q) for q in train], chosen),
        "keyword.test": score([keyword_only(q) for q in test], keyword_gate(chosen)),
        "keyword.train": score([keyword_only(q) for q in train], keyword_gate(chosen)),
        "fallback.test": score(test, fallback),
    }
    out = {"questions.train": float(len(train)), "questions.test": float(len(test))}
    for run, values in runs.items():
        for metric in FIGURE_METRICS:
            out[f"{run}.{metric}"] = round(values[metric], 4)
    return out


async def calibrate(
    embedder: Embedder,
    grid: Mapping[str, Sequence[float]] = GRID,
    rounds: int = 4,
    step: StepFn = _quiet,
) -> Calibration:
    """Measures the embedder on the shipped labelled sets and chooses its calibration.

    Args:
        embedder: The model to calibrate (the domain port; `embed_query` is used for
            questions when it has one).
        grid: The fusion knobs searched and their values (`fusion_search.GRID`; a
            smaller one for a quick run).
        rounds: Coordinate-ascent rounds at most.
        step: Receives one line per step (progress).
    """
    started = time.monotonic()
    measured = await measure(embedder, step)
    step("searching the fusion weights on the training half")
    calibration = choose(measured, grid, rounds)
    figures = {**calibration.figures, "seconds": round(time.monotonic() - started, 1)}
    return dataclasses.replace(calibration, figures=figures)
