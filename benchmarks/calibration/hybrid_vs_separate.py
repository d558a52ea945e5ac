"""Separate dense + BM25 searches fused in the server vs Milvus `hybrid_search` (RRF).

Run: python benchmarks/calibration/hybrid_vs_separate.py [--rows 10000] [--rounds 200]
Builds a Milvus Lite 2.5.1 collection with recalld's own schema (the real
MilvusVectorStore), loads seeded bilingual rows for 100 users, then times, for the
same queries and filters, interleaved: (a) the two searches issued concurrently
(what the recall pipeline does), (b) one hybrid_search with an RRF ranker.
Prints p50/p90 per variant and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time

import numpy as np
from pymilvus import AnnSearchRequest, RRFRanker

from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import Memory, MemoryFilter, MemoryType, Status
from recalld_server.storage.milvus_collection import SCALAR_FIELDS, MilvusConfig
from recalld_server.storage.milvus_filters import build_filter
from recalld_server.storage.milvus_store import MilvusVectorStore

WORDS_EN = [
    "coffee",
    "tea",
    "database",
    "meeting",
    "order",
    "trip",
    "doctor",
    "budget",
    "project",
    "daughter",
    "laptop",
    "allergy",
    "train",
    "hotel",
    "concert",
]
WORDS_ZH = [
    "咖啡",
    "茶",
    "数据库",
    "会议",
    "订单",
    "旅行",
    "医生",
    "预算",
    "项目",
    "女儿",
    "电脑",
    "过敏",
    "火车",
    "酒店",
    "音乐会",
]


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.5:
        words = " and ".join(rng.sample(WORDS_EN, 3))
        return f"The user mentioned {words} #{rng.randint(1, 99999)}"
    return "用户提到了" + "和".join(rng.sample(WORDS_ZH, 3)) + f" 编号{rng.randint(1, 99999)}"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    path = tempfile.mkdtemp() + "/milvus.db"
    store = await MilvusVectorStore.open(MilvusConfig(uri=path, dimension=512, model_id="bench"))
    vectors = np.random.default_rng(7).standard_normal((args.rows, 512)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = [
        Memory(
            id=new_id(1_700_000_000_000 + i),
            tenant_id="t",
            user_id=f"u{i % 100}",
            content=sentence(rng),
            type=MemoryType.FACT,
            created_at=1,
            occurred_at=1,
        )
        for i in range(args.rows)
    ]
    for start in range(0, args.rows, 1000):
        await store.insert(memories[start : start + 1000], vectors[start : start + 1000])
    client, collection = store.client, store.collection
    timings: dict[str, list[float]] = {"separate": [], "hybrid_search": []}
    for round_ in range(args.rounds):
        user = f"u{round_ % 100}"
        memory_filter = MemoryFilter(
            "t", user, statuses=frozenset({Status.ACTIVE}), unexpired_at=2_000_000_000_000
        )
        query_vector = vectors[rng.randrange(args.rows)]
        text = rng.choice(WORDS_EN + WORDS_ZH)
        for variant in (
            ["separate", "hybrid_search"] if round_ % 2 else ["hybrid_search", "separate"]
        ):
            started = time.perf_counter()
            if variant == "separate":
                await asyncio.gather(
                    store.search(memory_filter, query_vector, 40),
                    store.keyword_search(memory_filter, text, 40),
                )
            else:
                expression = build_filter(memory_filter)
                await client.hybrid_search(
                    collection,
                    [
                        AnnSearchRequest(
                            [query_vector.tolist()],
                            "embedding",
                            {"metric_type": "COSINE"},
                            40,
                            expr=expression,
                        ),
                        AnnSearchRequest(
                            [text], "sparse", {"metric_type": "BM25"}, 40, expr=expression
                        ),
                    ],
                    RRFRanker(60),
                    limit=40,
                    output_fields=SCALAR_FIELDS,
                )
            if round_ >= 10:  # warm-up excluded
                timings[variant].append((time.perf_counter() - started) * 1000)
    for variant, values in timings.items():
        q = statistics.quantiles(values, n=10)
        print(f"{variant:14} p50 {statistics.median(values):6.2f} ms  p90 {q[8]:6.2f} ms")
    ratio = statistics.median(timings["hybrid_search"]) / statistics.median(timings["separate"])
    print(f"hybrid_search / separate (p50): {ratio:.2f}")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
