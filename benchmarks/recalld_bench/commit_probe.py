"""`recalld serve` with its group commits timed: where a write's store stage goes.

    RECALLD_BENCH_COMMIT_PROBE=commits.jsonl python -m benchmarks.recalld_bench.commit_probe \\
        serve --data-dir D ...

Benchmarks only: the server's code is unchanged; this launcher wraps, before
`recalld_server.cli.main` runs, `GroupCommit._write_group` (one line per group:
requests, rows, duration) and the three storage calls a group makes
(`MilvusVectorStore.insert` / `replace`, `MilvusHistoryStore.append`: rows,
duration), appending JSON lines to the file the variable names. `summarize`
reads a window of them: groups per second, requests and rows per group, each
call's duration, and the share of the window a group was being written (1.0:
the commit pipeline never idled, so it bounds the write rate).
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

ENV = "RECALLD_BENCH_COMMIT_PROBE"


def _wrap(
    cls: type, name: str, out: TextIO, describe: Callable[[tuple[Any, ...]], dict[str, int]]
) -> None:
    original: Callable[..., Awaitable[Any]] = getattr(cls, name)

    @functools.wraps(original)
    async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.time_ns()
        try:
            return await original(self, *args, **kwargs)
        finally:
            ended = time.time_ns()
            record = {"call": name, "start_ns": started, "end_ns": ended, **describe(args)}
            out.write(json.dumps(record) + "\n")

    setattr(cls, name, timed)


def install(path: Path) -> None:
    """Wraps the group commit and its storage calls (once, in this process)."""
    from recalld_server.domain.working_set.group_commit import GroupCommit
    from recalld_server.storage.milvus_records import MilvusHistoryStore
    from recalld_server.storage.milvus_store import MilvusVectorStore

    out = path.open("a", buffering=1, encoding="utf-8")

    def group(args: tuple[Any, ...]) -> dict[str, int]:
        requests = args[0]
        return {
            "requests": len(requests),
            "inserts": sum(len(r.inserts) for r in requests),
            "upserts": sum(len(r.upserts) for r in requests),
            "history": sum(len(r.history) for r in requests),
        }

    def rows(args: tuple[Any, ...]) -> dict[str, int]:
        return {"rows": len(args[0])}

    _wrap(GroupCommit, "_write_group", out, group)
    _wrap(MilvusVectorStore, "insert", out, rows)
    _wrap(MilvusVectorStore, "replace", out, rows)
    _wrap(MilvusHistoryStore, "append", out, rows)


def read(path: Path, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """Records in bytes [start, end) of the file."""
    with path.open("rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(end - start)
    records = []
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def summarize(
    records: list[dict[str, Any]], window: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Per call kind: count, rows, duration; for groups also the busy share of the window.

    `window` (wall-clock seconds, from, to) keeps the records that started in it;
    without it, the span from the first start to the last end.
    """
    if window is not None:
        lo, hi = int(window[0] * 1e9), int(window[1] * 1e9)
        records = [r for r in records if lo <= r["start_ns"] < hi]
    if not records:
        return {}
    lo_ns = min(r["start_ns"] for r in records) if window is None else int(window[0] * 1e9)
    hi_ns = max(r["end_ns"] for r in records) if window is None else int(window[1] * 1e9)
    seconds = max(1e-9, (hi_ns - lo_ns) / 1e9)
    out: dict[str, Any] = {"seconds": seconds}
    for call in ("_write_group", "insert", "replace", "append"):
        rs = [r for r in records if r["call"] == call]
        if not rs:
            continue
        ms = sorted((r["end_ns"] - r["start_ns"]) / 1e6 for r in rs)
        entry: dict[str, Any] = {
            "calls": len(rs),
            "per_s": len(rs) / seconds,
            "mean_ms": statistics.fmean(ms),
            "p50_ms": ms[len(ms) // 2],
            "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))],
            "busy": sum(ms) / 1000 / seconds,
        }
        if call == "_write_group":
            for key in ("requests", "inserts", "upserts", "history"):
                entry[f"{key}_per_group"] = statistics.fmean(r[key] for r in rs)
            entry["groups_with_upserts"] = sum(1 for r in rs if r["upserts"]) / len(rs)
        else:
            entry["rows_per_call"] = statistics.fmean(r["rows"] for r in rs)
        out["group" if call == "_write_group" else call] = entry
    return out


def main() -> None:
    path = os.environ.get(ENV)
    if path:
        install(Path(path))
    from recalld_server.cli import main as recalld_main

    recalld_main()


if __name__ == "__main__":
    main()
