"""py-spy profiles of the server during a load point, and what they say.

    python -m benchmarks.recalld_bench.pyspy PROFILE.txt [--top 20] [--thread MainThread]

`Recorder` samples a process's Python stacks (`py-spy record --nonblocking
--threads --format raw`: the target is never paused) over a point's measured
window; idle stacks are left out, so a thread's samples / (rate x seconds) is
the share of the window it ran Python (or native code called from it).
`summarize` reads the collapsed stacks: samples by thread, the functions most
often on top of the stack (self) and most often anywhere on it (inclusive).
py-spy is not a dependency: `pip install py-spy` (0.4.x) into the venv.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RATE = 100
_LINE = re.compile(r"^thread \((\d+)\): (.*) (\d+)$")
_FRAME_LINE = re.compile(r":\d+\)$")


def binary() -> str | None:
    """py-spy beside this interpreter (the venv), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Recorder:
    """Records one process with py-spy for `duration_s`, starting `delay_s` from now."""

    def __init__(
        self, pid: int, out: Path, delay_s: float, duration_s: float, rate: int = RATE
    ) -> None:
        self.pid = pid
        self.out = out
        self.rate = rate
        self.duration_s = duration_s
        self._process: subprocess.Popen[bytes] | None = None
        self._timer = threading.Timer(delay_s, self._start)

    def _start(self) -> None:
        exe = binary()
        if exe is None:
            return
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                exe,
                "record",
                "--pid",
                str(self.pid),
                "--rate",
                str(self.rate),
                "--duration",
                str(max(1, round(self.duration_s))),
                "--nonblocking",
                "--threads",
                "--format",
                "raw",
                "--output",
                str(self.out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def start(self) -> Recorder:
        self._timer.start()
        return self

    def wait(self, timeout_s: float = 30.0) -> Path | None:
        """The profile's path once written (None: py-spy missing or failed)."""
        self._timer.join()
        if self._process is None:
            return None
        try:
            self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        return self.out if self.out.exists() else None


def _thread_group(name: str) -> str:
    """Threads of one pool under one name (`ThreadPoolExecutor-0_3` -> `ThreadPoolExecutor-0`)."""
    return re.sub(r"_\d+$", "", name.split(" (", 1)[0])


def _function(frame: str) -> str:
    """A frame without its line number: `Class.method (file.py)`."""
    return _FRAME_LINE.sub(")", frame)


def read(path: Path) -> list[tuple[str, list[str], int]]:
    """(thread group, frames root first, samples) per collapsed stack (`.gz` read too)."""
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")
    stacks = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        thread, *frames = match.group(2).split(";")
        stacks.append((_thread_group(thread), [_function(f) for f in frames], int(match.group(3))))
    return stacks


def summarize(
    path: Path,
    *,
    seconds: float = 0.0,
    rate: int = RATE,
    top: int = 15,
    thread: str | None = None,
) -> dict[str, Any]:
    """Samples by thread and the top functions (self and inclusive), as shares of samples.

    With `seconds`, each thread's `busy` is its samples / (rate x seconds): the
    share of the window it was running (1.0: it never waited).
    """
    stacks = [s for s in read(path) if thread is None or s[0] == thread]
    total = sum(n for _, _, n in stacks)
    threads: dict[str, int] = {}
    own: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    for name, frames, n in stacks:
        threads[name] = threads.get(name, 0) + n
        if frames:
            own[frames[-1]] = own.get(frames[-1], 0) + n
        for f in set(frames):
            anywhere[f] = anywhere.get(f, 0) + n

    def ranked(counts: dict[str, int]) -> list[dict[str, Any]]:
        best = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
        return [
            {"function": f, "samples": n, "share": n / total if total else 0.0} for f, n in best
        ]

    return {
        "file": str(path),
        "samples": total,
        "rate": rate,
        "seconds": seconds,
        "threads": {
            name: {
                "samples": n,
                "busy": n / (rate * seconds) if seconds else None,
            }
            for name, n in sorted(threads.items(), key=lambda kv: -kv[1])
        },
        "top_self": ranked(own),
        "top_inclusive": ranked(anywhere),
    }


def share_under(path: Path, patterns: Sequence[str], thread: str | None = None) -> dict[str, float]:
    """Per pattern: the share of the (thread's) samples with a frame containing it."""
    stacks = [s for s in read(path) if thread is None or s[0] == thread]
    total = sum(n for _, _, n in stacks) or 1
    return {
        p: sum(n for _, frames, n in stacks if any(p in f for f in frames)) / total
        for p in patterns
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recalld_bench.pyspy")
    parser.add_argument("profile", type=Path, help="a py-spy raw (collapsed stacks) file")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--thread", default=None, help="only this thread (group) name")
    parser.add_argument("--seconds", type=float, default=0.0, help="the recorded window")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--under",
        action="append",
        default=[],
        help="also print the share of samples with a frame containing this (repeatable)",
    )
    args = parser.parse_args(argv)
    summary = summarize(args.profile, seconds=args.seconds, top=args.top, thread=args.thread)
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{summary['samples']} samples at {summary['rate']} Hz")
    for name, t in summary["threads"].items():
        busy = f", busy {t['busy']:.2f}" if t["busy"] is not None else ""
        print(f"  thread {name}: {t['samples']}{busy}")
    for pattern, share in share_under(args.profile, args.under, args.thread).items():
        print(f"  under {pattern}: {100 * share:.1f}%")
    for title in ("top_self", "top_inclusive"):
        print(title.replace("_", " ") + ":")
        for row in summary[title]:
            print(f"  {100 * row['share']:5.1f}%  {row['function']}")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
