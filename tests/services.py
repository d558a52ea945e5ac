"""Real services the tests start on loopback: redis-server and the Milvus standalone server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from pymilvus import MilvusClient

REPO = Path(__file__).resolve().parents[1]


def stop_child(process: subprocess.Popen[Any] | None, timeout_s: float = 10) -> None:
    """Stops a child process: SIGTERM, then SIGKILL if it has not exited in time."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{what} did not start on port {port}")


class RedisProcess:
    """A real redis-server on loopback, restartable on the same port."""

    def __init__(
        self, port: int, data_dir: Path | None = None, replica_of: int | None = None
    ) -> None:
        self.port = port
        self.data_dir = data_dir
        """With a directory, an append-only file there (fsync always): a restart keeps
        the data, as a production Redis with AOF does."""
        self.replica_of = replica_of
        """The port of a Redis on loopback this one replicates (asynchronously)."""
        self.process: subprocess.Popen[bytes] | None = None
        self._scratch: Path | None = None

    @property
    def url(self) -> str:
        """redis:// URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix=f"recalld-redis-{self.port}-"))
        return self._scratch

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is required (scripts/test.sh installs it)"
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                # A replica's full sync writes an RDB file to --dir even with saving
                # off; without a directory of its own that was the working directory.
                "--dir",
                str(self.data_dir or self._scratch_dir()),
                *(
                    ["--appendonly", "no"]
                    if self.data_dir is None
                    else [
                        "--appendonly",
                        "yes",
                        "--appendfsync",
                        "always",
                    ]
                ),
                *(
                    []
                    if self.replica_of is None
                    else ["--replicaof", "127.0.0.1", str(self.replica_of)]
                ),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.port, "redis-server")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


class SentinelProcess(RedisProcess):
    """A real Redis Sentinel (redis-server --sentinel) watching one primary, on loopback.

    Quick to act, for tests: the primary is down after 1 s of silence, and one
    Sentinel is a quorum.
    """

    def __init__(self, port: int, primary_port: int, service: str, work_dir: Path) -> None:
        super().__init__(port)
        self.primary_port = primary_port
        self.service = service
        self.work_dir = work_dir

    @property
    def url(self) -> str:
        """The redis+sentinel:// URL of the service's primary, database 0."""
        return f"redis+sentinel://127.0.0.1:{self.port}/{self.service}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is required (scripts/test.sh installs it)"
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "sentinel.conf"  # Sentinel rewrites it: its own file
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.work_dir}\n"
            f"sentinel monitor {self.service} 127.0.0.1 {self.primary_port} 1\n"
            f"sentinel down-after-milliseconds {self.service} 1000\n"
            f"sentinel failover-timeout {self.service} 5000\n"
        )
        self.process = subprocess.Popen(
            [binary, str(config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.port, "redis sentinel")


def milvus_server_binary() -> str | None:
    """The PyPI `milvus` standalone (scripts/test.sh installs it into .venv-milvus)."""
    for candidate in (
        os.environ.get("RECALLD_MILVUS_SERVER_BIN", ""),
        str(REPO / ".venv-milvus" / "bin" / "milvus-server"),
        shutil.which("milvus-server") or "",
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


class MilvusServerProcess:
    """The Milvus 2.3 standalone server from PyPI, with its own data dir and free ports.

    Its coordinators listen on every interface (the package offers no bind address);
    the tests only ever connect over loopback. The time tick is lowered from 200 ms to
    10 ms: a Strong read waits ~1.5 ticks (measured: p50 ~17 ms at 10, ~30 at 20,
    ~330 at 200) for ~3 % more of a core while idle
    (benchmarks/storage_choice/results/milvus-server-2.3.5-tick-probe.json).
    """

    DEFAULT_TICK_MS = 10

    ROLES = (
        "--proxy-port",
        "--etcd-port",
        "--root-coord-port",
        "--proxy-internal-port",
        "--query-coord-port",
        "--query-node-port",
        "--index-coord-port",
        "--index-node-port",
        "--data-coord-port",
        "--data-node-port",
    )

    def __init__(self, binary: str, data_dir: Path, tick_ms: int = DEFAULT_TICK_MS) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.tick_ms = tick_ms
        self.ports = [free_port() for _ in self.ROLES]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        """The proxy's address."""
        return f"http://127.0.0.1:{self.ports[0]}"

    def start(self, timeout_s: float = 150) -> None:
        argv = [self.binary, "--data", str(self.data_dir)]
        for flag, port in zip(self.ROLES, self.ports, strict=True):
            argv += [flag, str(port)]
        argv += ["--extra-config", f"proxy.timeTickInterval={self.tick_ms}"]
        log = open(self.data_dir.parent / "milvus-server.log", "wb")  # noqa: SIM115
        self.process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"milvus-server exited with {self.process.returncode}")
            with contextlib.suppress(Exception):
                client = MilvusClient(uri=self.uri, timeout=5)
                try:
                    client.list_collections()
                    return
                finally:
                    client.close()
            time.sleep(1)
        raise TimeoutError("milvus-server did not answer in time")

    def alive(self) -> bool:
        """Whether the server process still runs (recalld must never crash it)."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Stops the wrapper and the `milvus run` it started (they share a session)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(20)
        # The wrapper may exit before the server does: whatever is left goes now.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


class SwitchableForwarder:
    """A loopback TCP forwarder whose target can move, cutting what it forwarded: a
    failover's virtual IP or DNS name moving to the promoted replica."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target
            )
        except OSError:
            writer.close()
            return
        self._open.update((writer, upstream_writer))
        try:
            await asyncio.gather(
                self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer)
            )
        finally:
            self._open.difference_update((writer, upstream_writer))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def switch(self, target: int) -> None:
        self.target = target
        for writer in list(self._open):
            writer.close()

    async def close(self) -> None:
        self.switch(self.target)
        if self._server is not None:
            self._server.close()


@contextlib.asynccontextmanager
async def primary_and_replica() -> AsyncIterator[tuple[RedisProcess, RedisProcess]]:
    """A Redis primary and a replica of it (asynchronous replication), on loopback."""
    primary = RedisProcess(free_port())
    primary.start()
    replica = RedisProcess(free_port(), replica_of=primary.port)
    replica.start()
    try:
        yield primary, replica
    finally:
        for process in (primary, replica):
            if process.process is not None and process.process.poll() is None:
                process.kill()


class OpenAICompatibleServer:
    """A real HTTP server on loopback speaking the OpenAI chat-completions protocol.

    `POST /v1/chat/completions` answers a chat completion whose content is
    `responder(request_json)`. Scriptable between calls through its attributes:
    `status` (answer this HTTP status with an OpenAI-style error instead),
    `delay_s` (wait before answering: a slow model), `raw_body` (answer these
    bytes with status 200: a malformed body). With `expected_key`, a request
    without `Authorization: Bearer <expected_key>` gets 401. Every request
    received is recorded in `requests`.
    """

    @dataclasses.dataclass(frozen=True, slots=True)
    class Request:
        method: str
        path: str
        headers: dict[str, str]
        body: Any
        """The parsed JSON body (None if it was not JSON)."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], str] | None = None,
        *,
        expected_key: str | None = None,
        status: int = 200,
        delay_s: float = 0.0,
        raw_body: bytes | None = None,
    ) -> None:
        self.responder: Callable[[dict[str, Any]], str] = responder or (lambda _request: "ok")
        self.expected_key = expected_key
        self.status = status
        self.delay_s = delay_s
        self.raw_body = raw_body
        self.requests: list[OpenAICompatibleServer.Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The API root to give a client (`.../v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _error(self, status: int, message: str, code: str) -> None:
                error = {"message": message, "type": "invalid_request_error", "code": code}
                self._send(status, json.dumps({"error": error}).encode())

            def do_GET(self) -> None:
                self._error(404, f"no route {self.path}", "not_found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with owner._lock:
                    owner.requests.append(
                        OpenAICompatibleServer.Request(
                            "POST", self.path, dict(self.headers.items()), body
                        )
                    )
                if owner.delay_s:
                    owner._stopping.wait(owner.delay_s)
                if self.path != "/v1/chat/completions":
                    self._error(404, f"no route {self.path}", "not_found")
                    return
                sent = self.headers.get("Authorization", "")
                if owner.expected_key is not None and sent != f"Bearer {owner.expected_key}":
                    self._error(401, f"Incorrect API key provided: {sent}", "invalid_api_key")
                    return
                if owner.status != 200:
                    self._error(owner.status, "scripted failure", "scripted")
                    return
                if owner.raw_body is not None:
                    self._send(200, owner.raw_body)
                    return
                if not isinstance(body, dict):
                    self._error(400, "the body is not a JSON object", "invalid_json")
                    return
                content = owner.responder(body)
                prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
                completion = {
                    "id": f"chatcmpl-{len(owner.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt // 4,
                        "completion_tokens": len(content) // 4,
                        "total_tokens": prompt // 4 + len(content) // 4,
                    },
                }
                self._send(200, json.dumps(completion, ensure_ascii=False).encode())

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timeout) closed the socket: expected

        self._stopping.clear()
        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="openai-compatible-server",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> OpenAICompatibleServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
