"""Milvus Lite bulk-insert probe: recalld's memories schema, timed insert of synthetic rows.

    python -m benchmarks.storage_choice.lite_insert_costs --name b250 --batch 250

One variant a run (the flags change one thing: batch, writers, analyzer, BM25, indexes,
fields dropped ...); the study of 2026-12-07 ran ~45 of them (benchmarks/README, "Bulk
load with vectors"; `results/lite-insert-costs-3d5ec18.jsonl`).

Measures wall time, CPU of the milvus-lite child process (utime+stime from /proc),
CPU of this Python process, per-thread CPU of the Lite process, per variant.
Prints one JSON line (prefixed RESULT) at the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from typing import Any

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient

from recalld_server.storage.keyword_analyzer import CONTENT_ANALYZER

TICK = os.sysconf("SC_CLK_TCK")
COLL = "memories_probe"

EN_WORDS = [
    "the",
    "user",
    "prefers",
    "dark",
    "mode",
    "in",
    "the",
    "editor",
    "and",
    "asked",
    "to",
    "keep",
    "meeting",
    "notes",
    "short",
    "deploy",
    "pipeline",
    "failed",
    "on",
    "staging",
    "because",
    "the",
    "database",
    "migration",
    "v2.3.1",
    "timed",
    "out",
    "remember",
    "that",
    "Alice",
    "is",
    "allergic",
    "to",
    "peanuts",
    "and",
    "likes",
    "hiking",
    "on",
    "weekends",
    "near",
    "Seattle",
    "project",
    "Phoenix",
    "deadline",
    "moved",
    "to",
    "March",
    "14",
    "after",
    "the",
    "budget",
    "review",
    "with",
    "finance",
    "team",
    "kubernetes",
    "cluster",
    "autoscaler",
    "config",
    "uses",
    "node",
    "pools",
    "with",
    "spot",
    "instances",
    "for",
    "batch",
    "jobs",
    "customer",
    "reported",
    "latency",
    "spikes",
    "at",
    "09:30",
    "UTC",
    "when",
    "cache",
    "hit",
    "ratio",
    "dropped",
    "below",
    "80%",
    "prefers",
    "python",
    "over",
    "java",
    "for",
    "scripting",
    "and",
    "uses",
    "vim",
    "keybindings",
    "everywhere",
]
ZH_TEXT = (
    "用户喜欢在周末去爬山并且对花生过敏请记住这一点"
    "项目凤凰的截止日期在财务审查之后推迟到了三月十四日"
    "部署流水线在预发布环境失败原因是数据库迁移超时"
    "客户反馈在早上九点半缓存命中率下降时延迟明显升高"
    "他更喜欢用Python写脚本并且在所有编辑器里使用vim快捷键"
    "会议纪要要简短明了重点突出下周一之前发给团队所有成员"
)


def content(rng: random.Random, chinese: bool) -> str:
    n = rng.randint(50, 200)
    if chinese:
        out: list[str] = []
        while sum(len(s) for s in out) < n:
            start = rng.randrange(0, len(ZH_TEXT) - 20)
            out.append(ZH_TEXT[start : start + rng.randint(8, 20)])
            if rng.random() < 0.3:
                out.append(" " + rng.choice(EN_WORDS) + " ")
            else:
                out.append("，")
        return "".join(out)[:n]
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < n:
        words.append(rng.choice(EN_WORDS))
    return " ".join(words)[:n].strip()


def make_rows(count: int, dim: int, seed: int, zh_frac: float) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    vecs = nrng.standard_normal((count, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    now = 1_760_000_000_000
    rows = []
    for i in range(count):
        text = content(rng, rng.random() < zh_frac)
        rows.append(
            {
                "id": uuid.UUID(int=rng.getrandbits(128)).hex,
                "tenant_id": f"tenant-{rng.randrange(4)}",
                "user_id": f"user-{rng.randrange(200)}",
                "agent_scope": rng.choice(["", "agent-a", "agent-b"]),
                "session_id": uuid.UUID(int=rng.getrandbits(128)).hex,
                "type": rng.randrange(4),
                "tier": rng.randrange(3),
                "status": 0,
                "topic_key": rng.choice(["", "preferences", "project/phoenix", "health"]),
                "content": text,
                "content_hash": hashlib.sha256(text.encode()).hexdigest(),
                "importance": rng.random(),
                "confidence": rng.random(),
                "source": rng.choice(["extraction", "api", "import"]),
                "tags": rng.sample(
                    ["work", "personal", "health", "travel", "code"], rng.randrange(4)
                ),
                "metadata": {"origin": "probe", "n": i} if rng.random() < 0.5 else {},
                "created_at": now - i * 1000,
                "occurred_at": now - i * 1000,
                "updated_at": now - i * 1000,
                "expire_at": 0,
                "valid_to": 0,
                "version": 1,
                "supersedes_id": "",
                "superseded_by_id": "",
                "embedding_model": "probe-model",
                "last_accessed_at": 0,
                "access_count": 0,
                "expire_explicit": False,
                "embedding": vecs[i].tolist(),
            }
        )
    return rows


def term_weights(text: str) -> dict[int, float]:
    """A stand-in for client-side BM25 document weights: hashed terms, saturated counts."""
    counts: dict[int, int] = {}
    for word in text.lower().split():
        key = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
        counts[key] = counts.get(key, 0) + 1
    return {k: 2.2 * c / (c + 1.2) for k, c in counts.items()}


def schema_and_index(client: MilvusClient, a: argparse.Namespace) -> tuple[Any, Any]:
    schema = client.create_schema(
        auto_id=False,
        enable_dynamic_field=False,
        description=json.dumps({"embedding_model": "probe-model", "dimension": a.dim}),
    )
    add = schema.add_field
    add("id", DataType.VARCHAR, is_primary=True, max_length=32)
    add("tenant_id", DataType.VARCHAR, max_length=512)
    add("user_id", DataType.VARCHAR, max_length=512)
    add("agent_scope", DataType.VARCHAR, max_length=512)
    add("session_id", DataType.VARCHAR, max_length=512)
    add("type", DataType.INT8)
    add("tier", DataType.INT8)
    add("status", DataType.INT8)
    add("topic_key", DataType.VARCHAR, max_length=1024)
    analyzer = None
    if a.analyzer == "jieba":
        analyzer = CONTENT_ANALYZER
    elif a.analyzer == "jieba-nocn":
        analyzer = {
            "tokenizer": "jieba",
            "filter": [f for f in CONTENT_ANALYZER["filter"] if f != "cnalphanumonly"],
        }
    elif a.analyzer == "jieba-bare":
        analyzer = {"tokenizer": "jieba"}
    elif a.analyzer == "standard":
        analyzer = {"type": "standard"}
    elif a.analyzer == "standard-filters":
        analyzer = {"tokenizer": "standard", "filter": CONTENT_ANALYZER["filter"]}
    elif a.analyzer == "whitespace":
        analyzer = {"tokenizer": "whitespace", "filter": ["lowercase"]}
    if analyzer is not None:
        add(
            "content",
            DataType.VARCHAR,
            max_length=32_768,
            enable_analyzer=True,
            analyzer_params=analyzer,
        )
    else:
        add("content", DataType.VARCHAR, max_length=32_768)
    add("content_hash", DataType.VARCHAR, max_length=64)
    add("importance", DataType.FLOAT)
    add("confidence", DataType.FLOAT)
    add("source", DataType.VARCHAR, max_length=256)
    add("tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=32, max_length=256)
    add("metadata", DataType.JSON)
    for name in ("created_at", "occurred_at", "updated_at", "expire_at", "valid_to", "version"):
        add(name, DataType.INT64)
    add("supersedes_id", DataType.VARCHAR, max_length=32)
    add("superseded_by_id", DataType.VARCHAR, max_length=32)
    add("embedding_model", DataType.VARCHAR, max_length=128)
    add("last_accessed_at", DataType.INT64)
    add("access_count", DataType.INT64)
    add("expire_explicit", DataType.BOOL)
    add("embedding", DataType.FLOAT_VECTOR, dim=a.dim)
    if a.client_sparse:
        add("sparse", DataType.SPARSE_FLOAT_VECTOR)
    elif a.bm25:
        add("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="content_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["content"],
                output_field_names=["sparse"],
            )
        )
    if a.drop:
        keep = [f for f in schema.fields if f.name not in a.drop]
        schema.fields[:] = keep
    params = client.prepare_index_params()
    params.add_index(
        "embedding",
        index_type=a.vindex,
        metric_type="COSINE",
        **({"params": {"M": 16, "efConstruction": 200}} if a.vindex == "HNSW" else {}),
    )
    if a.client_sparse:
        params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    elif a.bm25:
        params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    if a.scalar_index != "none":
        for f in ("tenant_id", "user_id"):
            if f not in a.drop:
                params.add_index(f, index_type=a.scalar_index)
    return schema, params


def lite_pid() -> int:
    me = os.getpid()
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2 :].split()
        if int(fields[1]) == me:
            kids.append(int(entry))
    for k in kids:
        with open(f"/proc/{k}/cmdline", "rb") as f:
            if b"milvus" in f.read():
                return k
    raise RuntimeError(f"no milvus child among {kids}")


def cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    fields = st[st.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def threads_of(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        name = st[st.find("(") + 1 : st.rfind(")")]
        fields = st[st.rfind(")") + 2 :].split()
        key = f"{name}"
        out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
    return out


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="baseline")
    p.add_argument("--work-dir", default=tempfile.gettempdir(), help="the Lite files go here")
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=2_000)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument(
        "--analyzer",
        default="jieba",
        choices=[
            "jieba",
            "jieba-nocn",
            "jieba-bare",
            "standard",
            "standard-filters",
            "whitespace",
            "none",
        ],
    )
    p.add_argument("--no-bm25", dest="bm25", action="store_false")
    p.add_argument(
        "--client-sparse",
        action="store_true",
        help="no BM25 function: the rows carry a term-weight sparse vector made by the client",
    )
    p.add_argument("--vindex", default="FLAT")
    p.add_argument("--scalar-index", default="INVERTED")
    p.add_argument("--index-after", action="store_true", help="create the indexes after the load")
    p.add_argument(
        "--no-query",
        dest="query",
        action="store_false",
        help="skip recalld's per-batch 'id in [...]' existence query",
    )
    p.add_argument("--own-clients", action="store_true", help="one MilvusClient per writer")
    p.add_argument("--zh-frac", type=float, default=0.2)
    p.add_argument(
        "--preload", type=int, default=0, help="rows inserted (untimed) before the timed load"
    )
    p.add_argument("--settle", type=float, default=3.0, help="seconds to watch Lite after the load")
    p.add_argument("--perf", default="", help="perf record output path for the Lite process")
    p.add_argument("--drop", default="", help="comma list of fields left out of schema and rows")
    a = p.parse_args()
    a.drop = set(filter(None, a.drop.split(",")))
    if a.analyzer == "none" and a.bm25:
        p.error("BM25 needs an analyzer")

    work = os.path.join(a.work_dir, f"db-{a.name}-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    uri = f"{work}/milvus.db"

    rows = make_rows(a.rows + a.preload, a.dim, 7, a.zh_frac)
    if a.drop:
        rows = [{k: v for k, v in r.items() if k not in a.drop} for r in rows]
    if a.client_sparse:
        for r in rows:
            r["sparse"] = term_weights(r["content"])
    pre, rows = rows[: a.preload], rows[a.preload :]
    chars = sum(len(r.get("content", "")) for r in rows) / len(rows)

    client = MilvusClient(uri=uri, timeout=120)
    pid = lite_pid()
    schema, params = schema_and_index(client, a)
    if a.index_after:
        client.create_collection(COLL, schema=schema)
    else:
        client.create_collection(COLL, schema=schema, index_params=params)
        client.load_collection(COLL)
    for s in range(0, len(pre), a.batch):
        client.insert(COLL, pre[s : s + a.batch])

    clients = [client]
    if a.own_clients:
        clients = [MilvusClient(uri=uri, timeout=120) for _ in range(a.writers)]
    local = threading.local()
    counter = iter(range(10**9))
    lock = threading.Lock()

    def my_client() -> MilvusClient:
        if not hasattr(local, "c"):
            with lock:
                local.c = clients[next(counter) % len(clients)]
        return local.c

    q_time = [0.0]
    i_time = [0.0]

    def write(batch: list[dict[str, Any]]) -> int:
        c = my_client()
        if a.query:
            t = time.perf_counter()
            ids = ", ".join(json.dumps(r["id"]) for r in batch)
            found = c.query(
                COLL, filter=f"id in [{ids}]", output_fields=["id"], consistency_level="Strong"
            )
            with lock:
                q_time[0] += time.perf_counter() - t
            assert not found
        t = time.perf_counter()
        c.insert(COLL, batch)
        with lock:
            i_time[0] += time.perf_counter() - t
        return len(batch)

    perf_proc = None
    if a.perf:
        perf_proc = subprocess.Popen(
            [
                "perf",
                "record",
                "-F",
                "199",
                *(["--call-graph", "dwarf,32768"] if "dwarf" in a.perf else ["-g"]),
                "-p",
                str(pid),
                "-o",
                a.perf,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.0)

    th0 = threads_of(pid)
    l0, s0, w0 = cpu_of(pid), self_cpu(), time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(a.writers) as pool:
        futs = [pool.submit(write, rows[s : s + a.batch]) for s in range(0, len(rows), a.batch)]
        done = sum(f.result() for f in futs)
    w1, l1, s1 = time.perf_counter(), cpu_of(pid), self_cpu()
    th1 = threads_of(pid)
    if a.index_after:
        client.create_index(COLL, params)
        client.load_collection(COLL)
    w2, l2 = time.perf_counter(), cpu_of(pid)
    cnt = client.query(COLL, filter="", output_fields=["count(*)"], consistency_level="Strong")[0][
        "count(*)"
    ]
    time.sleep(a.settle)
    l3 = cpu_of(pid)
    if perf_proc:
        perf_proc.send_signal(2)
        perf_proc.wait(timeout=60)
    # a keyword search sanity check (BM25) on Chinese and English
    kw = {}
    if a.client_sparse:
        for q in ("花生过敏", "migration timed out"):
            res = client.search(
                COLL,
                data=[term_weights(q)],
                anns_field="sparse",
                limit=3,
                output_fields=["content"],
                search_params={"metric_type": "IP"},
            )
            kw[q] = len(res[0])
    elif a.bm25:
        for q in ("花生过敏", "migration timed out"):
            res = client.search(
                COLL,
                data=[q],
                anns_field="sparse",
                limit=3,
                output_fields=["content"],
                search_params={"metric_type": "BM25"},
            )
            kw[q] = len(res[0])
    client.close()
    for c in clients[1:]:
        c.close()

    thread_delta = {k: round(th1.get(k, 0) - th0.get(k, 0), 2) for k in th1}
    thread_delta = dict(
        sorted(((k, v) for k, v in thread_delta.items() if v > 0.05), key=lambda kv: -kv[1])
    )
    wall = w1 - w0
    lite = l1 - l0
    res = {
        "name": a.name,
        "rows": done,
        "count": cnt,
        "batch": a.batch,
        "writers": a.writers,
        "dim": a.dim,
        "analyzer": a.analyzer,
        "bm25": a.bm25,
        "vindex": a.vindex,
        "index_after": a.index_after,
        "query": a.query,
        "own_clients": a.own_clients,
        "preload": a.preload,
        "drop": sorted(a.drop),
        "avg_chars": round(chars, 1),
        "wall_s": round(wall, 3),
        "rows_per_s": round(done / wall, 1),
        "lite_cpu_s": round(lite, 2),
        "lite_ms_per_row": round(1000 * lite / done, 3),
        "lite_cores": round(lite / wall, 2),
        "py_cpu_s": round(s1 - s0, 2),
        "py_ms_per_row": round(1000 * (s1 - s0) / done, 3),
        "query_s_sum": round(q_time[0], 2),
        "insert_s_sum": round(i_time[0], 2),
        "index_after_s": round(w2 - w1, 2),
        "index_after_lite_cpu_s": round(l2 - l1, 2),
        "settle_lite_cpu_s": round(l3 - l2, 2),
        "lite_threads": thread_delta,
        "kw_hits": kw,
    }
    print("RESULT " + json.dumps(res, ensure_ascii=False), flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
