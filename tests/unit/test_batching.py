"""Micro-batching logic, with a deterministic encode function in place of the model
(the model itself is exercised by every e2e test)."""

import asyncio
import threading
from collections.abc import Callable

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


async def test_several_encoders_take_batches_side_by_side() -> None:
    # Two workers that each block until both hold a batch: this only finishes if
    # the batches really run at the same time, one per encoder.
    both_busy = threading.Barrier(2, timeout=5)
    used: list[str] = []

    def encoder(name: str) -> Callable[[list[str]], np.ndarray]:
        def encode(texts: list[str]) -> np.ndarray:
            used.append(name)
            both_busy.wait()
            return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

        return encode

    embedder = MicroBatchingEmbedder([encoder("a"), encoder("b")], "fake", 2, max_batch=1)
    results = await asyncio.gather(embedder.embed(["xx"]), embedder.embed(["yyy"]))
    assert [r.tolist() for r in results] == [[[2.0, 1.0]], [[3.0, 1.0]]]
    assert sorted(used) == ["a", "b"]
    await embedder.close()


async def test_a_failing_encoder_fails_only_its_own_batch() -> None:
    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("this process is gone")

    def working(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2), dtype=np.float32)

    embedder = MicroBatchingEmbedder([broken, working], "fake", 2, max_batch=1)
    outcomes = await asyncio.gather(
        *(embedder.embed([str(i)]) for i in range(20)), return_exceptions=True
    )
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert failed and all("gone" in str(f) for f in failed)
    assert len(failed) < 20
    await embedder.close()


def test_an_embedder_needs_an_encoder() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MicroBatchingEmbedder([], "fake", 2)
