"""Loads a generated dataset into a running recalld through Write (batched per user)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from typing import Any

import grpc

from benchmarks.recalld_bench import datasets
from benchmarks.recalld_bench.loadgen import to_proto
from recalld.v1 import memory_service_pb2, memory_service_pb2_grpc


def _batches(spec: datasets.DatasetSpec, size: int) -> Iterator[list[datasets.GenMemory]]:
    for _, group in itertools.groupby(datasets.generate(spec), key=lambda m: (m.tenant, m.user)):
        items = list(group)
        for i in range(0, len(items), size):
            yield items[i : i + size]


async def load(
    address: str,
    spec: datasets.DatasetSpec,
    concurrency: int = 4,
    batch: int = 100,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    """Writes every memory of the dataset; returns outcomes, errors and throughput."""
    outcomes: dict[str, int] = {}
    errors: dict[str, int] = {}
    batches = _batches(spec, batch)
    started = time.perf_counter()
    async with grpc.aio.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)

        async def worker() -> None:
            for items in batches:  # a shared iterator: each batch is taken once
                request = memory_service_pb2.WriteRequest(
                    user_id=items[0].user, memories=[to_proto(m) for m in items]
                )
                try:
                    response = await stub.Write(
                        request,
                        timeout=timeout_s,
                        metadata=(("x-recalld-tenant", items[0].tenant),),
                    )
                except grpc.aio.AioRpcError as error:
                    errors[error.code().name] = errors.get(error.code().name, 0) + len(items)
                    continue
                for result in response.results:
                    name = memory_service_pb2.WriteOutcome.Name(result.outcome)
                    outcomes[name] = outcomes.get(name, 0) + 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    written = sum(outcomes.values())
    return {
        "dataset": spec.name,
        "written": written,
        "outcomes": outcomes,
        "errors": errors,
        "seconds": elapsed,
        "memories_per_s": written / elapsed if elapsed else 0.0,
        "concurrency": concurrency,
        "batch": batch,
    }
