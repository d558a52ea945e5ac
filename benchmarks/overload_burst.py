"""Bursts of concurrent recalls against a server at its default settings: served, shed, other.

A burst is `calls` Recall RPCs sent at once over `channels` raw gRPC channels,
with the Python client's recall deadline (5 s) and without its retries, against
`recalld serve` on the embedded default (Milvus Lite, the bundled model) with
no flags but the port and data directory. Every
call must end served (OK) or shed (RESOURCE_EXHAUSTED with RetryInfo); anything
else is the server's own queue failing. `--source` serves another checkout's
code (a `git worktree` of an older revision), so two revisions run side by side
in one session, alternating burst by burst.

    python -m benchmarks.overload_burst --bursts 1000,5000 --channels 1,10 \\
        --source /tmp/old-tree --out benchmarks/results/overload-burst-REV.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recalld.v1 import memory_service_pb2, memory_service_pb2_grpc
from recalld_client import RecalldError

USERS = 200
SERVE_ARGS = ("--port", "0", "--data-dir")
TENANT = (("x-recalld-tenant", "burst"),)


@dataclasses.dataclass
class Burst:
    """One burst's outcome."""

    server: str
    calls: int
    channels: int
    deadline_s: float
    seconds: float
    codes: dict[str, int]
    shed_with_retry_info: int
    served_p50_ms: float
    served_p99_ms: float
    healthy_after: bool


class Server:
    """`python -m recalld_server serve` from a source tree, on a free loopback port."""

    def __init__(self, source: Path, data_dir: Path) -> None:
        server_dir = source / "server"
        client = source / "clients" / "python"
        env = {
            **os.environ,
            "RECALLD_LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join([str(server_dir), str(client / "gen"), str(client)]),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "recalld_server", "serve", *SERVE_ARGS, str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=source,
        )
        self.address = self._wait_for_port()

    def _wait_for_port(self, timeout_s: float = 120) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                match = re.search(r"listening on [\d.]+:(\d+)", self.process.stdout.readline())
                if match:
                    return f"127.0.0.1:{match.group(1)}"
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
        self.process.kill()
        raise TimeoutError("server did not start in time")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


async def burst(
    address: str, calls: int, channels: int, deadline_s: float
) -> tuple[Counter[str], int, list[float]]:
    """Sends the burst; returns codes, how many shed calls carried RetryInfo, served latencies."""
    opened = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    stubs = [memory_service_pb2_grpc.MemoryServiceStub(c) for c in opened]
    with_retry_info = 0
    served: list[float] = []

    async def recall(i: int) -> str:
        nonlocal with_retry_info
        request = memory_service_pb2.RecallRequest(
            user_id=f"u{i % USERS}", query=f"what does the user like {i}"
        )
        started = time.monotonic()
        try:
            await stubs[i % channels].Recall(request, timeout=deadline_s, metadata=TENANT)
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                shed = RecalldError.from_rpc_error(error)
                with_retry_info += shed.retry_delay_s is not None
            return error.code().name
        served.append((time.monotonic() - started) * 1000)
        return "OK"

    try:
        codes = Counter(await asyncio.gather(*(recall(i) for i in range(calls))))
    finally:
        for channel in opened:
            await channel.close(None)
    return codes, with_retry_info, served


async def healthy(address: str) -> bool:
    """Health answers SERVING after the burst."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            probe = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
        except grpc.aio.AioRpcError:
            return False
        return bool(probe.status == health_pb2.HealthCheckResponse.SERVING)


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


async def run(
    sources: dict[str, Path], sizes: list[int], channel_counts: list[int], deadline_s: float
) -> list[Burst]:
    """Every burst on every server, alternating servers burst by burst."""
    results: list[Burst] = []
    with tempfile.TemporaryDirectory() as scratch:
        servers = {name: Server(src, Path(scratch) / name) for name, src in sources.items()}
        try:
            for calls in sizes:
                for channels in channel_counts:
                    for name, server in servers.items():
                        await asyncio.sleep(3)  # let the previous burst drain
                        started = time.monotonic()
                        codes, with_retry_info, served = await burst(
                            server.address, calls, channels, deadline_s
                        )
                        elapsed = time.monotonic() - started
                        result = Burst(
                            name,
                            calls,
                            channels,
                            deadline_s,
                            round(elapsed, 2),
                            dict(codes),
                            with_retry_info,
                            _percentile(served, 0.5),
                            _percentile(served, 0.99),
                            await healthy(server.address),
                        )
                        print(json.dumps(dataclasses.asdict(result)), flush=True)
                        results.append(result)
        finally:
            for server in servers.values():
                server.stop()
    return results


def main() -> None:
    """Runs the bursts and writes the results file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bursts", default="1000,5000", help="calls per burst, comma-separated")
    parser.add_argument("--channels", default="1,10", help="channels per burst, comma-separated")
    parser.add_argument(
        "--source",
        type=Path,
        help="another checkout to serve beside this one (e.g. a worktree of an older revision)",
    )
    parser.add_argument(
        "--deadline", type=float, default=5.0, help="each call's deadline (the Python client's)"
    )
    parser.add_argument("--out", type=Path, help="results JSON")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    sources = {"this": here}
    if args.source:
        sources["other"] = args.source.resolve()
    sizes = [int(x) for x in args.bursts.split(",")]
    channel_counts = [int(x) for x in args.channels.split(",")]
    results = asyncio.run(run(sources, sizes, channel_counts, args.deadline))
    revisions = {
        name: subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        for name, src in sources.items()
    }
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "command": " ".join(["python -m benchmarks.overload_burst", *sys.argv[1:]]),
                    "revisions": revisions,
                    "bursts": [dataclasses.asdict(r) for r in results],
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
