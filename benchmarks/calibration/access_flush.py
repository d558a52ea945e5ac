"""Writing back recall statistics: one user per step vs many users per step.

Run: python benchmarks/calibration/access_flush.py --data-dir /tmp/rb-base100k/data \
        --users 400 --rounds 3
Works on a copy of a prepared store (the copy is taken here and deleted after).
Records one recall use for one memory of each of `--users` users (spread over the
tenants), then times `Consolidator.flush_access_stats` writing them, alternating
the step size round by round: 1 user per step (what the flush did before: one read
and one write per user) and `FLUSH_USERS` (the default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

from pymilvus import MilvusClient

from recalld_server.domain.core.ports import Backends
from recalld_server.domain.memories.consolidation import FLUSH_USERS, Consolidator
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.usem import USEM3_DIMENSION, USEM3_MODEL_ID
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.local import (
    LocalAccessTracker,
    LocalGenerations,
    LocalLockManager,
    SystemClock,
)
from recalld_server.storage.memory_conversations import (
    InMemoryConversations,
    InMemoryExtractionQueue,
)
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_records import MilvusHistoryStore, MilvusIdempotencyStore
from recalld_server.storage.milvus_store import MilvusVectorStore
from recalld_server.storage.profile_cache import LocalProfileCache


class _NoEmbedder:
    """The flush never embeds; Backends wants an embedder anyway."""

    model_id = USEM3_MODEL_ID
    dimension = USEM3_DIMENSION

    async def embed(self, texts: object) -> object:
        raise AssertionError("the flush does not embed")


def _pick(uri: str, collection: str, users: int) -> list[tuple[str, str]]:
    client = MilvusClient(uri)
    try:
        rows = client.query(
            collection,
            filter='id > ""',
            output_fields=["id", "tenant_id", "user_id"],
            limit=16_384,
        )
    finally:
        client.close()
    seen: dict[tuple[str, str], str] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        seen.setdefault((row["tenant_id"], row["user_id"]), row["id"])
    return [(tenant, memory_id) for (tenant, _), memory_id in list(seen.items())[:users]]


async def _main(args: argparse.Namespace) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="recalld-flush-"))
    shutil.copy(args.data_dir / "milvus.db", work / "milvus.db")
    uri = str(work / "milvus.db")
    config = MilvusConfig(uri=uri, dimension=USEM3_DIMENSION, model_id=USEM3_MODEL_ID)
    store = await MilvusVectorStore.open(config)
    picked = _pick(uri, store.collection, args.users)
    clock, access, cache = SystemClock(), LocalAccessTracker(), LocalProfileCache()
    backends = Backends(
        store,
        _NoEmbedder(),  # type: ignore[arg-type]
        LocalLockManager(),
        clock,
        MilvusHistoryStore(store.client, newest_row_wins=store.embedded),
        MilvusIdempotencyStore(store.client, newest_row_wins=store.embedded),
        access,
        cache,
        LocalGenerations(),
        JiebaAnalyzer(),
        InMemoryConversations(),
        InMemoryExtractionQueue(),
    )
    profiles = ProfileService(store, cache, clock)
    memories = UserMemories(backends, profiles.invalidate)
    results: dict[str, list[float]] = {"1": [], str(FLUSH_USERS): []}
    try:
        for _ in range(args.rounds):
            for step in (1, FLUSH_USERS):
                for tenant, memory_id in picked:
                    await access.record(tenant, [memory_id], clock.now_ms())
                consolidator = Consolidator(backends, memories, flush_users=step)
                started = time.perf_counter()
                written = await consolidator.flush_access_stats()
                results[str(step)].append(time.perf_counter() - started)
                assert written == len(picked), (written, len(picked))
    finally:
        await store.close()
        shutil.rmtree(work, ignore_errors=True)
    doc: dict[str, object] = {
        "store": str(args.data_dir),
        "users": len(picked),
        "tenants": len({t for t, _ in picked}),
        "seconds": results,
    }
    print(json.dumps(doc, indent=2))
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--users", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    doc = asyncio.run(_main(args))
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
