"""How much a query term that none of the user's memories holds should weigh.

The keyword match share divides the matched terms' IDF by all informative terms'
IDF; a term no memory holds weighs as much as the rarest term (the server's
choice). This scores the server's fusion policy on the training half with that
weight scaled by 1, 0.5, 0.25 and 0, per category, beside dense-only ranking.

    python -m benchmarks.precision.unseen_terms
"""

from __future__ import annotations

import asyncio

from benchmarks.precision import calibrate
from recalld_server.calibration.dataset import present_ms
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.recall.policy import RecallPolicy

SCALES = (1.0, 0.5, 0.25, 0.0)


def main() -> None:
    recall = RecallPolicy()
    choice = calibrate.Choice(FusionPolicy(), recall.recency_share, recall.recency_half_life_days)
    for scale in SCALES:
        questions = asyncio.run(calibrate.features(present_ms(), scale))
        train = [q for q in questions if q.split == "train"]
        fused = calibrate.by_category(train, lambda q: calibrate.answer_fused(q, choice))
        dense = calibrate.by_category(train, calibrate.answer_dense)
        overall = fused["all"]
        print(
            f"unseen weight x{scale}: objective {calibrate.objective(overall):.3f}, "
            f"hit@1 {overall['hit@1']:.3f}, hit@3 {overall['hit@3']:.3f}, "
            f"abstain {overall['abstain']:.3f}"
        )
        for category, metrics in fused.items():
            if category != "all":
                print(
                    f"  {category:24s} hit@1 {metrics['hit@1']:.2f} hit@3 {metrics['hit@3']:.2f}"
                    f" (dense {dense[category]['hit@1']:.2f} / {dense[category]['hit@3']:.2f})"
                )


if __name__ == "__main__":
    main()
