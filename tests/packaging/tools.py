"""The offline deployment checkers scripts/test.sh builds into .tools/ (deploy/tools)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def tool(name: str) -> str:
    """Path of a built checker; skipped where it is not built, but never in CI (CI=true)."""
    path = os.environ.get(f"RECALLD_{name.upper()}_BIN") or str(REPO / ".tools" / name)
    if not os.access(path, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI (scripts/test.sh builds it into .tools/)")
        pytest.skip(f"{name} not built (scripts/test.sh builds it into .tools/)")
    return path


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a checker, bounded in time."""
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)
