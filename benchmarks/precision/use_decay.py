"""Chooses recall's share of decay by use on the training half of the labelled set.

The labelled set has no history of use, so this one is simulated from the server's
own feedback loop. The training questions of each user are asked one by one over
the 60 days before the set's present, and whatever recall returned (right or wrong,
up to five memories) counts as used that day, as the access statistics would
record it. A memory never returned counts from when it was written (its
`occurred_at`; undated ones at the present). Then every question is asked at the
present with that history: a training question with the uses of the other
training questions only (not its own earlier answer), a test question with the
uses of all of them.

The share is searched like the other ranking knobs (the objective of
`fusion_search`, the fusion policy at the default model's; the largest share within
`TOLERANCE` of the best objective), and the test split is reported without decay by
use and with the chosen share.

    python -m benchmarks.precision.use_decay [--out benchmarks/results/use-decay.json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.precision.calibrate import features
from recalld_server.calibration.dataset import present_ms
from recalld_server.calibration.fusion_search import (
    Choice,
    Question,
    answer_fused,
    by_category,
    metrics,
    objective,
)
from recalld_server.domain.core.model import DAY_MS
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.recall.policy import RecallPolicy

HISTORY_DAYS = 60
SHARES = [0.0, 0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5]
TOLERANCE = 0.001
"""The largest share whose training objective is this close to the best is chosen: a
small share still lets use decide between memories that answer alike (the point of
the factor) where it costs nothing measurable."""


def with_use_history(questions: Sequence[Question], choice: Choice, now_ms: int) -> list[Question]:
    """The questions with `unused` days from a simulated history of recalls."""
    by_user: dict[int, list[Question]] = {}
    for q in questions:
        by_user.setdefault(id(q.vectors), []).append(q)  # one vectors array per user
    out: list[Question] = []
    for asked in by_user.values():
        train = [q for q in asked if q.split == "train"]
        written = np.minimum(asked[0].occurred, now_ms).astype(np.float64)
        uses: list[tuple[str, float, list[int]]] = []
        for k, q in enumerate(train):
            day = now_ms - HISTORY_DAYS * DAY_MS + (k + 1) * HISTORY_DAYS * DAY_MS / len(train)
            uses.append((q.id, day, answer_fused(q, choice)))
        for q in asked:
            last = written.copy()
            for asker, day, returned in uses:
                if asker != q.id:
                    last[returned] = np.maximum(last[returned], day)
            unused = np.maximum(0.0, (now_ms - last) / DAY_MS)
            out.append(dataclasses.replace(q, unused=unused))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.precision.use_decay")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    now = present_ms()
    recall = RecallPolicy()
    base = Choice(FusionPolicy(), recall.recency_share, recall.recency_half_life_days)
    questions = with_use_history(asyncio.run(features(now)), base, now)
    train = [q for q in questions if q.split == "train"]
    test = [q for q in questions if q.split == "test"]
    sweep: list[dict[str, Any]] = []
    for share in SHARES:
        choice = dataclasses.replace(base, use_share=share)
        m = metrics(train, [answer_fused(q, choice) for q in train])
        sweep.append({"use_share": share, "objective": round(objective(m), 4), **m})
    top = max(row["objective"] for row in sweep)
    best = max(
        (row for row in sweep if row["objective"] >= top - TOLERANCE),
        key=lambda row: row["use_share"],
    )
    chosen = dataclasses.replace(base, use_share=best["use_share"])
    report = {
        "history_days": HISTORY_DAYS,
        "use_decay_per_day": recall.use_decay_per_day,
        "train_sweep": sweep,
        "chosen_use_share": best["use_share"],
        "test": {
            "without_use_decay": by_category(test, lambda q: answer_fused(q, base)),
            "with_use_decay": by_category(test, lambda q: answer_fused(q, chosen)),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
