"""Calibrating the bundled default model for real, and `recalld calibrate` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recalld_server.calibration import resolve
from recalld_server.calibration.fusion_search import SMALL_GRID
from recalld_server.calibration.run import calibrate, figures, measure
from recalld_server.calibration.store import path_for, shipped
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.registry import DEFAULT_MODEL_ID
from recalld_server.maintenance.calibrate import main_calibrate


async def test_the_default_model_calibrates_sanely(embedder: MicroBatchingEmbedder) -> None:
    calibration = await calibrate(embedder, SMALL_GRID, rounds=1)
    assert calibration.model_id == DEFAULT_MODEL_ID and calibration.calibrated
    assert 0.5 < calibration.near_duplicate_similarity <= 1.0
    f = calibration.figures
    assert f["near_duplicate.train.false_merges"] == 0
    assert f["near_duplicate.older.false_merges"] == 0
    assert f["near_duplicate.train.caught"] > 0
    # The judge's floors sit under the merge threshold and keep nearly every true pair.
    assert calibration.judge_duplicate_similarity < calibration.near_duplicate_similarity
    assert f["judge.duplicate.train.kept"] >= 0.9
    assert f["judge.contradiction.train.kept"] >= 0.9
    for run in ("hybrid.train", "hybrid.test", "dense.test", "keyword.test", "fallback.test"):
        for metric in ("hit@1", "hit@3", "mrr"):
            assert 0.0 <= f[f"{run}.{metric}"] <= 1.0
    assert f["hybrid.test.hit@1"] > 0.5
    assert f["questions.train"] > 100 and f["questions.test"] > 100


async def test_the_shipped_thresholds_score_as_their_figures_say(
    embedder: MicroBatchingEmbedder,
) -> None:
    calibration = shipped(DEFAULT_MODEL_ID)
    assert calibration is not None
    measured = await measure(embedder)
    assert figures(measured, calibration) == pytest.approx(calibration.figures, abs=0.02)


def test_the_command_writes_a_file_the_server_resolves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main_calibrate(["--data-dir", str(tmp_path), "--no-progress"], {}) == 0
    out = capsys.readouterr().out
    path = path_for(tmp_path, DEFAULT_MODEL_ID)
    assert f"written: {path}" in out and "near_duplicate_similarity: " in out
    assert "hybrid.test.hit@1" in out and "takes precedence" in out
    found = resolve(tmp_path, DEFAULT_MODEL_ID)
    assert found.source == str(path) and found.calibrated
    assert found.figures["seconds"] < 300
    assert json.loads(path.read_text(encoding="utf-8"))["model_id"] == DEFAULT_MODEL_ID


def test_a_dry_run_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("recalld_server.maintenance.calibrate.GRID", SMALL_GRID)
    environ = {"RECALLD_DATA_DIR": str(tmp_path)}
    assert main_calibrate(["--dry-run", "--no-progress"], environ) == 0
    assert "dry run: nothing written" in capsys.readouterr().out
    assert not (tmp_path / "calibration").exists()


def test_bad_flags_and_unknown_models_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main_calibrate(["--embedding-model", "nope"], {}) == 2
    assert "unknown embedding model 'nope'" in capsys.readouterr().err
    assert main_calibrate(["--bogus"], {}) == 2
