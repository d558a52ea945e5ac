"""Runs `recalld serve` as a real child process (for restart and crash tests)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path


class ServerProcess:
    """A `python -m recalld_server serve` child on a free loopback port."""

    def __init__(self, data_dir: Path, *extra_args: str) -> None:
        self.data_dir = data_dir
        self.extra_args = extra_args
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self, timeout_s: float = 60, own_group: bool = False) -> ServerProcess:
        """Starts and waits for the 'listening' line.

        With `own_group` the server leads a process group of its own, as in a
        terminal, so a test can signal the whole group (Ctrl-C) and not itself.
        """
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "recalld_server",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(self.data_dir),
                *self.extra_args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "RECALLD_LOG_LEVEL": "WARNING"},
            start_new_session=own_group,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                line = self.process.stdout.readline()
                match = re.search(r"listening on [\d.]+:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                    return self
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
        self.kill()
        raise TimeoutError("server did not start in time")

    @property
    def address(self) -> str:
        """host:port to dial."""
        return f"127.0.0.1:{self.port}"

    def terminate(self, timeout_s: float = 30) -> int:
        """Graceful stop (SIGTERM)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        """Crash stop (SIGKILL), including the Milvus Lite child it started."""
        assert self.process is not None
        children = _children(self.process.pid)
        self.process.kill()
        self.process.wait(30)
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    try:
        out = subprocess.run(
            ["pgrep", "-P", str(pid)], capture_output=True, text=True, timeout=5, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in out.split()]
