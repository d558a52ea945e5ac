"""1M memories of 20k users on one machine: load time, a cold user's first recall,
recall at c32, and RSS, on the embedded default and on a Milvus server.

    python -m benchmarks.million --rows 1000000 --users 20000 --store lite \
        --out benchmarks/results/million-lite-<rev>.json
    python -m benchmarks.million --rows 1000000 --users 20000 --store server \
        --out benchmarks/results/million-server-<rev>.json
    python -m benchmarks.million --store server --prewarm --working-set-mb 6144 \
        --rounds 3 --out benchmarks/results/million-server-steady-<rev>.json

The memories are synthetic (benchmarks/bulk_load.py: unit vectors of the bundled
model's dimension, 50 per user over 100 tenants), loaded by `recalld import
--with-vectors`; recall runs through a real server with the bundled model
embedding each query. The vectors are random, so what is measured is cost, not
quality. Cold: the first recall of each of `--cold-users` users, one at a time,
after the server started (each loads the user from the store). Warm: `--concurrency`
callers in a closed loop for `--duration` seconds over a Zipf mix of all users.
With `--prewarm`, every user is recalled once first (8 callers): the steady state
of a server whose working set (`--working-set-mb`) holds its users; without it,
the windows start from a cold server and measure the warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bulk_load import DIMENSION, TOPICS, _rows
from benchmarks.replica_affinity import _zipf_picker
from recalld_client import RecalldClient, RecalldError
from recalld_server.embedding.usem import USEM3_MODEL_ID
from recalld_server.maintenance.bulk import BulkHeader, row_to_line
from tests.e2e.server_process import ServerProcess
from tests.services import MilvusServerProcess, milvus_server_binary


def _rss_mb(pid: int) -> float:
    """RSS of a process and its children (Milvus Lite, the model's process)."""
    total = 0.0
    pids = [pid]
    while pids:
        current = pids.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        total += next(
            (
                int(line.split()[1]) / 1024
                for line in status.splitlines()
                if line.startswith("VmRSS:")
            ),
            0.0,
        )
        pids.extend(int(c) for c in children)
    return round(total, 1)


def _cpu_s(pid: int) -> float:
    """CPU seconds used so far by a process and its children (utime + stime)."""
    total, pids = 0.0, [pid]
    ticks = os.sysconf("SC_CLK_TCK")
    while pids:
        current = pids.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
        pids.extend(int(c) for c in children)
    return total


def _settle(pid: int, cores: float = 0.3, window_s: float = 5.0, limit_s: float = 900) -> float:
    """Waits until the store's server uses under `cores` for a window (its post-load work:
    flushes, compaction, index builds, done); the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        before = _cpu_s(pid)
        time.sleep(window_s)
        if (_cpu_s(pid) - before) / window_s < cores:
            break
    return round(time.monotonic() - started, 1)


def _quantiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {"p50_ms": at(0.5), "p90_ms": at(0.9), "p99_ms": at(0.99), "n": len(ordered)}


async def _measure(server: ServerProcess, args: argparse.Namespace) -> dict[str, Any]:
    async with RecalldClient(server.address, tenant="tenant-0") as root:
        clients = {t: root.with_credentials(tenant=f"tenant-{t}") for t in range(100)}

        async def recall(user: int) -> float:
            started = time.monotonic()
            await clients[user % 100].recall(f"user-{user}", random.choice(TOPICS), timeout=60)
            return time.monotonic() - started

        cold_users = random.Random(11).sample(range(args.users), args.cold_users)
        cold = [await recall(u) for u in cold_users]
        prewarm: dict[str, Any] = {}
        if args.prewarm:  # the steady state: every user recalled once, at 8 callers
            queue = list(range(args.users))
            started = time.monotonic()

            async def warm() -> None:
                while queue:
                    await recall(queue.pop())

            await asyncio.gather(*(warm() for _ in range(8)))
            prewarm = {"prewarm_s": round(time.monotonic() - started, 1)}

        pick = _zipf_picker(args.users, 1.0, 7)
        rounds = []
        for _ in range(args.rounds):  # later rounds find more of the mix's users loaded
            latencies: list[float] = []
            errors: dict[str, int] = {}
            deadline = time.monotonic() + args.duration

            async def worker(
                deadline: float, latencies: list[float], errors: dict[str, int]
            ) -> None:
                while time.monotonic() < deadline:
                    user = int(pick().split("-")[1])
                    try:
                        latencies.append(await recall(user))
                    except RecalldError as error:
                        errors[error.code.name] = errors.get(error.code.name, 0) + 1

            await asyncio.gather(
                *(worker(deadline, latencies, errors) for _ in range(args.concurrency))
            )
            rounds.append(
                {
                    **_quantiles(latencies),
                    "recalls_per_s": round(len(latencies) / args.duration, 1),
                    "errors": errors,
                }
            )
    return {
        "cold_first_recall": _quantiles(cold),
        **prewarm,
        "warm_c32": rounds[-1],
        "c32_rounds": rounds,
    }


def _write_source(path: Path, rows: int, users: int) -> float:
    started = time.monotonic()
    with path.open("w", encoding="utf-8") as out:
        out.write(BulkHeader(USEM3_MODEL_ID, DIMENSION, rows).to_line() + "\n")
        for row in _rows(rows, users, seed=7):
            out.write(row_to_line(row) + "\n")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--store", choices=["lite", "server"], default="lite")
    parser.add_argument("--cold-users", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument(
        "--rounds", type=int, default=1, help="c32 windows of --duration, one after another"
    )
    parser.add_argument(
        "--shutdown-timeout", type=float, default=900, help="seconds a SIGTERM may take"
    )
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="recall every user once (8 callers) before the c32 windows: the steady state",
    )
    parser.add_argument(
        "--working-set-mb", type=int, default=None, help="the server's --working-set-mb"
    )
    parser.add_argument(
        "--skip-load",
        action="store_true",
        help="the store in --work-dir already holds the rows (a repeated run)",
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--out", default="million.json")
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="million-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / "source.jsonl"
    report: dict[str, Any] = {"rows": args.rows, "users": args.users, "store": args.store}
    if not source.exists():
        report["generate_s"] = round(_write_source(source, args.rows, args.users), 1)
    milvus: MilvusServerProcess | None = None
    server_flags: list[str] = []
    store_flags = ["--data-dir", str(work / "lite")]
    if args.store == "server":
        binary = milvus_server_binary()
        if binary is None:
            raise SystemExit("milvus-server is not installed (scripts/test.sh installs it)")
        (work / "milvus").mkdir(exist_ok=True)
        milvus = MilvusServerProcess(binary, work / "milvus" / "data")
        milvus.start()
        store_flags = ["--milvus-uri", milvus.uri]
        server_flags = ["--milvus-uri", milvus.uri]
    report["settings"] = {
        "prewarm": args.prewarm,
        "working_set_mb": args.working_set_mb,
        "rounds": args.rounds,
        "duration_s": args.duration,
        "concurrency": args.concurrency,
    }
    if args.working_set_mb is not None:
        server_flags += ["--working-set-mb", str(args.working_set_mb)]
    try:
        if not args.skip_load:
            _load(report, source, store_flags, args.rows)
        if milvus is not None and milvus.process is not None:
            # A cold user's load is measured against a store at rest, as in service,
            # not against the bulk load's own compaction.
            report["milvus_settle_s"] = _settle(milvus.process.pid)
        started = time.monotonic()
        server = ServerProcess(work / "lite", *server_flags, "--consolidate-interval", "0")
        server.start(timeout_s=1800)
        report["server_start_s"] = round(time.monotonic() - started, 1)
        try:
            assert server.process is not None
            report["rss_mb_after_start"] = _rss_mb(server.process.pid)
            report.update(asyncio.run(_measure(server, args)))
            report["rss_mb_after_run"] = _rss_mb(server.process.pid)
            if milvus is not None and milvus.process is not None:
                report["milvus_server_rss_mb"] = _rss_mb(milvus.process.pid)
            _save(report, args.out)  # before the stop, which may take long
        finally:
            report["shutdown"] = _stop(server, args.shutdown_timeout)
    finally:
        if milvus is not None:
            milvus.stop()
    _save(report, args.out)
    print(json.dumps(report, indent=1))


def _load(report: dict[str, Any], source: Path, store_flags: list[str], rows: int) -> None:
    started = time.monotonic()
    loaded = subprocess.run(
        [sys.executable, "-m", "recalld_server", "import", "--with-vectors", str(source),
         *store_flags, "--no-progress"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    report["load_s"] = round(time.monotonic() - started, 1)
    report["load_rows_per_s"] = round(rows / report["load_s"])
    report["load_report"] = loaded.stderr.strip().splitlines()[-3:]
    if loaded.returncode != 0:
        raise SystemExit(f"load failed: {loaded.stderr}")


def _save(report: dict[str, Any], out: str) -> None:
    report["revision"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    Path(out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def _stop(server: ServerProcess, timeout_s: float) -> dict[str, Any]:
    """SIGTERM, timed: a graceful stop flushes what the server holds (access statistics)."""
    started = time.monotonic()
    try:
        code = server.terminate(timeout_s)
    except subprocess.TimeoutExpired:
        server.kill()
        return {"seconds": round(time.monotonic() - started, 1), "killed_after_s": timeout_s}
    return {"seconds": round(time.monotonic() - started, 1), "exit_code": code}


if __name__ == "__main__":
    main()
