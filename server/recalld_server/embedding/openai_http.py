"""An embedding model behind an OpenAI-compatible `/v1/embeddings` endpoint.

Production teams run their embeddings as a service (OpenAI, Azure OpenAI, vLLM,
Hugging Face TEI, Ollama, llama.cpp's server, LiteLLM, Infinity); all of them
speak this API. The embedder makes that service safe to depend on:

* **Batching.** Concurrent callers' texts share requests: a request leaves as
  soon as a slot of `max_in_flight` is free, carrying every text queued
  meanwhile, up to `max_batch`. While another request is out, it first waits up
  to `linger_s` for company (or until it is full): a fast endpoint frees its
  slots before a second text arrives, so without the wait every single write
  paid a whole request of the event loop's time (~0.5 ms) for one text. Idle,
  nobody waits.
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
import functools
import logging
import time
from collections.abc import Sequence

import httpx
import numpy as np
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
)

from recalld_server import deadlines
from recalld_server.breaker import CircuitBreaker
from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.domain.core.ports import Vectors
from recalld_server.embedding.endpoint_failures import (
    DeadlinePassed,
    Fatal,
    Malformed,
    Refused,
    Retryable,
    StopAtDeadline,
    WaitAtLeastRetryAfter,
    answer_detail,
    retry_after_seconds,
)
from recalld_server.embedding.endpoint_settings import (
    MIN_CUT_CHARS,
    EndpointProbeError,
    EndpointSettings,
    model_id_for,
)
from recalld_server.embedding.openai_wire import (
    MAX_ANSWER_BYTES,
    MalformedAnswerError,
    Purpose,
    cut,
    parse_answer,
    request_body,
)

log = logging.getLogger(__name__)

PROBE_TEXT = "recalld probe: what does this endpoint answer?"


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
        self._queued_texts = 0
        self._lingering: asyncio.Future[None] | None = None
        """Resolved when the batch being held fills (or the linger ends)."""
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
                except (Malformed, Refused) as error:
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
                    if isinstance(error, Refused):
                        raise self._probe_error(f"refused the probe: {error}") from None
                    raise self._probe_error(f"answered malformed vectors: {error}") from None
                except Retryable as error:
                    if time.monotonic() >= give_up:
                        raise self._probe_error(f"unreachable: {error}") from None
                    log.warning(
                        "embedding endpoint %s: %s; retrying",
                        settings.public_url,
                        self._redact(str(error)),
                    )
                    await asyncio.sleep(min(1.0, max(0.0, give_up - time.monotonic())))
                except (Fatal, DeadlinePassed) as error:
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
        self._queued_texts += len(texts)
        self._queued.set()
        if self._lingering is not None and self._queued_texts >= size:
            _resolve(self._lingering)
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
            if self._sending and self._queued_texts < self._settings.max_batch:
                await self._linger()
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

    async def _linger(self) -> None:
        """Holds the next request for `linger_s`, or until `max_batch` texts wait."""
        linger = self._settings.linger_s
        if linger <= 0:
            return
        loop = asyncio.get_running_loop()
        self._lingering = waiter = loop.create_future()
        timer = loop.call_later(linger, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._lingering = None

    def _take(self) -> list[_Pending]:
        """The next batch: queued texts of the oldest caller's purpose, up to max_batch."""
        while self._queue and self._queue[0].future.done():
            self._queue.popleft()  # a caller that gave up
        if not self._queue:
            self._queued_texts = 0
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
        self._queued_texts = sum(len(item.texts) for item in kept)
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
            except Refused:
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
        except Refused as refused:
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
        stop = StopAtDeadline(deadline)
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(Retryable),
            wait=WaitAtLeastRetryAfter(),
            stop=stop_any(stop_after_attempt(self._settings.attempts), stop),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    vectors = await self._attempt(texts, purpose, deadline)
        except Retryable as error:
            self._breaker.failed()
            asked = error.retry_after_s
            raise BackendUnavailableError(
                self._redact(f"embedding endpoint {self._settings.public_url}: {error}"),
                retry_after_s=asked if asked is not None else 1.0,
            ) from None
        except Fatal as error:
            self._breaker.failed()
            raise BackendUnavailableError(
                self._redact(f"embedding endpoint {self._settings.public_url}: {error}")
            ) from None
        except Refused:
            self._breaker.succeeded()  # the endpoint is up; the text is the problem
            raise
        except DeadlinePassed as error:
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
                raise DeadlinePassed("no answer before the call's deadline")
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
                raise DeadlinePassed(
                    f"no answer before the call's deadline ({timeout:.3g} s)"
                ) from None
            raise Retryable(f"no answer within {timeout:.3g} s") from None
        except httpx.HTTPError as error:  # refused, reset, closed mid-answer
            raise Retryable(f"cannot reach it ({type(error).__name__})") from None
        if status == 429 or status >= 500:
            raise Retryable(
                f"HTTP {status}{answer_detail(raw)}",
                retry_after_seconds(headers.get("retry-after")),
            )
        if status in (400, 413, 422):
            raise Refused(status, answer_detail(raw).removeprefix(": "))
        if not 200 <= status < 300:
            raise Fatal(f"HTTP {status}{answer_detail(raw)}")
        try:
            return parse_answer(raw, len(texts), self._dimension)
        except MalformedAnswerError as error:
            raise Malformed(f"malformed answer: {error}") from None

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
                    raise Malformed(f"answer larger than {MAX_ANSWER_BYTES} bytes")
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


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
