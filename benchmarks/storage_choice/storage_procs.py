"""The driver's side of the worker processes, and the one-shot probes it runs before
them (milvus-lite / pymilvus version of an interpreter, the server's version, the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import queue
import subprocess
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import MARK
else:  # run as a script: sys.path[0] is this folder
    from storage_common import MARK


class WorkerProc:
    def __init__(self, name: str, argv: list[str], logpath: str) -> None:
        self.name = name
        self.logfh = open(logpath, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.logfh,
            text=True,
            bufsize=1,
        )
        self.q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.q.put(line[len(MARK) :])
        self.q.put(None)

    def recv(self, timeout: float) -> dict[str, Any]:
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            return {"ok": False, "error": f"timeout after {timeout}s"}
        if line is None:
            return {"ok": False, "error": f"worker exited (rc={self.proc.poll()})"}
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, cmd: dict[str, Any]) -> str | None:
        """Send a command without waiting for the reply; an error text if that failed."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            return f"worker gone: {e}"
        return None

    def call(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        err = self.send(cmd)
        if err:
            return {"ok": False, "error": err}
        return self.recv(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.call({"cmd": "quit"}, 30)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.logfh.close()


def probe_version(python: str) -> str:
    r = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v; print(v('milvus-lite'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.stdout.strip() or "unknown"


def probe_server_version(python: str, uri: str) -> str:
    code = (
        "import sys; from pymilvus import MilvusClient; "
        "print(MilvusClient(uri=sys.argv[1]).get_server_version())"
    )
    r = subprocess.run([python, "-c", code, uri], capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise SystemExit(f"cannot reach the Milvus server at {uri}: {r.stderr.strip()[-400:]}")
    return r.stdout.strip().splitlines()[-1]


def probe_pymilvus(python: str) -> str:
    r = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v; print(v('pymilvus'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.stdout.strip() or "unknown"


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        info["mem_total_kb"] = int(fh.readline().split()[1])
    return info
