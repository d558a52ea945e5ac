"""An embedding model in a child process of its own, spoken to over a pipe.

Why a process: a numpy forward pass is dozens of calls that each give the GIL
up and must win it back. On a thread beside a busy event loop every hand-over
waits out the loop's switch interval: five sentences that take 17 ms alone took
200 ms beside a busy Python thread, and 26 -> 50 ms through a
`ProcessPoolExecutor`, whose feeder threads need the GIL too
(benchmarks/README.md, "The model beside the event loop"). Here the calling
thread writes the texts to the child's stdin and blocks reading its stdout,
holding the GIL only to frame the message, and the model keeps a core to itself.

Why not `multiprocessing`: its spawn and forkserver children re-import the
parent's `__main__` (for `python -m recalld_server` that would be the server
itself), and fork would copy gRPC's threads mid-flight.

Frames, both ways: 4-byte little-endian length, then the body. A request body is
the texts as a JSON list. A reply is `V` + rows (u32) + columns (u32) + float32
data, or `E` + an error message. At start the child writes one `R` once the
model is loaded and warm. The child exits when its stdin closes, so it never
outlives the server, whatever killed the server.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.ports import Vectors

log = logging.getLogger(__name__)

EncodeFn = Callable[[list[str]], Vectors]

_READY = b"R"
_VECTORS = b"V"
_ERROR = b"E"
_HEADER = 4


class ModelFailedError(RuntimeError):
    """The model raised on these texts (its message says why); the child keeps serving."""


class ModelUnavailableError(BackendUnavailableError):
    """The model's process cannot answer; callers may retry (UNAVAILABLE).

    It did not start, died twice in one call, did not answer in time, or was closed.
    """


class _ChildGone(Exception):
    """The child closed its end: it died or was killed."""


class _TimedOut(Exception):
    """The child did not answer by the deadline."""


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    """The child's side: blocking reads of its stdin."""
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise _ChildGone
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_frame(stream: IO[bytes], body: bytes) -> None:
    stream.write(len(body).to_bytes(_HEADER, "little") + body)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes:
    size = int.from_bytes(_read_exactly(stream, _HEADER), "little")
    return _read_exactly(stream, size)


def _wait_for(fd: int, writing: bool, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _TimedOut
    ready = (
        select.select([], [fd], [], remaining)
        if writing
        else select.select([fd], [], [], remaining)
    )
    if not any(ready):
        raise _TimedOut


def _send_by(fd: int, data: bytes, deadline: float) -> None:
    """The server's side: a write that gives up at the deadline (a hung child stops reading)."""
    view = memoryview(data)
    while view:
        _wait_for(fd, True, deadline)
        try:
            # At most PIPE_BUF bytes: select promises that much room, so this never blocks.
            written = os.write(fd, view[: select.PIPE_BUF])
        except (BrokenPipeError, ConnectionResetError) as error:
            raise _ChildGone from error
        view = view[written:]


def _receive_by(fd: int, size: int, deadline: float) -> bytes:
    """The server's side: a read that gives up at the deadline."""
    chunks = []
    while size:
        _wait_for(fd, False, deadline)
        chunk = os.read(fd, size)
        if not chunk:
            raise _ChildGone
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class ModelProcess:
    """Runs `loader` (a "module:function" returning an encode function) in a child process.

    `encode` blocks its calling thread (never an event loop) until the child
    answers. A child that died is replaced once within the call that found it
    dead; one that does not answer within `call_timeout_s` is killed and replaced,
    and that call fails (its texts may be what hangs the model). The model's own
    errors come back as ModelFailedError and leave the child running.
    """

    def __init__(
        self, loader: str, startup_timeout_s: float = 120.0, call_timeout_s: float = 60.0
    ) -> None:
        self._loader = loader
        self._startup_timeout_s = startup_timeout_s
        self._call_timeout_s = call_timeout_s
        self._lock = threading.Lock()
        self._closed = False
        self._child = self._start()

    @property
    def pid(self) -> int:
        """The child's process id (tests kill it to prove a restart)."""
        return self._child.pid

    def _start(self) -> subprocess.Popen[bytes]:
        # The child imports recalld_server from wherever this process did, even
        # when that is a source tree on sys.path rather than an installed package.
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p
        )
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, self._loader],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            # Its own session: a Ctrl-C in the server's terminal is the server's to
            # handle; the child ends when the server closes its stdin, or dies.
            start_new_session=True,
        )
        assert child.stdout is not None
        deadline = time.monotonic() + self._startup_timeout_s
        try:
            ready = _receive_by(child.stdout.fileno(), 1, deadline)
        except (_ChildGone, _TimedOut):
            ready = b""
        if ready != _READY:
            child.kill()
            child.wait()
            raise ModelUnavailableError(
                f"the embedding model's process ({self._loader}) did not start "
                f"(exit code {child.returncode}; its error is on stderr)"
            )
        return child

    def encode(self, texts: list[str]) -> Vectors:
        """The texts' vectors, computed in the child."""
        body = json.dumps(texts, ensure_ascii=False).encode()
        with self._lock:
            if self._closed:
                raise ModelUnavailableError("the embedding model's process is closed")
            try:
                reply = self._call(body)
            except _ChildGone:
                self._stop(self._child, kill=True)
                log.warning(
                    "the embedding model's process died (exit code %s); starting a new one",
                    self._child.returncode,
                )
                self._child = self._start()
                try:
                    reply = self._call(body)
                except _ChildGone as gone:
                    raise ModelUnavailableError(
                        "the embedding model's process died twice in one call"
                    ) from gone
                except _TimedOut as late:
                    self._replace()
                    raise self._late() from late
            except _TimedOut as late:
                log.warning(
                    "the embedding model's process did not answer within %.0f s; replacing it",
                    self._call_timeout_s,
                )
                self._replace()
                raise self._late() from late
        kind, rest = reply[:1], reply[1:]
        if kind == _ERROR:
            raise ModelFailedError(f"the embedding model failed: {rest.decode(errors='replace')}")
        rows = int.from_bytes(rest[0:4], "little")
        columns = int.from_bytes(rest[4:8], "little")
        # A copy: callers may normalise or stack in place, and frombuffer is read-only.
        return np.frombuffer(rest, dtype=np.float32, offset=8).reshape(rows, columns).copy()

    def _late(self) -> ModelUnavailableError:
        return ModelUnavailableError(
            f"the embedding model did not answer within {self._call_timeout_s:.0f} s"
        )

    def _replace(self) -> None:
        self._stop(self._child, kill=True)
        self._child = self._start()

    def _call(self, body: bytes) -> bytes:
        child = self._child
        assert child.stdin is not None and child.stdout is not None
        deadline = time.monotonic() + self._call_timeout_s
        _send_by(child.stdin.fileno(), len(body).to_bytes(_HEADER, "little") + body, deadline)
        out = child.stdout.fileno()
        size = int.from_bytes(_receive_by(out, _HEADER, deadline), "little")
        return _receive_by(out, size, deadline)

    def close(self) -> None:
        """Stops the child (closing its stdin ends it; killed if it does not end)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._stop(self._child)

    @staticmethod
    def _stop(child: subprocess.Popen[bytes], kill: bool = False) -> None:
        if kill:
            child.kill()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _serve(loader: str) -> None:
    # stdout carries frames only: whatever the model's libraries print goes to stderr.
    frames_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    frames_in = sys.stdin.buffer
    module, _, function = loader.partition(":")
    encode: EncodeFn = getattr(importlib.import_module(module), function)()
    frames_out.write(_READY)
    frames_out.flush()
    while True:
        try:
            body = _read_frame(frames_in)
        except _ChildGone:
            return  # the server closed our stdin, or is gone
        try:
            texts = json.loads(body)
            vectors = np.ascontiguousarray(encode(texts), dtype=np.float32)
            rows, columns = vectors.shape
            reply = (
                _VECTORS
                + rows.to_bytes(4, "little")
                + columns.to_bytes(4, "little")
                + vectors.tobytes()
            )
        except Exception as error:  # the model's failure is the caller's error, not ours
            reply = _ERROR + f"{type(error).__name__}: {error}".encode()
        try:
            _write_frame(frames_out, reply)
        except BrokenPipeError:
            return  # the server went away mid-call


if __name__ == "__main__":
    _serve(sys.argv[1])
