"""Micro-batching: concurrent embed calls share one model call on one worker thread.

The default model's tokenizer is pure Python, so many threads embedding at once
mostly fight over the GIL. One worker thread that takes every request queued
while it was busy turns N concurrent single-sentence calls into one batch.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from recalld_server.domain.ports import Vectors

EncodeFn = Callable[[list[str]], Vectors]


@dataclasses.dataclass(slots=True)
class _Pending:
    texts: list[str]
    future: asyncio.Future[Vectors]


class MicroBatchingEmbedder:
    """Embedder that batches concurrent requests for a synchronous encode function."""

    def __init__(
        self,
        encode: EncodeFn,
        model_id: str,
        dimension: int,
        max_batch: int = 64,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._encode = encode
        self._on_close = on_close
        self._model_id = model_id
        self._dimension = dimension
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="recalld-embed"
        )

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
        if self._queue is None or self._worker is None or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._run(self._queue), name="embed-batcher")
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(list(texts), future))
        return await future

    async def _run(self, queue: asyncio.Queue[_Pending]) -> None:
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
                vectors = await loop.run_in_executor(self._executor, self._encode, texts)
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

    def encode_blocking(self, texts: list[str]) -> Vectors:
        """Embeds on the caller's thread, bypassing the batcher (offline scripts only)."""
        return self._encode(texts)

    async def close(self) -> None:
        """Stops the worker and its thread."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._on_close is not None:
            self._on_close()
