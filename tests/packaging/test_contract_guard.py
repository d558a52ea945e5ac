"""The contract only grows: `buf breaking` against the last release kept in-tree.

scripts/test.sh runs the same check on the real tree; these tests show it holds
today and that it fails for the changes it exists to stop.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.packaging.tools import REPO, run

RELEASED = REPO / "contract" / "released" / "0.1.0"
SERVICE = Path("recalld") / "v1" / "memory_service.proto"


def _buf() -> str:
    path = REPO / "clients" / "node" / "node_modules" / ".bin" / "buf"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail("buf is required in CI (scripts/test.sh runs npm ci in clients/node)")
        pytest.skip("buf comes with the Node dev dependencies (npm ci in clients/node)")
    return str(path)


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of proto/ with one edit to the service file."""
    copy = tmp_path / "proto"
    shutil.copytree(REPO / "proto", copy)
    service = copy / SERVICE
    text = service.read_text()
    assert old in text
    service.write_text(text.replace(old, new, 1))
    return copy


def test_the_contract_is_compatible_with_the_last_release() -> None:
    checked = run(_buf(), "breaking", str(REPO / "proto"), "--against", str(RELEASED))
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("  string context = 5;", "  string prompt_block = 5;", "changed name"),
        ("  int32 token_estimate = 2;", "  int64 token_estimate = 2;", "changed type"),
        ("  string context = 5;", "  string context = 55;", "deleted"),
    ],
    ids=["renamed field", "changed type", "renumbered field"],
)
def test_a_breaking_change_fails_the_check(
    tmp_path: Path, old: str, new: str, complaint: str
) -> None:
    checked = run(_buf(), "breaking", str(_edited(tmp_path, old, new)), "--against", str(RELEASED))
    assert checked.returncode != 0
    assert complaint in checked.stdout + checked.stderr


def test_an_added_field_passes(tmp_path: Path) -> None:
    grown = _edited(
        tmp_path, "  string context = 5;", "  string context = 5;\n  string context_format = 99;"
    )
    checked = run(_buf(), "breaking", str(grown), "--against", str(RELEASED))
    assert checked.returncode == 0, checked.stdout + checked.stderr
