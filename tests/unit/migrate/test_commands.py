"""Command-line plumbing: format detection, progress output, flag errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from recalld_server.migrate.commands import detect_format, main_export, main_import
from recalld_server.progress import Progress


def test_detect_format() -> None:
    assert detect_format("x.bin", b"SQLite format 3\x00rest") == "sqlite"
    assert detect_format("memory.db", b"") == "sqlite"
    assert detect_format("backup.jsonl", b"{") == "jsonl"
    assert detect_format("MEMORY.md", b"{") == "memory-md"
    assert detect_format("notes", b'\xef\xbb\xbf  {"content": "x"}') == "jsonl"
    assert detect_format("notes", b"# MEMORY") == "memory-md"


def test_progress_prints_when_due_and_at_the_end() -> None:
    stream = io.StringIO()
    progress = Progress("import", "memories", stream=stream, interval_s=3600)
    progress(100, 300)
    progress(200, 300)  # not due yet
    progress(300, 300)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("import: 100/300 memories (33%")
    assert "left)" in lines[0]  # an estimate of the time still needed
    assert lines[1].startswith("import: 300/300 memories (100%")


def test_dry_run_and_flag_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "MEMORY.md"
    source.write_text("## 偏好\n- likes tea\n- \n", encoding="utf-8")
    report_path = tmp_path / "r.json"
    code = main_import(
        [str(source), "--user", "u", "--dry-run", "--report-json", str(report_path)], {}
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "2 parsed = 1 written + 1 skipped: OK" in out
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert (report["dry_run"], report["parsed"], report["skip_reasons"]) == (
        True,
        2,
        {"empty content": 1},
    )
    assert main_import([str(source)], {}) == 2  # --user is required for MEMORY.md
    assert main_import([str(tmp_path / "missing.md"), "--user", "u"], {}) == 2
    assert main_import([str(source), "--user", "u", "--batch-size", "101"], {}) == 2
    not_sqlite = tmp_path / "x.db"
    not_sqlite.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert main_import([str(not_sqlite), "--user", "u", "--dry-run"], {}) == 2
    assert main_export([], {}) == 2
    assert main_export(["--user", "u", "--page-size", "0"], {}) == 2
