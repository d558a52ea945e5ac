"""Smoke run of the benchmark harness: tiny dataset, seconds of load, well-formed output.

Asserts the shape of the results (histogram percentiles, counts, error accounting,
reports), never speed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

# The harness needs the `bench` extra (pip install -e .[dev,bench]).
pytest.importorskip("hdrh", reason="benchmark extra not installed: pip install -e .[bench]")
pytest.importorskip("matplotlib", reason="benchmark extra not installed: pip install -e .[bench]")

from benchmarks.recalld_bench import conversations, datasets, loader, loadgen, report, stages
from recalld_server.wiring.server import RunningServer

SPEC = datasets.DatasetSpec(memories=40, tenants=2, users_per_tenant=3, seed=7)


def test_dataset_is_reproducible() -> None:
    first = datasets.summary(SPEC)
    assert first == datasets.summary(SPEC)
    assert first["memories"] == 40
    assert sum(datasets.memory_counts(SPEC)) == 40
    assert datasets.queries(SPEC, 5) == datasets.queries(SPEC, 5)


async def test_harness_produces_well_formed_results(server: RunningServer, tmp_path: Path) -> None:
    address = f"127.0.0.1:{server.port}"
    loaded = await loader.load(address, SPEC, concurrency=2, batch=20)
    assert loaded["written"] == 40 and not loaded["errors"]

    results = []
    for operation, mode in (("mixed", "closed"), ("recall", "open")):
        spec = loadgen.LoadSpec(
            address=address,
            operation=operation,
            mode=mode,
            concurrency=2,
            rate=20,
            duration_s=1.5,
            warmup_s=0.5,
            processes=1,
            dataset=SPEC,
            write_fraction=0.3,
        )
        # The workers are separate processes; run them off the test's event loop.
        result = await asyncio.to_thread(loadgen.run, spec)
        results.append({**result, "variant": "plain", "point": {"concurrency": 2, "rate": 20}})
        summary = result["all"]
        assert summary["count"] > 0
        assert result["error_count"] == sum(result["errors"].values())
        assert 0 < summary["p50_ms"] <= summary["p90_ms"] <= summary["p99_ms"]
        assert summary["p99_ms"] <= summary["p999_ms"] <= summary["max_ms"]
        assert result["client_cpu_cores"] >= 0
        json.dumps(result)

    doc = {
        "scenario": "smoke",
        "mode": "closed",
        "variants": ["plain"],
        "results": results[:1],
        "dataset": {**datasets.summary(SPEC)},
        "meta": {
            "machine": {"cpus": 2, "cpu_model": "x", "mem_gb": 1},
            "git_head": "x",
            "server_src": "x",
            "command": "pytest",
        },
        "settings": {},
    }
    report.write_reports(doc, tmp_path, "smoke")
    assert (tmp_path / "smoke.png").stat().st_size > 0
    assert "| plain | 2 |" in (tmp_path / "smoke.md").read_text()


def test_stage_breakdown_from_spans(tmp_path: Path) -> None:
    spans = [
        {"trace_id": "t", "name": stages.ROOT, "start_ns": 0, "end_ns": 10_000_000},
        {"trace_id": "t", "name": "recall.embed", "start_ns": 0, "end_ns": 3_000_000},
        {
            "trace_id": "t",
            "name": "recall.dense_search",
            "start_ns": 3_000_000,
            "end_ns": 6_000_000,
        },
        {"trace_id": "t", "name": "recall.keyword_search", "start_ns": 0, "end_ns": 5_000_000},
        {"trace_id": "t", "name": "recall.fuse", "start_ns": 6_000_000, "end_ns": 7_000_000},
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    result = stages.breakdown(stages.read_spans(path))
    assert result["calls"] == 1
    assert result["fanout_wall"]["mean_ms"] == 6.0
    assert result["fanout_sum"]["mean_ms"] == 11.0
    assert result["sequential_estimate"]["mean_ms"] == 15.0


async def test_sessions_load_and_context_load(server: RunningServer) -> None:
    address = f"127.0.0.1:{server.port}"
    sessions = conversations.SessionSpec(SPEC, sessions=3, messages=30, seed=3)
    assert conversations.summary(sessions) == conversations.summary(sessions)
    loaded = await conversations.load(address, sessions, concurrency=2, batch=10)
    assert loaded["appended"] == 90 and loaded["calls"] == 9 and not loaded["errors"]

    spec = loadgen.LoadSpec(
        address=address,
        operation="context",
        concurrency=2,
        duration_s=1.5,
        warmup_s=0.5,
        processes=1,
        dataset=SPEC,
        sessions=sessions,
    )
    result = await asyncio.to_thread(loadgen.run, spec)
    summary = result["by_operation"]["context"]
    assert summary["count"] > 0
    assert result["error_count"] == sum(result["errors"].values())
    assert 0 < summary["p50_ms"] <= summary["p99_ms"] <= summary["max_ms"]
    result = {**result, "variant": "plain", "scenario": "context", "series": "context"}
    assert "| context | 2 |" in report.table(
        {"mode": "closed", "results": [{**result, "point": {"concurrency": 2}}]}
    )
    json.dumps(result)


def test_model_beside_loop_reports_every_set_up(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from benchmarks import model_beside_loop

    monkeypatch.setattr(
        sys, "argv", ["model_beside_loop", "--rounds", "1", "--batch", "4", "--texts", "8"]
    )
    model_beside_loop.main()
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()]
    measured = {row[0].lstrip("| "): int(row[1]) for row in rows if len(row) == 5 and "," in row[0]}
    assert set(measured) == {
        "thread, idle neighbour",
        "thread, busy neighbour",
        "process, idle neighbour",
        "process, busy neighbour",
    }
    assert all(batches == 2 for batches in measured.values())  # 8 texts in batches of 4
