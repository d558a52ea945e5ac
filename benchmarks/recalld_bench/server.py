"""Start and stop a `recalld serve` subprocess (and optionally redis-server) on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclasses.dataclass(slots=True)
class ServerProcess:
    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    traces_file: Path | None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc), children excluded."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its live children (Milvus Lite runs as a child).

    Children are listed per thread (`task/<tid>/children`): the Milvus Lite engine is
    started from a worker thread, so the main thread's list alone misses it.
    """
    total = process_cpu_s(pid)
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    total += tree_cpu_s(int(child))
    return total


@contextlib.contextmanager
def recalld(
    data_dir: Path,
    *,
    redis_url: str = "",
    traces_file: Path | None = None,
    log_file: Path | None = None,
    extra_args: tuple[str, ...] = (),
    start_timeout_s: float = 120.0,
    server_src: Path | None = None,
) -> Iterator[ServerProcess]:
    """Runs `recalld serve` on a free loopback port until the block ends.

    `server_src` runs the server from another source tree (for example a `git archive` of
    a commit) instead of the installed one, so a run measures a fixed revision.
    """
    port = free_port()
    env = dict(os.environ)
    if server_src is not None:
        roots = [
            server_src / "server",
            server_src / "clients/python",
            server_src / "clients/python/gen",
        ]
        env["PYTHONPATH"] = os.pathsep.join(str(r) for r in roots)
    env.setdefault("RECALLD_LOG_LEVEL", "WARNING")
    if traces_file is not None:
        env["RECALLD_OTEL_TRACES_FILE"] = str(traces_file)
    args = [
        sys.executable,
        "-m",
        "recalld_server.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--consolidate-interval",
        "0",
        *extra_args,
    ]
    if redis_url:
        args += ["--redis-url", redis_url]
    log = (log_file or data_dir.parent / f"recalld-{port}.log").open("wb")
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env)
    try:
        deadline = time.monotonic() + start_timeout_s
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        if "listening" not in line or time.monotonic() > deadline:
            raise RuntimeError(f"recalld did not start (rc={process.poll()}): {line!r}")
        yield ServerProcess(process, port, data_dir, traces_file)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on a free loopback port without persistence."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def snapshot(src: Path, dst: Path) -> Path:
    """A fresh copy of a loaded data directory, so every run starts from the same state."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst
