"""A zero-cost OpenAI-compatible embedding server: what recalld costs without the model.

    python -m benchmarks.recalld_bench.hash_embedder --port 8089 [--dimension 384]

`POST /v1/embeddings` (and `/embeddings`) answers every text with a deterministic
unit vector seeded by a BLAKE2b hash of the text (float32, rounded to 5 decimals),
in input order with its `index`, as JSON lists, or as base64 float32 when the
request asks `encoding_format: "base64"` (recalld does, unless told otherwise).
The vectors carry no meaning; they cost next to nothing, so a benchmark through
this server measures recalld's own pipeline (HTTP client, batching, the answer's
checks, storage, search) with the model "elsewhere", as in production. Each
text's answer fragment is cached (LRU), so a repeated text costs a dict lookup.

`GET /health` answers 200; `GET /stats` the requests and texts served so far (a
benchmark reads it before and after a point: texts per request is the batch size
recalld sent). `input_type` and `user` are accepted and ignored; `dimensions`
and `encoding_format` are honoured. The process stops by itself after
`--max-seconds`, or within a second of its parent's end (`--parent-pid`), so a
benchmark that dies cannot leave it running.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import http.server
import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

DEFAULT_DIMENSION = 384
MODEL = "hash"
"""The model name it answers with unless asked for another; the stored id is
`openai:hash:<dimension>`."""
MAX_TEXTS = 2048
MAX_BODY_BYTES = 16 * 1024 * 1024
DECIMALS = 5


class BadRequestError(ValueError):
    """The request is not one this server answers (the message says why)."""


def vector(text: str, dimension: int) -> np.ndarray:
    """The unit float32 vector for a text: a standard normal draw seeded by its hash."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    raw = np.random.default_rng(seed).standard_normal(dimension, dtype=np.float32)
    unit: np.ndarray = raw / np.linalg.norm(raw)
    return unit


_SCALE = 10**DECIMALS
_NUMBERS = [f"{i / _SCALE:.{DECIMALS}f}" for i in range(-_SCALE, _SCALE + 1)]
"""Every value of [-1, 1] at DECIMALS, formatted once: formatting floats one by one
costs ~90 us a vector of 384, looking them up ~25 us."""


@functools.lru_cache(maxsize=1 << 16)
def vector_json(text: str, dimension: int) -> str:
    """The vector as a JSON list, rounded to DECIMALS (cached: repeated texts are free)."""
    steps = np.rint(vector(text, dimension) * _SCALE).astype(np.int64) + _SCALE
    return "[" + ",".join(map(_NUMBERS.__getitem__, steps.tolist())) + "]"


@functools.lru_cache(maxsize=1 << 16)
def vector_base64(text: str, dimension: int) -> str:
    """The same rounded vector as `vector_json`, as base64 little-endian float32, quoted."""
    steps = np.rint(vector(text, dimension) * _SCALE)
    data = (steps / _SCALE).astype("<f4").tobytes()
    return '"' + base64.b64encode(data).decode("ascii") + '"'


def _texts(payload: Any) -> list[str]:
    if not isinstance(payload, dict):
        raise BadRequestError("the body is not a JSON object")
    raw = payload.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise BadRequestError("input must be a string or a list of strings")
    if not texts or len(texts) > MAX_TEXTS:
        raise BadRequestError(f"input must hold 1..{MAX_TEXTS} texts")
    return texts


def answer(payload: Any, dimension: int = DEFAULT_DIMENSION) -> tuple[bytes, int]:
    """The response body for a parsed request, and how many texts it embedded.

    Raises:
        BadRequestError: Not an embeddings request this server can answer.
    """
    texts = _texts(payload)
    asked = payload.get("dimensions")
    if asked is not None:
        if not isinstance(asked, int) or isinstance(asked, bool) or not 1 <= asked <= 8192:
            raise BadRequestError("dimensions must be an integer 1..8192")
        dimension = asked
    encoding = payload.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise BadRequestError('encoding_format must be "float" or "base64"')
    encoded = vector_base64 if encoding == "base64" else vector_json
    model = payload.get("model")
    name = model if isinstance(model, str) and model else MODEL
    items = ",".join(
        f'{{"object":"embedding","index":{i},"embedding":{encoded(t, dimension)}}}'
        for i, t in enumerate(texts)
    )
    tokens = sum(len(t) for t in texts) // 4 + len(texts)
    usage = f'{{"prompt_tokens":{tokens},"total_tokens":{tokens}}}'
    body = f'{{"object":"list","data":[{items}],"model":{json.dumps(name)},"usage":{usage}}}'
    return body.encode("utf-8"), len(texts)


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.texts = 0
        self.refused = 0

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {"requests": self.requests, "texts": self.texts, "refused": self.refused}


def make_server(
    host: str, port: int, dimension: int = DEFAULT_DIMENSION
) -> http.server.ThreadingHTTPServer:
    """A threaded HTTP/1.1 server (keep-alive: one thread per client connection)."""
    counters = _Counters()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "recalld-bench-hash-embedder"
        # TCP_NODELAY: the headers and the body leave as two writes; with Nagle on,
        # the body waits for the client's delayed ACK of the headers (~40 ms on
        # Linux), which would be charged to recalld's embedding stage.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            with counters.lock:
                counters.refused += 1
            error = {"error": {"message": message, "type": "invalid_request_error"}}
            self._send(status, json.dumps(error).encode())

        def do_GET(self) -> None:
            if self.path in ("/health", "/v1/health"):
                self._send(200, b'{"status":"ok"}')
            elif self.path == "/stats":
                self._send(200, json.dumps(counters.snapshot()).encode())
            elif self.path in ("/v1/models", "/models"):
                models = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
                self._send(200, json.dumps(models).encode())
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._error(413, "request body too large")
                return
            raw = self.rfile.read(length)
            if self.path not in ("/v1/embeddings", "/embeddings"):
                self._error(404, f"no route {self.path}")
                return
            try:
                body, count = answer(json.loads(raw), dimension)
            except (UnicodeDecodeError, json.JSONDecodeError):
                self._error(400, "the body is not JSON")
                return
            except BadRequestError as error:
                self._error(400, str(error))
                return
            with counters.lock:
                counters.requests += 1
                counters.texts += count
            try:
                self._send(200, body)
            except OSError:  # the client went away (a deadline): nothing to answer
                self.close_connection = True

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def _watchdog(server: http.server.ThreadingHTTPServer, max_seconds: float, parent_pid: int) -> None:
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        if parent_pid and os.getppid() != parent_pid:
            break
        time.sleep(1.0)
    server.shutdown()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.recalld_bench.hash_embedder", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    parser.add_argument("--dimension", type=int, default=DEFAULT_DIMENSION)
    parser.add_argument(
        "--max-seconds", type=float, default=4 * 3600.0, help="stop after this long"
    )
    parser.add_argument("--parent-pid", type=int, default=0, help="stop when this parent ends")
    args = parser.parse_args(argv)
    server = make_server(args.host, args.port, args.dimension)
    threading.Thread(
        target=_watchdog, args=(server, args.max_seconds, args.parent_pid), daemon=True
    ).start()
    host, port = server.server_address[:2]
    print(f"hash embedder listening on {host!s}:{port} (dimension {args.dimension})", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
