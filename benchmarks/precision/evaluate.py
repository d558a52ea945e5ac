"""Recall precision on the labelled precision set (issue 13; recalld_server/calibration/data).

Three servers on the in-memory backend with the real model (the same write and
recall rules as every backend), one per retrieval mode (`--recall-mode hybrid,
dense, keyword`), load the same users through Write and answer the same
questions through Recall, over loopback gRPC. Reported per category and split:
hit@1, hit@3, MRR and nDCG@5 on answerable questions; abstention precision and
recall (a question with no correct answer should get nothing back); the
false-inclusion rate (returned memories that answer nothing).

    python -m benchmarks.precision.evaluate --split test --name precision-<rev>

Calibrate on `--split train`; report on `--split test`, and on `--split fresh`
(questions written later, never used to choose anything). With `--judge` a fourth
server, hybrid with the relevance judge (`--llm-rerank`), answers too: `--judge
labels` is a judge that answers from the labels (`label_judge.py`: the ceiling
of the stage), `--judge http://host:port/v1 --judge-model NAME` a real model.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import math
import os
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import grpc

from benchmarks.precision.label_judge import LabelJudge
from recalld.v1 import memory_pb2, memory_service_pb2, memory_service_pb2_grpc
from recalld_server.calibration.dataset import PRESENT, day_ms, load_precision
from recalld_server.config import ServerConfig
from recalld_server.embedding.usem import load_usem3
from recalld_server.wiring.server import start_server

MODES = ("hybrid", "dense", "keyword")
JUDGED = "judged"
"""Hybrid with the relevance judge (`--judge`)."""
TENANT = "precision"
TOP_K = 5


FRESH = Path(__file__).parent / "data" / "fresh_queries.json"
"""The `fresh` split: 160 questions on the same memories, written by someone who had
not seen the rules, and never used to choose them (`data/check_fresh.py`)."""


def load_data() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """The users' memories and the labelled questions: train, test and fresh."""
    users, queries = load_precision()
    fresh = json.loads(FRESH.read_text(encoding="utf-8"))["queries"]
    return users, [*queries, *fresh]


def relevant_contents() -> dict[str, set[str]]:
    """Each labelled question's text -> the contents of its relevant memories."""
    users, queries = load_data()
    content = {m["key"]: m["content"] for memories in users.values() for m in memories}
    out: dict[str, set[str]] = {}
    for query in queries:
        out.setdefault(query["query"], set()).update(content[k] for k in query["relevant"])
    return out


def _shift() -> datetime.timedelta:
    """How far the server's clock is past the data's present.

    Recall weighs memories by age against the server's clock, so every date is moved
    by this when written: the memories are as old at any run as the set says they are.
    """
    return datetime.datetime.now(datetime.UTC) - PRESENT


def _proto(memory: dict[str, Any], shift: datetime.timedelta) -> memory_pb2.Memory:
    out = memory_pb2.Memory(
        content=memory["content"],
        type=memory_pb2.MemoryType.Value(f"MEMORY_TYPE_{memory['type']}"),
        topic_key=memory.get("topic_key", ""),
    )
    if memory.get("occurred_at"):
        ms = day_ms(memory["occurred_at"], shift)
        out.occurred_at.seconds = ms // 1000
    return out


async def _load(
    stub: memory_service_pb2_grpc.MemoryServiceAsyncStub, users: dict[str, list[dict[str, Any]]]
) -> dict[str, str]:
    """Writes every user's memories in order; memory key -> stored id."""
    metadata = (("x-recalld-tenant", TENANT),)
    ids: dict[str, str] = {}
    shift = _shift()
    for user, memories in users.items():
        for start in range(0, len(memories), 100):
            batch = memories[start : start + 100]
            response = await stub.Write(
                memory_service_pb2.WriteRequest(
                    user_id=user, memories=[_proto(m, shift) for m in batch]
                ),
                metadata=metadata,
                timeout=120,
            )
            for memory, result in zip(batch, response.results, strict=True):
                ids[memory["key"]] = result.id
    return ids


async def _ask(
    stub: memory_service_pb2_grpc.MemoryServiceAsyncStub, queries: Sequence[dict[str, Any]]
) -> list[list[str]]:
    metadata = (("x-recalld-tenant", TENANT),)
    out = []
    for query in queries:
        response = await stub.Recall(
            memory_service_pb2.RecallRequest(
                user_id=query["user"], query=query["query"], top_k=TOP_K, skip_profile=True
            ),
            metadata=metadata,
            timeout=30,
        )
        out.append([item.memory.id for item in response.items])
    return out


@dataclasses.dataclass(frozen=True)
class Judge:
    """The relevance judge of the "judged" mode: an OpenAI-compatible endpoint."""

    url: str
    model: str
    api_key: str = ""


async def _run_mode(
    mode: str,
    users: dict[str, list[dict[str, Any]]],
    queries: Sequence[dict[str, Any]],
    embedder: Any,
    judge: Judge | None = None,
    data_dir: Path | None = None,
) -> tuple[dict[str, str], list[list[str]]]:
    config = ServerConfig(
        port=0,
        storage="memory",
        # Only the model's calibration is read from it: the storage is in memory.
        data_dir=data_dir or ServerConfig().data_dir,
        recall_mode="hybrid" if mode == JUDGED else mode,
        consolidate_interval_s=0,
        access_flush_interval_s=0,
    )
    if mode == JUDGED:
        assert judge is not None
        config = dataclasses.replace(
            config,
            llm_base_url=judge.url,
            llm_model=judge.model,
            llm_api_key=judge.api_key,
            llm_rerank=True,
            llm_rerank_timeout_s=60,  # a real model on a busy machine: measure, don't race
        )
    running = await start_server(config, embedder=embedder)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            ids = await _load(stub, users)
            return ids, await _ask(stub, queries)
    finally:
        await running.stop(grace_s=1)


def ndcg_at(returned: Sequence[str], relevant: set[str], k: int = 5) -> float:
    """Binary-gain nDCG@k."""
    gains = sum(1.0 / math.log2(i + 2) for i, r in enumerate(returned[:k]) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return gains / ideal if ideal else 0.0


def scores(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """The metrics over some questions (each row: returned, relevant, outdated)."""
    rows = list(rows)
    answerable = [r for r in rows if r["relevant"]]
    unanswerable = [r for r in rows if not r["relevant"]]
    out: dict[str, float] = {"n": len(rows)}
    if answerable:
        ranks = [
            next((i + 1 for i, m in enumerate(r["returned"]) if m in r["relevant"]), None)
            for r in answerable
        ]
        out["hit@1"] = sum(rank == 1 for rank in ranks) / len(ranks)
        out["hit@3"] = sum(rank is not None and rank <= 3 for rank in ranks) / len(ranks)
        out["mrr"] = statistics.fmean(1.0 / rank if rank else 0.0 for rank in ranks)
        out["ndcg@5"] = statistics.fmean(ndcg_at(r["returned"], r["relevant"]) for r in answerable)
    abstained = [r for r in rows if not r["returned"]]
    if abstained:
        out["abstention_precision"] = sum(not r["relevant"] for r in abstained) / len(abstained)
    if unanswerable:
        out["abstention_recall"] = sum(not r["returned"] for r in unanswerable) / len(unanswerable)
    returned = sum(len(r["returned"]) for r in rows)
    unrelated = sum(
        sum(m not in r["relevant"] and m not in r["outdated"] for m in r["returned"]) for r in rows
    )
    out["false_inclusion"] = unrelated / returned if returned else 0.0
    return out


async def evaluate(
    split: str,
    judge: Judge | None = None,
    embedder: Any = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Runs every mode (and "judged" with a judge) on the split's questions and scores them.

    `embedder` is the model to measure (default: the bundled default, loaded and
    closed here); its calibration comes from `data_dir`, else the shipped one.
    """
    users, all_queries = load_data()
    queries = [q for q in all_queries if split == "all" or q["split"] == split]
    owned = embedder is None
    if embedder is None:
        embedder = load_usem3()
    per_mode: dict[str, list[dict[str, Any]]] = {}
    modes = (*MODES, JUDGED) if judge is not None else MODES
    try:
        for mode in modes:
            ids, answers = await _run_mode(mode, users, queries, embedder, judge, data_dir)
            per_mode[mode] = [
                {
                    "id": q["id"],
                    "category": q["category"],
                    "returned": returned,
                    "relevant": {ids[k] for k in q["relevant"]},
                    "outdated": {ids[k] for k in q.get("outdated", [])},
                }
                for q, returned in zip(queries, answers, strict=True)
            ]
    finally:
        if owned:
            await embedder.close()
    categories = sorted({q["category"] for q in queries})
    table = {
        mode: {
            "all": scores(rows),
            **{c: scores(r for r in rows if r["category"] == c) for c in categories},
        }
        for mode, rows in per_mode.items()
    }
    misses = [
        {
            "id": q["id"],
            "category": q["category"],
            "query": q["query"],
            **{
                mode: _rank(per_mode[mode][i]["returned"], per_mode[mode][i]["relevant"])
                for mode in modes
            },
        }
        for i, q in enumerate(queries)
        if _rank(per_mode["hybrid"][i]["returned"], per_mode["hybrid"][i]["relevant"]) != 1
    ]
    return {
        "revision": revision(),
        "model": embedder.model_id,
        "split": split,
        "questions": len(queries),
        "memories": sum(len(m) for m in users.values()),
        "top_k": TOP_K,
        "scores": table,
        "hybrid_misses": misses,
    }


def _rank(returned: Sequence[str], relevant: set[str]) -> int | str:
    """Rank of the first correct answer; for unanswerable questions "abstained"/"answered"."""
    if not relevant:
        return "abstained" if not returned else "answered"
    return next((i + 1 for i, m in enumerate(returned) if m in relevant), 0)


def revision() -> str:
    """The checkout's short commit, to name results by ("unknown" outside git)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


METRICS = (
    "hit@1",
    "hit@3",
    "mrr",
    "ndcg@5",
    "abstention_precision",
    "abstention_recall",
    "false_inclusion",
)


def markdown(doc: dict[str, Any]) -> str:
    """One table per mode: categories as rows, metrics as columns."""
    lines = [
        f"# Recall precision, split {doc['split']} ({doc['questions']} questions, "
        f"{doc['memories']} memories, top_k {doc['top_k']}, revision {doc['revision']})",
        "",
    ]
    for mode in doc["scores"]:
        lines += [f"## {mode}", "", "| category | n | " + " | ".join(METRICS) + " |"]
        lines.append("| --- " * (len(METRICS) + 2) + "|")
        for category, values in doc["scores"][mode].items():
            cells = " | ".join(f"{values[m]:.2f}" if m in values else "–" for m in METRICS)
            lines.append(f"| {category} | {int(values['n'])} | {cells} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.precision.evaluate")
    parser.add_argument("--split", choices=["train", "test", "fresh", "all"], default="test")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--name", default="")
    parser.add_argument(
        "--judge",
        default="",
        help='also run hybrid with the relevance judge: "labels" (answers from the labels: '
        "the ceiling) or an OpenAI-compatible API root (.../v1, key from RECALLD_LLM_API_KEY)",
    )
    parser.add_argument("--judge-model", default="", help="the model of a --judge URL")
    args = parser.parse_args()
    labels = None
    judge = None
    if args.judge == "labels":
        labels = LabelJudge(relevant_contents())
        labels.start()
        judge = Judge(labels.url, "labels")
    elif args.judge:
        judge = Judge(args.judge, args.judge_model, os.environ.get("RECALLD_LLM_API_KEY", ""))
    try:
        doc = asyncio.run(evaluate(args.split, judge))
    finally:
        if labels is not None:
            labels.stop()
    if labels is not None:
        doc["judge"] = {"kind": "labels", "unknown_questions": labels.unknown_questions}
    elif judge is not None:
        doc["judge"] = {"kind": "model", "url": judge.url, "model": judge.model}
    suffix = "-judged" if judge is not None else ""
    name = args.name or f"precision-{args.split}-{doc['revision']}{suffix}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(
        json.dumps(doc, indent=2, ensure_ascii=False, default=sorted), encoding="utf-8"
    )
    (args.out / f"{name}.md").write_text(markdown(doc), encoding="utf-8")
    print(markdown(doc))


if __name__ == "__main__":
    main()
