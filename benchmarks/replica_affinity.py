"""Three replicas on one Redis and one Milvus server: each user routed to one replica
(user affinity) against calls in turn (round robin), then a replica stopped mid-run.

    python -m benchmarks.replica_affinity --users 10000 --duration 30 --repeats 2 \
        --out benchmarks/results/replica-affinity-<rev>.json

Every phase starts the replicas afresh (empty working sets) over the same loaded
store; the users a closed loop of `--concurrency` recalls asks for follow a Zipf
law over `--users` (the few heavy users of a real agent fleet). Each replica
exports its working-set counters to a metrics file (RECALLD_OTEL_METRICS_FILE),
read when it stops; RSS is read from /proc while the phase runs.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import random
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from recalld_client import RecalldClient, RecalldError
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.services import MilvusServerProcess, RedisProcess, free_port, milvus_server_binary

TENANT = "affinity-bench"
TOPICS = ("tea", "running", "Rust", "Lisbon", "jazz", "chess", "sailing", "ramen")


def _zipf_picker(users: int, exponent: float, seed: int) -> Any:
    weights = [1.0 / (rank**exponent) for rank in range(1, users + 1)]
    total = sum(weights)
    cumulative, running = [], 0.0
    for weight in weights:
        running += weight / total
        cumulative.append(running)
    order = list(range(users))
    random.Random(seed).shuffle(order)  # the heavy users are not user-0, user-1, ...
    rng = random.Random(seed + 1)

    def pick() -> str:
        rank = min(bisect.bisect_left(cumulative, rng.random()), users - 1)
        return f"user-{order[rank]}"

    return pick


def _rss_mb(process: ServerProcess) -> float:
    """Resident memory of the replica's process (the model included), in MB."""
    assert process.process is not None
    for line in Path(f"/proc/{process.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _last_points(path: Path) -> dict[str, float]:
    last: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            point = json.loads(line)
            if "value" in point:
                last[point["name"]] = point["value"]
    return last


class Replicas:
    """`count` recalld processes over one Milvus server and one Redis."""

    def __init__(self, root: Path, milvus: MilvusServerProcess, redis: RedisProcess) -> None:
        self.root = root
        self.args = ("--milvus-uri", milvus.uri, "--redis-url", redis.url)
        self.processes: list[ServerProcess] = []
        self.metric_files: list[Path] = []

    def start(self, count: int, phase: str, *flags: str) -> None:
        for i in range(count):
            metrics = self.root / f"{phase}-r{i}-metrics.jsonl"
            os.environ["RECALLD_OTEL_METRICS_FILE"] = str(metrics)
            os.environ["OTEL_METRIC_EXPORT_INTERVAL"] = "1000"
            process = ServerProcess(
                self.root / f"r{i}", *self.args, "--consolidate-interval", "0", *flags
            ).start(timeout_s=180)
            self.processes.append(process)
            self.metric_files.append(metrics)
        os.environ.pop("RECALLD_OTEL_METRICS_FILE", None)

    @property
    def target(self) -> str:
        return ",".join(p.address for p in self.processes)

    def stop(self) -> list[dict[str, float]]:
        """Stops every replica (SIGTERM: the last metrics are written) and reads them."""
        for process in self.processes:
            if process.process is not None and process.process.poll() is None:
                process.terminate(60)
        counters = [_last_points(path) for path in self.metric_files]
        self.processes, self.metric_files = [], []
        return counters


async def _load(target: str, users: int, per_user: int, concurrency: int) -> float:
    started = time.monotonic()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for user in range(users):
        queue.put_nowait(user)

    async def worker(client: RecalldClient) -> None:
        while not queue.empty():
            user = queue.get_nowait()
            rng = random.Random(user)
            texts = [
                f"user-{user} {rng.choice(['likes', 'asked about', 'keeps notes on'])} "
                f"{topic} (note {n})"
                for n, topic in enumerate(rng.sample(TOPICS, per_user))
            ]
            await client.write(
                f"user-{user}", [memory(t) for t in texts], request_id=f"load-{user}"
            )
            if user % 1000 == 0:
                print(f"  loaded {user}/{users}", flush=True)

    async with RecalldClient(target, tenant=TENANT) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return time.monotonic() - started


async def _run(
    target: str,
    routing: str,
    args: argparse.Namespace,
    replicas: Replicas,
    stop_one_at_s: float | None = None,
) -> dict[str, Any]:
    pick = _zipf_picker(args.users, args.zipf, args.seed)
    latencies: list[float] = []
    codes: Counter[str] = Counter()
    rss: list[list[float]] = [[] for _ in replicas.processes]
    deadline = time.monotonic() + args.duration
    stopped_at: float | None = None
    exited_after_s: float | None = None
    errors_after_stop: Counter[str] = Counter()

    async def worker(client: RecalldClient) -> None:
        while time.monotonic() < deadline:
            user = pick()
            started = time.monotonic()
            try:
                await client.recall(user, random.choice(TOPICS))
            except RecalldError as error:
                codes[error.code.name] += 1
                if stopped_at is not None:
                    errors_after_stop[error.code.name] += 1
                continue
            codes["OK"] += 1
            latencies.append(time.monotonic() - started)

    async def sample_rss() -> None:
        while time.monotonic() < deadline:
            for i, process in enumerate(replicas.processes):
                if process.process is not None and process.process.poll() is None:
                    rss[i].append(_rss_mb(process))
            await asyncio.sleep(1.0)

    async def stop_one() -> None:
        nonlocal stopped_at, exited_after_s
        assert stop_one_at_s is not None
        await asyncio.sleep(stop_one_at_s)
        stopped_at = time.monotonic()
        victim = replicas.processes[-1]
        await asyncio.to_thread(victim.terminate, 60)
        exited_after_s = round(time.monotonic() - stopped_at, 1)

    async with RecalldClient(target, tenant=TENANT, routing=routing) as client:  # type: ignore[arg-type]
        tasks = [worker(client) for _ in range(args.concurrency)] + [sample_rss()]
        if stop_one_at_s is not None:
            tasks.append(stop_one())
        await asyncio.gather(*tasks)
    latencies.sort()

    def quantile(q: float) -> float:
        return round(1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))], 1)

    return {
        "routing": routing,
        "calls": sum(codes.values()),
        "codes": dict(codes),
        "errors_after_stop": dict(errors_after_stop),
        "stopped_replica_exited_after_s": exited_after_s,
        "recalls_per_s": round(codes["OK"] / args.duration, 1),
        "p50_ms": quantile(0.5),
        "p99_ms": quantile(0.99),
        "rss_mb_peak": [round(max(r), 1) if r else None for r in rss],
    }


def _summarize(result: dict[str, Any], counters: list[dict[str, float]]) -> dict[str, Any]:
    opens = [c.get("recalld.working_set.opens", 0.0) for c in counters]
    hits = [c.get("recalld.working_set.hits", 0.0) for c in counters]
    result["replicas"] = [
        {
            "opens": int(c.get("recalld.working_set.opens", 0)),
            "hits": int(c.get("recalld.working_set.hits", 0)),
            "loads": int(c.get("recalld.working_set.loads", 0)),
            "users_held": int(c.get("recalld.working_set.users", 0)),
            "working_set_mb": round(c.get("recalld.working_set.bytes", 0) / 2**20, 1),
        }
        for c in counters
    ]
    result["hit_rate"] = round(sum(hits) / sum(opens), 4) if sum(opens) else None
    result["users_held_total"] = sum(r["users_held"] for r in result["replicas"])
    return result


async def main(args: argparse.Namespace) -> None:
    binary = milvus_server_binary()
    if binary is None:
        raise SystemExit("milvus-server is not installed (scripts/test.sh installs it)")
    root = Path(tempfile.mkdtemp(prefix="replica-affinity-"))
    milvus = MilvusServerProcess(binary, root / "milvus" / "data")
    (root / "milvus").mkdir()
    redis = RedisProcess(free_port())
    redis.start()
    milvus.start()
    replicas = Replicas(root, milvus, redis)
    revision = subprocess.run(  # noqa: ASYNC221  # once, before anything runs
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    report: dict[str, Any] = {
        "revision": revision,
        "users": args.users,
        "memories_per_user": args.per_user,
        "zipf_exponent": args.zipf,
        "concurrency": args.concurrency,
        "duration_s": args.duration,
        "repeats": args.repeats,
        "stop_grace_s": args.stop_grace,
        "phases": [],
    }
    try:
        replicas.start(3, "load")
        print(f"loading {args.users} users x {args.per_user} memories", flush=True)
        report["load_s"] = round(await _load(replicas.target, args.users, args.per_user, 16), 1)
        replicas.stop()
        # Round robin and affinity alternate (`--repeats` pairs), so that drift of a
        # shared machine falls on both; then one replica is stopped mid-run.
        plan = [
            *((name, routing, None) for _ in range(args.repeats)
              for name, routing in (("round_robin", "round_robin"), ("affinity", "user"))),
            ("affinity_stop_one", "user", args.duration / 3),
        ][-1 if args.only_stop else 0 :]  # fmt: skip
        for phase, routing, stop_at in plan:
            print(f"phase {phase}", flush=True)
            # The stopped replica drains for --stop-grace seconds, then exits while
            # calls still come: its users must move to the others within the phase.
            grace = ("--shutdown-grace", str(args.stop_grace)) if stop_at is not None else ()
            replicas.start(3, phase, *grace)
            result = await _run(replicas.target, routing, args, replicas, stop_at)
            result["phase"] = phase
            report["phases"].append(_summarize(result, replicas.stop()))
            print(json.dumps(report["phases"][-1]), flush=True)
    finally:
        replicas.stop()
        milvus.stop()
        redis.kill()
    await asyncio.to_thread(
        Path(args.out).write_text, json.dumps(report, indent=1) + "\n", encoding="utf-8"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--per-user", type=int, default=3)
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of the user mix")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeats", type=int, default=1, help="round robin / affinity pairs, alternating"
    )
    parser.add_argument(
        "--stop-grace",
        type=float,
        default=2.0,
        help="the stopped replica's --shutdown-grace: how long it drains before it exits",
    )
    parser.add_argument("--only-stop", action="store_true", help="load, then the stop phase only")
    parser.add_argument("--out", default="replica-affinity.json")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
