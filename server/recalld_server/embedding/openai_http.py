"""An embedding model behind an OpenAI-compatible `/v1/embeddings` endpoint.

Production teams run their embeddings as a service (OpenAI, Azure OpenAI, vLLM,
Hugging Face TEI, Ollama, llama.cpp's server, LiteLLM, Infinity); all of them
speak this API. The embedder makes that service safe to depend on:

* **Batching.** Concurrent callers' texts share requests: a request leaves as
  soon as a slot of `max_in_flight` is free, carrying every text queued
  meanwhile, up to `max_batch`. Under load batches fill; idle, nobody waits.
* **Deadlines.** A text carries its call's deadline (`recalld_server.deadlines`);
  a request and its retries end by the latest deadline of the callers it serves,
  and a request whose callers have all gone is cancelled.
* **Retries** (tenacity): connection errors, timeouts, 429, 5xx and malformed
  answers are retried with exponential backoff and jitter, waiting at least
  what `Retry-After` asks; a wait that would pass the deadline is not taken and
  the caller gets UNAVAILABLE with that delay as RetryInfo.
* **A circuit breaker**: after consecutive failed requests, calls fail at once
  for a cooldown instead of each waiting out the timeouts.
* **Checked answers** (`openai_wire.parse_answer`): count, order, dimension,
  finite values; vectors are normalised here, since not every server does.
* **Compact answers**: vectors are asked as base64 float32 (`encoding_format`)
  unless the endpoint refuses that at the start-up probe; numbers are accepted
  either way.
* **Refused texts** (400, 413, 422): a batch is split until the refused text is
  alone, so one caller's text cannot fail the others; a text refused as too
  long is cut in half and sent again, down to `MIN_CUT_CHARS`.

The API key travels only in the Authorization header: every message this
module writes (errors, logs) names the endpoint without credentials, and any
echo of the key in an answer is masked.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import email.utils
import functools
import logging
import math
import re
import time
import urllib.parse
from collections.abc import Callable, Sequence

import httpx
import numpy as np
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
    wait_exponential_jitter,
)
from tenacity.stop import stop_base

from recalld_server import deadlines
from recalld_server.breaker import CircuitBreaker
from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.domain.core.ports import Vectors
from recalld_server.embedding.openai_wire import (
    ENCODINGS,
    MAX_ANSWER_BYTES,
    Framing,
    MalformedAnswerError,
    Purpose,
    cut,
    parse_answer,
    request_body,
)

log = logging.getLogger(__name__)

MIN_CUT_CHARS = 256
"""A text refused as too long is halved until it is accepted or this short."""

MAX_RETRY_AFTER_S = 60.0
"""The longest Retry-After honoured; a longer one is capped (background work)."""

PROBE_TEXT = "recalld probe: what does this endpoint answer?"

_TOO_LONG = re.compile(r"too long|too large|maximum|context length|token|exceed", re.IGNORECASE)


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointSettings:
    """Where and how to reach the endpoint.

    Attributes:
        base_url: The API root, e.g. `http://tei:8080/v1` (`/embeddings` is added).
        model: The `model` field of every request: the remote model's name.
        api_key: Sent as `Authorization: Bearer <key>`; empty: no header.
        dimensions: Sent as `dimensions` (models that can shorten their vectors).
        document: How stored memories are framed (prefix, input_type).
        query: How recall queries are framed.
        max_batch: Most texts one request carries.
        max_in_flight: Most requests at once (one connection each).
        timeout_s: Deadline of one request, connection and answer included.
        max_input_chars: Longer texts are cut (`openai_wire.cut`) before sending.
        encoding_format: "auto" asks for base64 vectors and falls back to numbers
            when the probe's base64 request is refused or answered wrongly;
            "base64" or "float" asks for that only.
        attempts: Tries per request, the first included.
        startup_timeout_s: How long the start-up probe retries an endpoint that
            cannot be reached yet (one starting beside recalld).
        circuit_failures: Consecutive failed requests that open the circuit.
        circuit_cooldown_s: How long an open circuit refuses calls.
    """

    base_url: str
    model: str
    api_key: str = dataclasses.field(default="", repr=False)
    dimensions: int | None = None
    document: Framing = dataclasses.field(default_factory=Framing)
    query: Framing = dataclasses.field(default_factory=Framing)
    max_batch: int = 32
    max_in_flight: int = 4
    timeout_s: float = 30.0
    max_input_chars: int = 8192
    encoding_format: str = "auto"
    attempts: int = 4
    startup_timeout_s: float = 30.0
    circuit_failures: int = 5
    circuit_cooldown_s: float = 10.0

    def __post_init__(self) -> None:
        problems = []
        if not self.base_url.startswith(("http://", "https://")):
            problems.append("the base URL must be an http:// or https:// URL")
        if not self.model.strip():
            problems.append("a model name is required")
        if self.dimensions is not None and self.dimensions < 1:
            problems.append("dimensions must be positive")
        if self.max_batch < 1 or self.max_in_flight < 1 or self.attempts < 1:
            problems.append("max batch, max in flight and attempts must be at least 1")
        if self.timeout_s <= 0 or self.startup_timeout_s < 0 or self.circuit_cooldown_s < 0:
            problems.append("timeouts must be positive")
        if self.max_input_chars < MIN_CUT_CHARS:
            problems.append(f"max input chars must be at least {MIN_CUT_CHARS}")
        if self.circuit_failures < 1:
            problems.append("circuit failures must be at least 1")
        if self.encoding_format not in ENCODINGS:
            problems.append(f"encoding format must be one of {', '.join(ENCODINGS)}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def url(self) -> str:
        """The embeddings endpoint."""
        return self.base_url.rstrip("/") + "/embeddings"

    @property
    def public_url(self) -> str:
        """The endpoint without credentials or query, for messages."""
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))

    def framing(self, purpose: Purpose) -> Framing:
        """The framing of one purpose's texts."""
        return self.query if purpose is Purpose.QUERY else self.document


def model_id_for(settings: EndpointSettings, dimension: int) -> str:
    """The id stored with every memory: provider, model and dimension.

    The host is left out on purpose: the same model moved to another server makes
    the same vectors. A model's vectors and another's never share a collection.
    """
    return f"openai:{settings.model}:{dimension}"


class EndpointProbeError(RuntimeError):
    """The endpoint cannot serve as configured (the message says why, for the operator)."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class _Malformed(_Retryable):
    pass


class _Fatal(Exception):
    """Retrying will not help (401, 403, 404, a redirect): the operator must act."""


class _DeadlinePassed(Exception):
    """The callers stopped waiting: not the endpoint's failure (the circuit does not count it)."""


class _Refused(Exception):
    """The endpoint refused these texts (400, 413, 422): possibly one of them."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {detail}" if detail else ""))
        self.too_long = status == 413 or bool(_TOO_LONG.search(detail))


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """A Retry-After header's delay: seconds, or an HTTP date (None: absent or unreadable)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now()
    if not math.isfinite(seconds):
        return None
    return min(MAX_RETRY_AFTER_S, max(0.0, seconds))


class _WaitAtLeastRetryAfter:
    """Backoff with jitter, but never shorter than the endpoint's Retry-After."""

    def __init__(self) -> None:
        self._backoff = wait_exponential_jitter(multiplier=0.1, max=5.0, jitter=0.1)

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        asked = error.retry_after_s if isinstance(error, _Retryable) else None
        return max(asked or 0.0, self._backoff(state))


class _StopAtDeadline(stop_base):
    """Stops when the next wait would end past the deadline."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def __call__(self, state: RetryCallState) -> bool:
        if self.deadline is None:
            return False
        return time.monotonic() + (state.upcoming_sleep or 0.0) >= self.deadline


@dataclasses.dataclass(slots=True)
class _Pending:
    texts: list[str]
    purpose: Purpose
    deadline: float | None
    future: asyncio.Future[Vectors]


class OpenAIEmbedder:
    """The `Embedder` port over an OpenAI-compatible endpoint; build it with `connect`."""

    def __init__(self, settings: EndpointSettings, client: httpx.AsyncClient | None = None) -> None:
        self._settings = settings
        self._client = client or httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=settings.max_in_flight,
                max_keepalive_connections=settings.max_in_flight,
            ),
            follow_redirects=False,  # a redirect would carry the key elsewhere
        )
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if settings.api_key:
            self._headers["Authorization"] = f"Bearer {settings.api_key}"
        self._dimension: int | None = None
        self._base64 = settings.encoding_format != "float"
        """Whether requests ask for base64 vectors (the probe may turn it off)."""
        self._breaker = CircuitBreaker(
            f"embedding endpoint {settings.public_url}",
            failures=settings.circuit_failures,
            cooldown_s=settings.circuit_cooldown_s,
        )
        self._queue: collections.deque[_Pending] = collections.deque()
        self._queued = asyncio.Event()
        self._slots = asyncio.Semaphore(settings.max_in_flight)
        self._dispatcher: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[None]] = set()

    @classmethod
    async def connect(cls, settings: EndpointSettings) -> OpenAIEmbedder:
        """Probes the endpoint once (both framings) and learns the dimension.

        Raises:
            EndpointProbeError: Unreachable for `startup_timeout_s`, refused the
                request, answered malformed vectors, or a dimension other than the
                configured `dimensions`.
        """
        embedder = cls(settings)
        try:
            await embedder._probe()
        except BaseException:
            await embedder.close()
            raise
        return embedder

    @property
    def model_id(self) -> str:
        """`openai:<model>:<dimension>`."""
        return model_id_for(self._settings, self.dimension)

    @property
    def dimension(self) -> int:
        """The vector length the probe learnt."""
        if self._dimension is None:
            raise RuntimeError("the endpoint has not been probed (use OpenAIEmbedder.connect)")
        return self._dimension

    @property
    def settings(self) -> EndpointSettings:
        """The endpoint's settings (the key is not in their repr)."""
        return self._settings

    @property
    def circuit(self) -> CircuitBreaker:
        """The endpoint's circuit breaker."""
        return self._breaker

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embeds memories' contents (the document framing); row i is texts[i]."""
        return await self._submit(list(texts), Purpose.DOCUMENT)

    async def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embeds recall queries (the query framing)."""
        return await self._submit(list(texts), Purpose.QUERY)

    def encode_blocking(self, texts: list[str]) -> Vectors:
        """Not offered: the endpoint is only reached from the event loop."""
        raise NotImplementedError("the HTTP embedder has no blocking path; await embed()")

    async def close(self) -> None:
        """Stops the dispatcher, cancels requests in flight and closes connections."""
        tasks = [*self._sending, *([self._dispatcher] if self._dispatcher else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for pending in self._queue:
            if not pending.future.done():
                pending.future.set_exception(BackendUnavailableError("embedder closed"))
        self._queue.clear()
        await self._client.aclose()

    # ------------------------------------------------------------------ probing

    async def _probe(self) -> None:
        settings = self._settings
        give_up = time.monotonic() + settings.startup_timeout_s
        dimensions = []
        for purpose in (Purpose.DOCUMENT, Purpose.QUERY):
            while True:
                try:
                    vectors = await self._attempt([PROBE_TEXT], purpose, None)
                    break
                except (_Malformed, _Refused) as error:
                    if self._base64 and settings.encoding_format == "auto":
                        # Some servers refuse or mangle `encoding_format`: ask for numbers.
                        log.info(
                            "embedding endpoint %s: base64 vectors not served (%s); "
                            "asking for numbers",
                            settings.public_url,
                            self._redact(str(error)),
                        )
                        self._base64 = False
                        continue
                    if isinstance(error, _Refused):
                        raise self._probe_error(f"refused the probe: {error}") from None
                    raise self._probe_error(f"answered malformed vectors: {error}") from None
                except _Retryable as error:
                    if time.monotonic() >= give_up:
                        raise self._probe_error(f"unreachable: {error}") from None
                    log.warning(
                        "embedding endpoint %s: %s; retrying",
                        settings.public_url,
                        self._redact(str(error)),
                    )
                    await asyncio.sleep(min(1.0, max(0.0, give_up - time.monotonic())))
                except (_Fatal, _DeadlinePassed) as error:
                    raise self._probe_error(f"refused the probe: {error}") from None
            dimensions.append(vectors.shape[1])
        if len(set(dimensions)) != 1:
            raise self._probe_error(f"documents and queries differ in dimension ({dimensions})")
        if settings.dimensions is not None and dimensions[0] != settings.dimensions:
            raise self._probe_error(
                f"answered {dimensions[0]} dimensions where {settings.dimensions} were asked"
            )
        self._dimension = dimensions[0]

    def _probe_error(self, cause: str) -> EndpointProbeError:
        return EndpointProbeError(
            self._redact(
                f"embedding endpoint {self._settings.public_url} "
                f"(model {self._settings.model!r}) {cause}"
            )
        )

    # ------------------------------------------------------------------ batching

    async def _submit(self, texts: list[str], purpose: Purpose) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._breaker.check()
        loop = asyncio.get_running_loop()
        deadline = deadlines.current()
        size = self._settings.max_batch
        pending = [
            _Pending(texts[i : i + size], purpose, deadline, loop.create_future())
            for i in range(0, len(texts), size)
        ]
        self._queue.extend(pending)
        self._queued.set()
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.create_task(self._dispatch(), name="embed-dispatch")
        try:
            parts = await asyncio.gather(*(p.future for p in pending))
        except BaseException:
            for p in pending:
                p.future.cancel()
            raise
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    async def _dispatch(self) -> None:
        while True:
            await self._queued.wait()
            await self._slots.acquire()  # callers queue meanwhile: the batch fills
            batch = self._take()
            if not batch:
                self._slots.release()
                self._queued.clear()
                continue
            task = asyncio.create_task(self._send(batch), name="embed-request")
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

            for item in batch:
                item.future.add_done_callback(functools.partial(_abandon, batch, task))

    def _take(self) -> list[_Pending]:
        """The next batch: queued texts of the oldest caller's purpose, up to max_batch."""
        while self._queue and self._queue[0].future.done():
            self._queue.popleft()  # a caller that gave up
        if not self._queue:
            return []
        purpose = self._queue[0].purpose
        batch: list[_Pending] = []
        size = 0
        kept: collections.deque[_Pending] = collections.deque()
        while self._queue:
            item = self._queue.popleft()
            if item.future.done():
                continue
            if item.purpose is purpose and size + len(item.texts) <= self._settings.max_batch:
                batch.append(item)
                size += len(item.texts)
            else:
                kept.append(item)
        self._queue = kept
        if not self._queue:
            self._queued.clear()
        return batch

    async def _send(self, batch: list[_Pending]) -> None:
        try:
            live = [p for p in batch if not p.future.done()]
            if not live:
                return
            deadline = (
                None
                if any(p.deadline is None for p in live)
                else max(p.deadline for p in live if p.deadline is not None)
            )
            texts = [t for p in live for t in p.texts]
            try:
                vectors = await self._embed_checked(texts, live[0].purpose, deadline)
            except _Refused:
                if len(live) == 1:
                    await self._answer_alone(live[0])
                    return
                # One caller's text may be the refused one: each caller on its own.
                for p in live:
                    await self._answer_alone(p)
                return
            except Exception as error:
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(error)
                return
            offset = 0
            for p in live:
                if not p.future.done():
                    p.future.set_result(vectors[offset : offset + len(p.texts)])
                offset += len(p.texts)
        finally:
            self._slots.release()

    async def _answer_alone(self, pending: _Pending) -> None:
        try:
            vectors = await self._embed_isolating(pending.texts, pending.purpose, pending.deadline)
        except Exception as error:
            if not pending.future.done():
                pending.future.set_exception(error)
            return
        if not pending.future.done():
            pending.future.set_result(vectors)

    async def _embed_isolating(
        self, texts: list[str], purpose: Purpose, deadline: float | None, offset: int = 0
    ) -> Vectors:
        """Embeds texts one refused batch at a time, down to the refused text."""
        try:
            return await self._embed_checked(texts, purpose, deadline)
        except _Refused as refused:
            if len(texts) > 1:
                middle = len(texts) // 2
                head = await self._embed_isolating(texts[:middle], purpose, deadline, offset)
                tail = await self._embed_isolating(
                    texts[middle:], purpose, deadline, offset + middle
                )
                return np.vstack([head, tail])
            text = texts[0]
            if refused.too_long and len(text) > MIN_CUT_CHARS:
                shorter = cut(text, max(MIN_CUT_CHARS, min(len(text), self._max_chars) // 2))
                log.info(
                    "embedding endpoint refused a text of %d characters as too long; "
                    "sending its first %d",
                    len(text),
                    len(shorter),
                )
                return await self._embed_isolating([shorter], purpose, deadline, offset)
            raise TextRefusedError(
                offset, self._redact(f"the embedding endpoint refused this text: {refused}")
            ) from None

    @property
    def _max_chars(self) -> int:
        return self._settings.max_input_chars

    # ------------------------------------------------------------------ one request

    async def _embed_checked(
        self, texts: list[str], purpose: Purpose, deadline: float | None
    ) -> Vectors:
        """One request with retries, the circuit counting its outcome."""
        stop = _StopAtDeadline(deadline)
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_Retryable),
            wait=_WaitAtLeastRetryAfter(),
            stop=stop_any(stop_after_attempt(self._settings.attempts), stop),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    vectors = await self._attempt(texts, purpose, deadline)
        except _Retryable as error:
            self._breaker.failed()
            asked = error.retry_after_s
            raise BackendUnavailableError(
                self._redact(f"embedding endpoint {self._settings.public_url}: {error}"),
                retry_after_s=asked if asked is not None else 1.0,
            ) from None
        except _Fatal as error:
            self._breaker.failed()
            raise BackendUnavailableError(
                self._redact(f"embedding endpoint {self._settings.public_url}: {error}")
            ) from None
        except _Refused:
            self._breaker.succeeded()  # the endpoint is up; the text is the problem
            raise
        except _DeadlinePassed as error:
            raise BackendUnavailableError(
                f"embedding endpoint {self._settings.public_url}: {error}"
            ) from None
        self._breaker.succeeded()
        return vectors

    async def _attempt(self, texts: list[str], purpose: Purpose, deadline: float | None) -> Vectors:
        timeout = self._settings.timeout_s
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                raise _DeadlinePassed("no answer before the call's deadline")
        body = request_body(
            self._settings.model,
            texts,
            self._settings.framing(purpose),
            self._settings.dimensions,
            self._max_chars,
            self._base64,
        )
        try:
            async with asyncio.timeout(timeout):
                status, headers, raw = await self._post(body)
        except TimeoutError:
            if timeout < self._settings.timeout_s:  # cut short by the callers' deadline
                raise _DeadlinePassed(
                    f"no answer before the call's deadline ({timeout:.3g} s)"
                ) from None
            raise _Retryable(f"no answer within {timeout:.3g} s") from None
        except httpx.HTTPError as error:  # refused, reset, closed mid-answer
            raise _Retryable(f"cannot reach it ({type(error).__name__})") from None
        if status == 429 or status >= 500:
            raise _Retryable(
                f"HTTP {status}{_detail(raw)}", retry_after_seconds(headers.get("retry-after"))
            )
        if status in (400, 413, 422):
            raise _Refused(status, _detail(raw).removeprefix(": "))
        if not 200 <= status < 300:
            raise _Fatal(f"HTTP {status}{_detail(raw)}")
        try:
            return parse_answer(raw, len(texts), self._dimension)
        except MalformedAnswerError as error:
            raise _Malformed(f"malformed answer: {error}") from None

    async def _post(self, body: bytes) -> tuple[int, httpx.Headers, bytes]:
        request = self._client.build_request(
            "POST", self._settings.url, content=body, headers=self._headers
        )
        response = await self._client.send(request, stream=True)
        try:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise _Malformed(f"answer larger than {MAX_ANSWER_BYTES} bytes")
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)
        finally:
            await response.aclose()

    def _redact(self, text: str) -> str:
        key = self._settings.api_key
        return text.replace(key, "***") if key else text


def _abandon(
    batch: list[_Pending], task: asyncio.Task[None], future: asyncio.Future[Vectors]
) -> None:
    """A caller gave up: when every caller of the request has, so does the request."""
    if future.cancelled() and all(p.future.done() for p in batch):
        task.cancel()


def _detail(raw: bytes) -> str:
    """The start of an error answer, on one line (for messages)."""
    text = " ".join(raw[:512].decode("utf-8", "replace").split())[:200]
    return f": {text}" if text else ""
