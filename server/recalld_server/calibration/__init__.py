"""Per-model calibration: the thresholds that depend on an embedding model's score scale.

`resolve(data_dir, model_id)` gives the calibration a server uses (the data
directory's file, else the one shipped for a bundled model, else the scale-free
fallback, announced once); `policy` turns it into the domain policies;
`recalld calibrate` (`run.calibrate`, then `write`) measures a model on the
labelled sets shipped in `data/`. docs/calibration.md describes it all.
"""

from __future__ import annotations

from recalld_server.calibration.fallback import fallback
from recalld_server.calibration.model import EXACT_HASH_ONLY, Calibration, CalibrationError
from recalld_server.calibration.policy import (
    judge_policy,
    lifecycle_policy,
    model_policy,
    recall_policy,
)
from recalld_server.calibration.store import path_for, resolve, shipped, write

__all__ = [
    "EXACT_HASH_ONLY",
    "Calibration",
    "CalibrationError",
    "fallback",
    "judge_policy",
    "lifecycle_policy",
    "model_policy",
    "path_for",
    "recall_policy",
    "resolve",
    "shipped",
    "write",
]
