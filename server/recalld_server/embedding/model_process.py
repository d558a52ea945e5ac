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
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

from recalld_server.domain.ports import Vectors

log = logging.getLogger(__name__)

EncodeFn = Callable[[list[str]], Vectors]

_READY = b"R"
_VECTORS = b"V"
_ERROR = b"E"
_HEADER = 4


class ModelProcessError(RuntimeError):
    """The model's process failed to start, died twice in one call, or the model raised."""


class _ChildGone(Exception):
    """The child closed its end: it died or was killed."""


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
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


class ModelProcess:
    """Runs `loader` (a "module:function" returning an encode function) in a child process.

    `encode` blocks its calling thread (never an event loop) until the child
    answers. A child that died is replaced once within the call that found it
    dead; the model's own errors come back as ModelProcessError and leave the
    child running.
    """

    def __init__(self, loader: str, startup_timeout_s: float = 120.0) -> None:
        self._loader = loader
        self._startup_timeout_s = startup_timeout_s
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
        ready = threading.Event()
        answer: list[bytes] = []

        def wait_ready() -> None:
            assert child.stdout is not None
            answer.append(child.stdout.read(1))
            ready.set()

        threading.Thread(target=wait_ready, daemon=True, name="recalld-model-start").start()
        if not ready.wait(self._startup_timeout_s) or answer != [_READY]:
            child.kill()
            child.wait()
            raise ModelProcessError(
                f"the embedding model's process ({self._loader}) did not start "
                f"(exit code {child.returncode}; its error is on stderr above)"
            )
        return child

    def encode(self, texts: list[str]) -> Vectors:
        """The texts' vectors, computed in the child."""
        body = json.dumps(texts, ensure_ascii=False).encode()
        with self._lock:
            if self._closed:
                raise ModelProcessError("the embedding model's process is closed")
            try:
                reply = self._call(body)
            except _ChildGone:
                code = self._child.poll()
                log.warning(
                    "the embedding model's process died (exit code %s); starting a new one", code
                )
                self._stop(self._child)
                self._child = self._start()
                try:
                    reply = self._call(body)
                except _ChildGone as gone:
                    raise ModelProcessError(
                        "the embedding model's process died twice in one call"
                    ) from gone
        kind, rest = reply[:1], reply[1:]
        if kind == _ERROR:
            raise ModelProcessError(f"the embedding model failed: {rest.decode(errors='replace')}")
        rows = int.from_bytes(rest[0:4], "little")
        columns = int.from_bytes(rest[4:8], "little")
        # A copy: callers may normalise or stack in place, and frombuffer is read-only.
        return np.frombuffer(rest, dtype=np.float32, offset=8).reshape(rows, columns).copy()

    def _call(self, body: bytes) -> bytes:
        child = self._child
        assert child.stdin is not None and child.stdout is not None
        try:
            _write_frame(child.stdin, body)
        except (BrokenPipeError, ConnectionResetError, ValueError) as error:
            raise _ChildGone from error
        return _read_frame(child.stdout)

    def close(self) -> None:
        """Stops the child (closing its stdin ends it; killed if it does not end)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._stop(self._child)

    @staticmethod
    def _stop(child: subprocess.Popen[bytes]) -> None:
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
