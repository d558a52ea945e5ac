"""The write rules on the labelled pairs: near-duplicates merged, contradictions reported.

Measures what the server does with each labelled pair
(recalld_server/calibration/data/pairs.json), with the default model and the rules'
own functions (`lifecycle.near_duplicate`: cosine at the model's threshold, same
numbers and identifiers, same script, no detail the wording tells apart; the
offline contradiction report: the other memory breaks what the core one rules
out, `constraints.broken_constraints`), per split and language, and the best a
cosine threshold alone could do on the training half (the ceiling of a rule on
this model's similarity).

With `--judge-url` and `--judge-model` (an OpenAI-compatible endpoint) it also
measures consolidation with the fact judge: the pairs `domain.judging` would ask
about (by its similarity floors) decided by the model, the rest by the rules.

    python -m benchmarks.precision.pairs --out benchmarks/results/pairs-<rev>.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.precision.evaluate import revision
from recalld_server.calibration.dataset import load_pairs
from recalld_server.calibration.model import Calibration
from recalld_server.calibration.store import resolve
from recalld_server.domain.core.text import salient_tokens
from recalld_server.domain.rules.constraints import broken_constraints
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy, near_duplicate
from recalld_server.embedding.registry import DEFAULT_MODEL_ID, model_spec
from recalld_server.llm.judge import LlmJudge
from recalld_server.llm.openai_compat import ChatClient


async def _cosines(pairs: list[tuple[str, str]]) -> np.ndarray:
    embedder = model_spec(DEFAULT_MODEL_ID).load()
    try:
        left = await embedder.embed([a for a, _ in pairs])
        right = await embedder.embed([b for _, b in pairs])
    finally:
        await embedder.close()
    out: np.ndarray = np.sum(left * right, axis=1)
    return out


def _rates(predicted: list[bool], positive: list[bool]) -> dict[str, float]:
    tp = sum(p and y for p, y in zip(predicted, positive, strict=True))
    fp = sum(p and not y for p, y in zip(predicted, positive, strict=True))
    fn = sum(y and not p for p, y in zip(predicted, positive, strict=True))
    return {
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "false_positives": fp,
        "positives": sum(positive),
        "negatives": len(positive) - sum(positive),
    }


def _best_threshold(scores: np.ndarray, positive: list[bool]) -> dict[str, float]:
    """The cosine threshold with the most positives found and no false positive (train)."""
    best = {"threshold": 1.0, "recall": 0.0}
    for threshold in np.arange(0.3, 1.0, 0.01):
        predicted = [bool(s >= threshold) for s in scores]
        rates = _rates(predicted, positive)
        if rates["false_positives"] == 0 and rates["recall"] > best["recall"]:
            best = {"threshold": round(float(threshold), 2), "recall": rates["recall"]}
    return best


async def _judged(
    judge: LlmJudge, kind: str, pairs: list[tuple[str, str]], asked: list[bool]
) -> list[bool | None]:
    gate = asyncio.Semaphore(4)

    async def one(a: str, b: str, ask: bool) -> bool | None:
        if not ask:
            return None
        async with gate:
            if kind == "duplicates":
                return await judge.same_fact(a, b)
            return await judge.contradicts(a, b)

    questions = (one(a, b, k) for (a, b), k in zip(pairs, asked, strict=True))
    return list(await asyncio.gather(*questions))


def shipped_calibration(model_id: str) -> Calibration:
    """The thresholds the server uses for a bundled model (no data directory of its own)."""
    return resolve(Path("/nonexistent"), model_id)


def measure(judge: LlmJudge | None = None) -> dict[str, Any]:
    data = load_pairs()
    policy = LifecyclePolicy(
        near_duplicate_similarity=shipped_calibration(DEFAULT_MODEL_ID).near_duplicate_similarity,
    )
    report: dict[str, Any] = {
        "model": DEFAULT_MODEL_ID,
        "revision": revision(),
        "judge": judge is not None,
    }
    for section, a_key, b_key, yes in (
        ("duplicates", "a", "b", "duplicate"),
        ("contradictions", "core", "other", "contradiction"),
    ):
        rows = data[section]
        scores = asyncio.run(_cosines([(r[a_key], r[b_key]) for r in rows]))
        duplicate = [
            near_duplicate(r[a_key], "", r[b_key], "", float(s), policy)
            for r, s in zip(rows, scores, strict=True)
        ]
        if section == "duplicates":
            predicted = duplicate
        else:
            predicted = [bool(broken_constraints(r[a_key], r[b_key])) for r in rows]
        if judge is not None:
            floors = JudgePolicy()
            pairs = [(r[a_key], r[b_key]) for r in rows]
            if section == "duplicates":
                asked = [
                    bool(s >= floors.duplicate_similarity)
                    and not d
                    and salient_tokens(a) == salient_tokens(b)
                    for (a, b), s, d in zip(pairs, scores, duplicate, strict=True)
                ]
            else:
                asked = [bool(s >= floors.contradiction_similarity) for s in scores]
            verdicts = asyncio.run(_judged(judge, section, pairs, asked))
            predicted = [
                p if v is None else (p or v if section == "duplicates" else v)
                for p, v in zip(predicted, verdicts, strict=True)
            ]
        out: dict[str, Any] = {}
        for split in ("train", "test"):
            picked = [i for i, r in enumerate(rows) if r["split"] == split]
            positive = [rows[i]["label"] == yes for i in picked]
            out[split] = _rates([predicted[i] for i in picked], positive)
            out[split]["by_language"] = {
                lang: _rates(
                    [predicted[i] for i in picked if rows[i]["lang"] == lang],
                    [rows[i]["label"] == yes for i in picked if rows[i]["lang"] == lang],
                )
                for lang in sorted({rows[i]["lang"] for i in picked})
            }
            if split == "train":
                out["train_threshold_ceiling"] = _best_threshold(scores[picked], positive)
        positives = [float(s) for s, r in zip(scores, rows, strict=True) if r["label"] == yes]
        negatives = [float(s) for s, r in zip(scores, rows, strict=True) if r["label"] != yes]
        out["cosine"] = {
            "positives_median": float(np.median(positives)),
            "negatives_median": float(np.median(negatives)),
        }
        report[section] = out
    return report


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.precision.pairs")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--judge-url", default="", help="OpenAI-compatible API root (.../v1)")
    parser.add_argument("--judge-model", default="")
    args = parser.parse_args()
    judge = None
    if args.judge_url:
        key = os.environ.get("RECALLD_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        judge = LlmJudge(ChatClient(args.judge_url, args.judge_model, key, timeout_s=60))
    report = measure(judge)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
