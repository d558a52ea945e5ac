"""The domain policies a calibration sets: what the composition root builds from it.

Each function takes the policy the server would otherwise use (its flags and the
documented defaults) and replaces only the scale-dependent thresholds, so a
calibration never changes a rule that does not read a score.
"""

from __future__ import annotations

import dataclasses

from recalld_server.calibration.model import Calibration
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy


def lifecycle_policy(
    calibration: Calibration, base: LifecyclePolicy | None = None
) -> LifecyclePolicy:
    """The write and consolidation rules with the model's near-duplicate threshold."""
    return dataclasses.replace(
        base or LifecyclePolicy(),
        near_duplicate_similarity=calibration.near_duplicate_similarity,
    )


def recall_policy(calibration: Calibration, base: RecallPolicy | None = None) -> RecallPolicy:
    """Recall's rules with the model's fusion and gate.

    Its near-duplicate threshold also folds near-identical results into one, as the
    write rules merge them.
    """
    return dataclasses.replace(
        base or RecallPolicy(),
        fusion=calibration.fusion,
        duplicate_similarity=calibration.near_duplicate_similarity,
    )


def judge_policy(calibration: Calibration, base: JudgePolicy | None = None) -> JudgePolicy:
    """Which pairs consolidation puts to the fact judge, by the model's similarity floors."""
    return dataclasses.replace(
        base or JudgePolicy(),
        duplicate_similarity=calibration.judge_duplicate_similarity,
        contradiction_similarity=calibration.judge_contradiction_similarity,
    )


def model_policy(calibration: Calibration, base: Policy | None = None) -> Policy:
    """`Policy` with the calibration's lifecycle and recall thresholds.

    The judge's floors are `judge_policy`, which the consolidator takes on its own.
    """
    base = base or Policy()
    return dataclasses.replace(
        base,
        lifecycle=lifecycle_policy(calibration, base.lifecycle),
        recall=recall_policy(calibration, base.recall),
    )
