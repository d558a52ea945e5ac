"""A model's calibration: every threshold whose meaning depends on the score's scale.

A cosine threshold means something only for the model it was measured on (the
default model scores translations ~0.7, WordLlama scores unrelated English
~0.2, other models put everything above 0.7). So the near-duplicate threshold,
the judge's similarity floors and recall's fusion weights and gate are one
record per model, written as JSON by `recalld calibrate` (or shipped for the
bundled models) and read strictly: a file that is malformed, of another format
version or of another model is an error naming the file, never a silent default.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recalld_server.domain.ranking.fusion import FusionPolicy

FORMAT_VERSION = 1
"""The calibration file format; a file of another version is refused."""

EXACT_HASH_ONLY = 2.0
"""A near-duplicate threshold no cosine reaches: only equal normalised contents merge."""

_FLOAT_RANGES: dict[str, tuple[float, float]] = {
    "near_duplicate_similarity": (0.0, EXACT_HASH_ONLY),
    "judge_duplicate_similarity": (-1.0, EXACT_HASH_ONLY),
    "judge_contradiction_similarity": (-1.0, EXACT_HASH_ONLY),
}
_FUSION_RANGES: dict[str, tuple[float, float]] = {
    "keyword_weight": (0.0, 10.0),
    "keyword_min_match": (0.0, 0.999),
    "identifier_bonus": (0.0, 10.0),
    "identifier_miss_factor": (0.0, 1.0),
    "recent_bonus": (0.0, 10.0),
    "floor": (0.0, 10.0),
    "short_query_floor": (0.0, 10.0),
    "relative_floor": (0.0, 1.0),
    "latest_bonus": (0.0, 10.0),
    "latest_similarity": (-1.0, EXACT_HASH_ONLY),
}
_FUSION_INTS = {"short_query_terms": (0, 100)}
_KEYS = frozenset(
    {"version", "model_id", "calibrated", "created_at", "fusion", "figures", *_FLOAT_RANGES}
)


class CalibrationError(ValueError):
    """A calibration file cannot be used; the message names the file and what is wrong."""


@dataclasses.dataclass(frozen=True, slots=True)
class Calibration:
    """The scale-dependent thresholds of one embedding model.

    Attributes:
        model_id: The embedding model they were measured on.
        near_duplicate_similarity: Cosine at or above which two memories that pass
            the wording rules are one (writes, consolidation, recall's result
            de-duplication). Above 1.0 (EXACT_HASH_ONLY): only equal normalised
            contents are duplicates.
        judge_duplicate_similarity: Cosine at or above which a pair the rules keep
            apart is put to the fact judge (`domain.judging`).
        judge_contradiction_similarity: Cosine at or above which a memory is put to
            the fact judge against a core memory.
        fusion: Recall's fusion weights and relevance gate (`domain.fusion`).
        calibrated: False for the scale-free fallback of an uncalibrated model.
        source: Where it came from: "shipped", a file path, or "fallback".
        figures: What the calibration reached on the labelled sets (hit rates,
            duplicates caught, false merges...), by name.
        created_at: When it was measured (UTC, ISO 8601; empty for the fallback).
        version: The file format (FORMAT_VERSION).
    """

    model_id: str
    near_duplicate_similarity: float
    judge_duplicate_similarity: float
    judge_contradiction_similarity: float
    fusion: FusionPolicy
    calibrated: bool = True
    source: str = ""
    figures: dict[str, float] = dataclasses.field(default_factory=dict)
    created_at: str = ""
    version: int = FORMAT_VERSION

    @property
    def exact_duplicates_only(self) -> bool:
        """Whether no similarity ever makes two memories one."""
        return self.near_duplicate_similarity > 1.0


def now_iso() -> str:
    """The current UTC time as calibration files record it."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def to_document(calibration: Calibration) -> dict[str, Any]:
    """The JSON document of a calibration (`source` is where it is read from, not stored)."""
    return {
        "version": calibration.version,
        "model_id": calibration.model_id,
        "calibrated": calibration.calibrated,
        "created_at": calibration.created_at,
        "near_duplicate_similarity": calibration.near_duplicate_similarity,
        "judge_duplicate_similarity": calibration.judge_duplicate_similarity,
        "judge_contradiction_similarity": calibration.judge_contradiction_similarity,
        "fusion": dataclasses.asdict(calibration.fusion),
        "figures": dict(sorted(calibration.figures.items())),
    }


def dumps(calibration: Calibration) -> str:
    """The file text of a calibration (indented, keys in a fixed order, a final newline)."""
    return json.dumps(to_document(calibration), indent=2, ensure_ascii=False) + "\n"


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(text: str, where: str, model_id: str | None = None) -> Calibration:
    """Parses and checks a calibration file's text.

    Args:
        text: The file's contents.
        where: The file's name, for messages and as the calibration's `source`.
        model_id: The model the caller serves; a file for another one is refused.

    Raises:
        CalibrationError: Not JSON, a missing or unknown key, a wrong type, a value
            out of range (NaN and infinities included), another format version or
            another model.
    """
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        raise CalibrationError(f"{where}: not a calibration file: {error}") from None
    try:
        calibration = _parse(doc, where)
    except (TypeError, ValueError) as error:
        raise CalibrationError(f"{where}: {error}") from None
    if model_id is not None and calibration.model_id != model_id:
        raise CalibrationError(
            f"{where}: calibration of model {calibration.model_id!r}, not of {model_id!r}"
        )
    return calibration


def load(path: Path, model_id: str | None = None) -> Calibration:
    """Reads and checks a calibration file (see `loads`); OSError if it cannot be read."""
    return loads(path.read_text(encoding="utf-8"), str(path), model_id)


def _parse(doc: Any, where: str) -> Calibration:
    if not isinstance(doc, dict):
        raise ValueError("expected a JSON object")
    _exact_keys(doc, _KEYS, "")
    if doc["version"] != FORMAT_VERSION or isinstance(doc["version"], bool):
        raise ValueError(f"format version {doc['version']!r}, this build reads {FORMAT_VERSION}")
    model_id = doc["model_id"]
    if not isinstance(model_id, str) or not model_id:
        raise ValueError("model_id must be a non-empty string")
    if not isinstance(doc["calibrated"], bool):
        raise ValueError("calibrated must be true or false")
    created_at = doc["created_at"]
    if not isinstance(created_at, str):
        raise ValueError("created_at must be a string")
    if created_at:
        datetime.datetime.fromisoformat(created_at)  # ValueError names the bad text
    thresholds = {name: _number(doc[name], name, *span) for name, span in _FLOAT_RANGES.items()}
    return Calibration(
        model_id=model_id,
        near_duplicate_similarity=thresholds["near_duplicate_similarity"],
        judge_duplicate_similarity=thresholds["judge_duplicate_similarity"],
        judge_contradiction_similarity=thresholds["judge_contradiction_similarity"],
        fusion=_fusion(doc["fusion"]),
        calibrated=doc["calibrated"],
        source=where,
        figures=_figures(doc["figures"]),
        created_at=created_at,
    )


def _exact_keys(doc: Mapping[str, Any], expected: frozenset[str], prefix: str) -> None:
    missing = sorted(expected - doc.keys())
    unknown = sorted(doc.keys() - expected)
    if missing:
        raise ValueError(f"missing key(s): {', '.join(prefix + k for k in missing)}")
    if unknown:
        raise ValueError(f"unknown key(s): {', '.join(prefix + k for k in unknown)}")


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{name} = {value!r} is outside [{low}, {high}]")
    return float(value)


def _fusion(doc: Any) -> FusionPolicy:
    if not isinstance(doc, dict):
        raise ValueError("fusion must be an object")
    _exact_keys(doc, frozenset({f.name for f in dataclasses.fields(FusionPolicy)}), "fusion.")
    values: dict[str, Any] = {
        name: _number(doc[name], f"fusion.{name}", *span) for name, span in _FUSION_RANGES.items()
    }
    for name, (low, high) in _FUSION_INTS.items():
        value = doc[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"fusion.{name} must be an integer in [{low}, {high}]")
        values[name] = value
    return FusionPolicy(**values)


def _figures(doc: Any) -> dict[str, float]:
    if not isinstance(doc, dict):
        raise ValueError("figures must be an object")
    return {
        str(name): _number(value, f"figures.{name}", -math.inf, math.inf)
        for name, value in doc.items()
    }
