"""The labelled precision data set (recalld_server/calibration/data/*.json) passes its validator.

Standard library only and fast (a few hundred KB of JSON): CI fails as soon as an edit
breaks a label, a key reference, a split balance or a per-category minimum.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.precision.data import validate

DATA_FILES = ("memories.json", "queries.json", "pairs.json")


def test_precision_data_set_is_valid() -> None:
    problems = validate.validate()
    assert problems == [], "\n".join(problems)


def test_script_entry_point_prints_counts_and_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate.main() == 0
    out = capsys.readouterr().out
    assert out.startswith("memories: ")
    assert "\nqueries: " in out and "\npairs:\n" in out
    assert out.rstrip().endswith("\nOK")


def test_validator_reports_a_broken_copy(tmp_path: Path) -> None:
    """Guards against a validator that passes everything."""
    for name in DATA_FILES:
        shutil.copy(validate.DATA_DIR / name, tmp_path / name)
    queries_path = tmp_path / "queries.json"
    doc = json.loads(queries_path.read_text(encoding="utf-8"))
    query = next(q for q in doc["queries"] if q["relevant"])
    query["relevant"].append("nobody-m999")
    queries_path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")

    problems = validate.validate(tmp_path)
    assert problems == [f"queries.json {query['id']}: relevant key 'nobody-m999' does not exist"]


def test_validator_reports_a_missing_file(tmp_path: Path) -> None:
    for name in DATA_FILES[:2]:
        shutil.copy(validate.DATA_DIR / name, tmp_path / name)
    problems = validate.validate(tmp_path)
    assert len(problems) == 1
    assert problems[0].startswith("pairs.json: cannot load: ")
