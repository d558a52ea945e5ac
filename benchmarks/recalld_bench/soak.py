"""Soak: a long mixed load on one server, reported window by window.

`python -m benchmarks.recalld_bench soak --base /tmp/rb-base10k --duration 600`
runs 90% recalls / 10% single writes at 64 concurrent callers for the whole
duration, in consecutive windows (30 s by default) on the same server, and
records per window the throughput, p50/p99, errors by code and the server's
RSS (with its Milvus Lite child), so drift over time shows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks.recalld_bench import datasets, loadgen, meta, server


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (Linux /proc)."""
    total = 0.0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    total += tree_rss_mb(int(child))
    return total


def soak(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(args.base)
    info = json.loads((base / "dataset.json").read_text())
    spec = datasets.DatasetSpec(**info["spec"])
    work = Path(args.work or f"/tmp/recalld-soak-{int(time.time())}")
    windows: list[dict[str, Any]] = []
    data = server.snapshot(base / "data", work / "data")
    with server.recalld(data, log_file=work / "server.log", server_src=args.server_src) as srv:
        rss_start = tree_rss_mb(srv.pid)
        started = time.monotonic()
        index = 0
        while time.monotonic() - started < args.duration:
            load = loadgen.LoadSpec(
                address=srv.address,
                operation="mixed",
                mode="closed",
                concurrency=args.concurrency,
                duration_s=args.window,
                warmup_s=3.0 if index == 0 else 0.0,
                dataset=spec,
                seed=args.seed + index,
                write_fraction=args.write_fraction,
            )
            result = loadgen.run(load, server_pid=srv.pid)
            row = {
                "window": index,
                "elapsed_s": round(time.monotonic() - started, 1),
                "throughput_rps": result["all"]["throughput_rps"],
                "p50_ms": result["all"]["p50_ms"],
                "p99_ms": result["all"]["p99_ms"],
                "errors": result["errors"],
                "server_cpu_cores": result["server_cpu_cores"],
                "rss_mb": round(tree_rss_mb(srv.pid), 1),
                "loadavg_1m": os.getloadavg()[0],
            }
            windows.append(row)
            print(json.dumps(row), flush=True)
            index += 1
    doc = {
        "benchmark": "soak",
        "meta": meta.collect(args.server_src),
        "dataset": info["summary"]["name"],
        "settings": {
            "duration_s": args.duration,
            "window_s": args.window,
            "concurrency": args.concurrency,
            "write_fraction": args.write_fraction,
        },
        "rss_start_mb": round(rss_start, 1),
        "windows": windows,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(doc, indent=2))
    (out / f"{args.name}.md").write_text(_markdown(doc))
    return doc


def _markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"# soak ({doc['dataset']}, {doc['settings']['concurrency']} callers, "
        f"{int(doc['settings']['write_fraction'] * 100)}% writes)",
        "",
        f"- server: {doc['meta'].get('server_revision', '')}; RSS at start "
        f"{doc['rss_start_mb']} MB",
        "",
        "| window | elapsed s | calls/s | p50 ms | p99 ms | errors | server cores | RSS MB |",
        "| ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for w in doc["windows"]:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(w["errors"].items())) or "0"
        lines.append(
            f"| {w['window']} | {w['elapsed_s']} | {w['throughput_rps']:.1f} | "
            f"{w['p50_ms']:.1f} | {w['p99_ms']:.1f} | {errors} | "
            f"{w['server_cpu_cores'] or 0:.2f} | {w['rss_mb']} |"
        )
    return "\n".join(lines) + "\n"


def add_arguments(sub: Any) -> None:
    s = sub.add_parser("soak", help="a long mixed load, reported window by window")
    s.add_argument("--base", required=True)
    s.add_argument("--duration", type=float, default=600.0)
    s.add_argument("--window", type=float, default=30.0)
    s.add_argument("--concurrency", type=int, default=64)
    s.add_argument("--write-fraction", type=float, default=0.1)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--server-src", type=Path, default=None)
    s.add_argument("--work", default="")
    s.add_argument("--out", default="benchmarks/results")
    s.add_argument("--name", default="soak")
    s.set_defaults(func=soak)
