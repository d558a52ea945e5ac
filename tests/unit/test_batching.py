"""Micro-batching logic, with a deterministic encode function in place of the model
(the model itself is exercised by every e2e test)."""

import asyncio

import numpy as np
import pytest

from recalld_server.embedding.batching import MicroBatchingEmbedder


async def test_concurrent_calls_share_batches_and_get_their_own_rows() -> None:
    batches: list[int] = []

    def encode(texts: list[str]) -> np.ndarray:
        batches.append(len(texts))
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    embedder = MicroBatchingEmbedder(encode, "fake", 2, max_batch=64)
    texts = ["a" * i for i in range(1, 41)]
    results = await asyncio.gather(*(embedder.embed([t]) for t in texts))
    assert [int(r[0][0]) for r in results] == list(range(1, 41))
    assert sum(batches) == 40 and len(batches) < 40
    await embedder.close()


async def test_encode_failure_reaches_every_waiter_and_worker_survives() -> None:
    calls = 0

    def encode(texts: list[str]) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("model exploded")
        return np.ones((len(texts), 2), dtype=np.float32)

    embedder = MicroBatchingEmbedder(encode, "fake", 2)
    with pytest.raises(RuntimeError, match="exploded"):
        await embedder.embed(["x"])
    assert (await embedder.embed(["y", "z"])).shape == (2, 2)
    await embedder.close()
