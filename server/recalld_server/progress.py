"""A one-line progress indicator for long commands (import, export, reembed)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """A one-line progress indicator on stderr.

    On a terminal the line is redrawn in place (at most five times a second);
    otherwise a line is printed at most every `interval_s` seconds, and once at
    the end, so logs stay short.
    """

    def __init__(
        self, label: str, unit: str, stream: TextIO | None = None, interval_s: float = 5.0
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval_s = 0.2 if self.tty else interval_s
        self.started = time.monotonic()
        self.last = float("-inf")  # the first report always shows
        self.shown = False
        self.ended = False

    def __call__(self, done: int, total: int) -> None:
        """Reports progress; draws only when due or finished."""
        now = time.monotonic()
        if done < total and now - self.last < self.interval_s:
            return
        self.last = now
        rate = done / max(now - self.started, 1e-6)
        percent = 100 * done // total if total else 100
        text = f"{self.label}: {done}/{total} {self.unit} ({percent}%, {rate:.0f}/s"
        if 0 < done < total:
            text += f", about {_duration((total - done) / rate)} left"
        text += ")"
        if self.tty:
            self.stream.write(f"\r{text}\x1b[K")
            if done >= total:
                self.stream.write("\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True
        self.ended = done >= total

    def finish(self) -> None:
        """Ends a redrawn line that stopped short (an import that failed halfway)."""
        if self.tty and self.shown and not self.ended:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    """A rough duration for an ETA: 45 s, 12 min, 3.5 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
