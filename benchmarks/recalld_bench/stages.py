"""Stage breakdown of Recall from the server's JSON Lines span file."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

ROOT = "recalld.v1.MemoryService/Recall"
FANOUT = [
    "recall.embed",
    "recall.dense_search",
    "recall.keyword_search",
    "recall.profile",
    "recall.recent",
]
STAGES = [*FANOUT, "recall.fuse", "recall.budget"]


def read_spans(path: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """Spans in bytes [start, end) of the file (offsets taken between load points)."""
    with path.open("rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(end - start)
    spans = []
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                spans.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return spans


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def breakdown(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage: p50/mean duration (ms); per call: sum of stages vs the fan-out's wall time.

    `sequential_estimate_ms` adds every stage's own duration: what the same stages would
    take one after another if each kept its measured duration (an estimate; a real
    sequential run needs a server switch). `fanout_wall_ms` is first stage start to last
    fan-out stage end, as actually run concurrently.
    """
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["trace_id"], []).append(span)
    per_stage: dict[str, list[float]] = {name: [] for name in STAGES}
    totals: list[float] = []
    fanout_wall: list[float] = []
    fanout_sum: list[float] = []
    seq_estimate: list[float] = []
    other: list[float] = []
    for trace in by_trace.values():
        roots = [s for s in trace if s["name"] == ROOT]
        if not roots:
            continue
        root = roots[0]
        total = (root["end_ns"] - root["start_ns"]) / 1e6
        stages = [s for s in trace if s["name"] in per_stage]
        if not stages:
            continue
        for s in stages:
            per_stage[s["name"]].append((s["end_ns"] - s["start_ns"]) / 1e6)
        fan = [s for s in stages if s["name"] in FANOUT]
        if fan:
            wall = (max(s["end_ns"] for s in fan) - min(s["start_ns"] for s in fan)) / 1e6
            fsum = sum((s["end_ns"] - s["start_ns"]) / 1e6 for s in fan)
        else:
            wall = fsum = 0.0
        post = sum((s["end_ns"] - s["start_ns"]) / 1e6 for s in stages if s["name"] not in FANOUT)
        totals.append(total)
        fanout_wall.append(wall)
        fanout_sum.append(fsum)
        seq_estimate.append(total - wall + fsum)
        other.append(max(0.0, total - wall - post))

    def stat(values: list[float]) -> dict[str, float]:
        return {
            "n": len(values),
            "p50_ms": _pct(values, 0.5),
            "p90_ms": _pct(values, 0.9),
            "mean_ms": statistics.fmean(values) if values else 0.0,
        }

    return {
        "calls": len(totals),
        "stages": {name: stat(v) for name, v in per_stage.items()},
        "recall_total": stat(totals),
        "fanout_wall": stat(fanout_wall),
        "fanout_sum": stat(fanout_sum),
        "sequential_estimate": stat(seq_estimate),
        "outside_stages": stat(other),
        "parallel_speedup_estimate": (
            statistics.fmean(seq_estimate) / statistics.fmean(totals) if totals else 0.0
        ),
    }


def by_root(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """For every RPC span name (`recalld.v1.MemoryService/Write`, ...): its calls, its
    duration, and each stage span under it (`write.embed`, `write.store`, ...), ms.

    A stage's mean is over the calls that have it (`n` of them).
    """
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["trace_id"], []).append(span)
    totals: dict[str, list[float]] = {}
    children: dict[str, dict[str, list[float]]] = {}
    for trace in by_trace.values():
        roots = [s for s in trace if "/" in s["name"]]
        if not roots:
            continue
        root = roots[0]["name"]
        totals.setdefault(root, []).append((roots[0]["end_ns"] - roots[0]["start_ns"]) / 1e6)
        stage_ms: dict[str, float] = {}
        for s in trace:
            if "/" not in s["name"]:
                stage_ms[s["name"]] = (
                    stage_ms.get(s["name"], 0.0) + (s["end_ns"] - s["start_ns"]) / 1e6
                )
        for name, ms in stage_ms.items():
            children.setdefault(root, {}).setdefault(name, []).append(ms)

    def stat(values: list[float]) -> dict[str, float]:
        return {
            "n": len(values),
            "p50_ms": _pct(values, 0.5),
            "p90_ms": _pct(values, 0.9),
            "mean_ms": statistics.fmean(values) if values else 0.0,
        }

    return {
        root: {
            "calls": len(values),
            "total": stat(values),
            "stages": {name: stat(v) for name, v in sorted(children.get(root, {}).items())},
        }
        for root, values in totals.items()
    }
