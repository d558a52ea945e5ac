"""Micro-batching: concurrent embed calls share one model call.

A model call costs little more for a batch than for one sentence, and many
threads embedding at once mostly fight over the GIL. So each worker (one thread,
in front of one model process or the model itself) takes every request queued
while it was busy and turns them into one batch. With several model processes,
each has its worker: batches run side by side, one per process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from recalld_server.domain.core.ports import Vectors

EncodeFn = Callable[[list[str]], Vectors]


@dataclasses.dataclass(slots=True)
class _Pending:
    texts: list[str]
    future: asyncio.Future[Vectors]


class MicroBatchingEmbedder:
    """Embedder that batches concurrent requests for synchronous encode functions.

    `encode` is one function, or one per model process: each gets a worker of its
    own, and a request goes to whichever worker is free first.
    """

    def __init__(
        self,
        encode: EncodeFn | Sequence[EncodeFn],
        model_id: str,
        dimension: int,
        max_batch: int = 64,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._encoders = [encode] if callable(encode) else list(encode)
        if not self._encoders:
            raise ValueError("MicroBatchingEmbedder needs at least one encode function")
        self._on_close = on_close
        self._model_id = model_id
        self._dimension = dimension
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending] | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._executors = [
            concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"recalld-embed-{i}"
            )
            for i in range(len(self._encoders))
        ]

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The wrapped model's vector length."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embeds texts, possibly together with other callers' texts."""
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        if self._queue is None or all(worker.done() for worker in self._workers):
            self._queue = asyncio.Queue()
            self._workers = [
                asyncio.create_task(self._run(self._queue, encode, executor), name="embed-batcher")
                for encode, executor in zip(self._encoders, self._executors, strict=True)
            ]
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(list(texts), future))
        return await future

    async def _run(
        self,
        queue: asyncio.Queue[_Pending],
        encode: EncodeFn,
        executor: concurrent.futures.ThreadPoolExecutor,
    ) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await queue.get()]
            size = len(batch[0].texts)
            while size < self._max_batch and not queue.empty():
                item = queue.get_nowait()
                batch.append(item)
                size += len(item.texts)
            live = [p for p in batch if not p.future.done()]  # skip cancelled callers
            if not live:
                continue
            texts = [t for p in live for t in p.texts]
            try:
                vectors = await loop.run_in_executor(executor, encode, texts)
            except Exception as error:
                for pending in live:
                    if not pending.future.done():
                        pending.future.set_exception(error)
                continue
            offset = 0
            for pending in live:
                n = len(pending.texts)
                if not pending.future.done():
                    pending.future.set_result(vectors[offset : offset + n])
                offset += n

    async def embed_query(self, texts: Sequence[str]) -> Vectors:
        """Embeds queries: the bundled models are symmetric, so as `embed`."""
        return await self.embed(texts)

    def encode_blocking(self, texts: list[str]) -> Vectors:
        """Embeds on the caller's thread, bypassing the batcher (offline scripts only)."""
        return self._encoders[0](texts)

    async def close(self) -> None:
        """Stops the workers and their threads (and the model's processes, via on_close)."""
        for worker in self._workers:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)
        if self._on_close is not None:
            self._on_close()
