"""What each kind of write costs on Milvus Lite 2.5.1 as the collection grows.

    python -m benchmarks.storage_choice.lite_write_costs --sizes 5000,30000 \
        --out benchmarks/storage_choice/results/lite-write-costs-<rev>.json

recalld's own collections (`MilvusVectorStore`, `MilvusHistoryStore`, 384-d vectors),
loaded to each size, then each operation repeated `--repeats` times on rows of
`--rows` (new ids, or rows already stored): wall time per call and the CPU the Lite
engine's process spent per call (read from /proc: Lite is a child process). The
finding behind `milvus_records._overwrite`: an insert costs the same at any size,
while an upsert, and a delete of rows that exist, rewrite the collection (their
cost grows with it) on the memories collection; history rows are light.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import HistoryEntry, Memory, MemoryType, Operation
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_records import MilvusHistoryStore, ensure_record_collections
from recalld_server.storage.milvus_store import MilvusVectorStore

DIMENSION = 384


def _children_cpu_s() -> float:
    """CPU seconds of this process's children (the Lite engine)."""
    total, me = 0.0, os.getpid()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _memory(i: int, tenant: str) -> Memory:
    return Memory(
        id=new_id(int(time.time() * 1000)),
        tenant_id=tenant,
        user_id=f"u{i % 10}",
        content=f"memory {i}: the user mentioned something ordinary about their week",
        type=MemoryType.FACT,
    )


async def _measure(size: int, rows: int, repeats: int) -> dict[str, dict[str, float]]:
    directory = tempfile.mkdtemp(prefix="lite-costs-")
    config = MilvusConfig(uri=f"{directory}/milvus.db", dimension=DIMENSION, model_id="costs")
    store = await MilvusVectorStore.open(config)
    await asyncio.to_thread(ensure_record_collections, config)
    upserting = MilvusHistoryStore(store.client, newest_row_wins=False)
    inserting = MilvusHistoryStore(store.client, newest_row_wins=True)
    rng = np.random.default_rng(0)

    def vectors(n: int) -> np.ndarray:
        v = rng.standard_normal((n, DIMENSION)).astype(np.float32)
        unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
        return unit

    stored: list[Memory] = []
    for start in range(0, size, 1000):
        batch = [_memory(i, f"t{i % 100}") for i in range(start, min(size, start + 1000))]
        await store.insert(batch, vectors(len(batch)))
        await inserting.append([HistoryEntry(m, Operation.WRITE, (), 0) for m in batch])
        stored += batch

    def fresh() -> list[Memory]:
        return [_memory(i, "t-costs") for i in range(rows)]

    def old() -> list[Memory]:
        return [stored.pop() for _ in range(rows)]

    operations: dict[str, Callable[[], Awaitable[None]]] = {
        "insert": lambda: store.insert(fresh(), vectors(rows)),
        "upsert new ids": lambda: store.replace(fresh(), vectors(rows)),
        "upsert stored rows": lambda: store.replace(old(), vectors(rows)),
        "delete stored rows (one call)": lambda: _delete_one_tenant(store, stored, rows),
        "history insert": lambda: inserting.append(
            [HistoryEntry(m, Operation.WRITE, (), 0) for m in fresh()]
        ),
        "history upsert": lambda: upserting.append(
            [HistoryEntry(m, Operation.WRITE, (), 0) for m in fresh()]
        ),
    }
    out: dict[str, dict[str, float]] = {}
    for name, operation in operations.items():
        cpu, started = _children_cpu_s(), time.perf_counter()
        for _ in range(repeats):
            await operation()
        out[name] = {
            "wall_ms": round((time.perf_counter() - started) / repeats * 1000, 2),
            "lite_cpu_ms": round((_children_cpu_s() - cpu) / repeats * 1000, 2),
        }
    await store.close()
    return out


async def _delete_one_tenant(store: MilvusVectorStore, stored: list[Memory], rows: int) -> None:
    """Deletes `rows` stored memories of one tenant in one call (taken from `stored`)."""
    tenant = stored[-1].tenant_id
    picked = [m for m in reversed(stored) if m.tenant_id == tenant][:rows]
    for memory in picked:
        stored.remove(memory)
    await store.delete(tenant, [m.id for m in picked])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,30000")
    parser.add_argument("--rows", type=int, default=10, help="rows per call")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "rows_per_call": args.rows,
        "repeats": args.repeats,
        "sizes": {},
    }
    print(f"| collection rows | operation ({args.rows} rows a call) | wall ms | Lite CPU ms |")
    print("| ---: | --- | ---: | ---: |")
    for size in (int(s) for s in args.sizes.split(",")):
        measured = asyncio.run(_measure(size, args.rows, args.repeats))
        results["sizes"][str(size)] = measured
        for name, figures in measured.items():
            print(f"| {size:,} | {name} | {figures['wall_ms']} | {figures['lite_cpu_ms']} |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
