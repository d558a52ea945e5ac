"""Calibration files: the round trip and every way a file is refused."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from recalld_server.calibration.model import (
    _FUSION_INTS,
    _FUSION_RANGES,
    EXACT_HASH_ONLY,
    Calibration,
    CalibrationError,
    dumps,
    loads,
    to_document,
)
from recalld_server.domain.ranking.fusion import FusionPolicy

MODEL = "openai:text-embedding-3-small:1536"


def _calibration() -> Calibration:
    return Calibration(
        model_id=MODEL,
        near_duplicate_similarity=0.91,
        judge_duplicate_similarity=0.64,
        judge_contradiction_similarity=0.23,
        fusion=FusionPolicy(keyword_weight=0.6, floor=0.25, short_query_terms=3),
        figures={"hybrid.test.hit@1": 0.67, "near_duplicate.train.false_merges": 0.0},
        created_at="2026-12-04T13:01:46+00:00",
    )


def test_a_file_reads_back_as_written() -> None:
    calibration = _calibration()
    read = loads(dumps(calibration), "x.json", MODEL)
    assert read == dataclasses.replace(calibration, source="x.json")
    assert read.fusion.short_query_terms == 3
    assert dumps(read) == dumps(calibration)


def test_exact_hash_only_survives_the_round_trip() -> None:
    calibration = dataclasses.replace(_calibration(), near_duplicate_similarity=EXACT_HASH_ONLY)
    read = loads(dumps(calibration), "x.json")
    assert read.exact_duplicates_only and not _calibration().exact_duplicates_only


def test_the_ranges_cover_every_fusion_knob() -> None:
    names = {f.name for f in dataclasses.fields(FusionPolicy)}
    assert set(_FUSION_RANGES) | set(_FUSION_INTS) == names


def _broken(change: Callable[[dict[str, Any]], None]) -> str:
    doc = to_document(_calibration())
    change(doc)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(version=2), "format version 2"),
        (lambda d: d.update(version=True), "format version True"),
        (lambda d: d.pop("fusion"), "missing key.*fusion"),
        (lambda d: d["fusion"].pop("floor"), r"missing key.*fusion\.floor"),
        (lambda d: d.update(extra=1), "unknown key.*extra"),
        (lambda d: d["fusion"].update(weight=1), r"unknown key.*fusion\.weight"),
        (lambda d: d.update(near_duplicate_similarity="0.9"), "must be a number"),
        (lambda d: d.update(near_duplicate_similarity=True), "must be a number"),
        (lambda d: d.update(near_duplicate_similarity=-0.5), "outside"),
        (lambda d: d["fusion"].update(relative_floor=1.5), "fusion.relative_floor.*outside"),
        (lambda d: d["fusion"].update(short_query_terms=2.5), "short_query_terms"),
        (lambda d: d.update(calibrated="yes"), "calibrated"),
        (lambda d: d.update(model_id=""), "model_id"),
        (lambda d: d.update(created_at="yesterday"), "yesterday"),
        (lambda d: d.update(figures=[1]), "figures"),
        (lambda d: d["figures"].update(seconds="8"), r"figures\.seconds"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file(
    change: Callable[[dict[str, Any]], None], message: str
) -> None:
    with pytest.raises(CalibrationError, match=f"^bad.json: .*{message}"):
        loads(_broken(change), "bad.json")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(constant: str) -> None:
    text = dumps(_calibration()).replace('"near_duplicate_similarity": 0.91', f'"x": {constant}')
    with pytest.raises(CalibrationError, match=r"^bad\.json: not a calibration file"):
        loads(text, "bad.json")
    figure = dumps(_calibration()).replace('"hybrid.test.hit@1": 0.67', f'"h": {constant}')
    with pytest.raises(CalibrationError, match=r"^bad\.json"):
        loads(figure, "bad.json")


def test_not_json_or_not_an_object_is_refused() -> None:
    with pytest.raises(CalibrationError, match=r"^c\.json: not a calibration file"):
        loads("{", "c.json")
    with pytest.raises(CalibrationError, match=r"^c\.json: expected a JSON object"):
        loads("[]", "c.json")


def test_a_file_of_another_model_is_refused() -> None:
    with pytest.raises(CalibrationError, match=r"c\.json: calibration of model 'openai:"):
        loads(dumps(_calibration()), "c.json", "usem3-multilingual-v3-512")
