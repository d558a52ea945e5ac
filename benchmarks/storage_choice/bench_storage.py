"""Storage-choice benchmark: Milvus Lite 2.5.1 vs 3.2.x, partition key vs partition per tenant.

One script, two roles:

* **driver** (what you run): spawns one *worker* process per variant
  (interpreter x layout), has each worker generate the same seeded data set and
  load it into its own Milvus Lite database under ``--workdir``, then runs the
  timed operations *interleaved* (op 1 on A, B, C; op 2 on A, B, C; ...; the
  variant order rotates every round). Interleaving matters on small machines
  that throttle after ~40 s of full load: every variant sees the same thermal
  state, so the side-by-side ratios are trustworthy even when absolute numbers
  drift. Results go to ``--out`` (JSON) and a Markdown table on stdout.
* **worker** (``--worker``, started by the driver): owns one database and one
  ``MilvusClient``; answers JSON-line commands on its stdin.

Pass several interpreters with ``--python`` to compare Milvus Lite versions in
one run (each venv has its own ``milvus-lite``); the default is the current
interpreter only. ``--checks`` runs the functional checks (partition key
filters, partition-per-tenant CRUD, partition limit, upsert with BM25, delete by
filter in a partition) in each interpreter.

Example::

    python benchmarks/storage_choice/bench_storage.py --rows 100000 --tenants 100 \
        --users-per-tenant 100 --layout partition_per_tenant partition_key \
        --python /tmp/venv-lite25/bin/python /tmp/venv-lite3/bin/python \
        --checks --out results.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import queue
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

LAYOUTS = ("filter_only", "partition_per_tenant", "partition_key")
OPS = (
    "dense",
    "bm25",
    "get",
    "insert1",
    "insert100",
    "dense_unflushed",
    "dense_bounded",
    "user_load",
)
# Dense index of the server variants (--server-index): build params, search params.
SERVER_INDEXES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "FLAT": ({}, {}),
    "IVF_FLAT": ({"nlist": 1024}, {"nprobe": 32}),
    "HNSW": ({"M": 16, "efConstruction": 128}, {"ef": 64}),
}
DIM = 512
NOW_MS = 1_767_225_600_000  # fixed "now" (2026-01-01T00:00:00Z) so runs are reproducible
DAY_MS = 86_400_000
OUTPUT_FIELDS = ["id", "content", "type", "tier", "importance", "created_at"]
# user_load: every scalar field (no vector), as recalld reads a user's working set.
SCALAR_FIELDS = [
    "id",
    "tenant_id",
    "user_id",
    "agent_scope",
    "session_id",
    "type",
    "tier",
    "status",
    "topic_key",
    "content",
    "content_hash",
    "importance",
    "confidence",
    "source",
    "tags",
    "metadata",
    "created_at",
    "occurred_at",
    "updated_at",
    "expire_at",
    "valid_to",
    "supersedes_id",
    "superseded_by_id",
    "version",
    "embedding_model",
]
COLLECTION = "memories"
MARK = "@@"  # prefix of protocol lines on a worker's stdout

ZH_WORDS = [
    "咖啡",
    "茶",
    "项目",
    "会议",
    "北京",
    "上海",
    "深圳",
    "数据库",
    "部署",
    "周末",
    "旅行",
    "猫",
    "狗",
    "跑步",
    "游泳",
    "医生",
    "预算",
    "合同",
    "客户",
    "报告",
    "火锅",
    "面条",
    "米饭",
    "水果",
    "电影",
    "音乐",
    "钢琴",
    "吉他",
    "篮球",
    "足球",
    "学校",
    "老师",
    "孩子",
    "父母",
    "生日",
    "礼物",
    "飞机",
    "火车",
    "酒店",
    "机场",
    "天气",
    "下雨",
    "冬天",
    "夏天",
    "医院",
    "银行",
    "手机",
    "电脑",
    "键盘",
    "服务器",
    "接口",
    "缓存",
    "日志",
    "测试",
    "上线",
    "版本",
    "需求",
    "设计",
    "文档",
    "邮件",
]
ZH_GLUE = [
    "我",
    "喜欢",
    "不喜欢",
    "明天",
    "昨天",
    "需要",
    "计划",
    "提醒",
    "记得",
    "已经",
    "在",
    "和",
]
EN_WORDS = [
    "coffee",
    "tea",
    "project",
    "meeting",
    "beijing",
    "shanghai",
    "database",
    "deploy",
    "weekend",
    "travel",
    "cat",
    "dog",
    "running",
    "swimming",
    "doctor",
    "budget",
    "contract",
    "customer",
    "report",
    "hotpot",
    "noodles",
    "rice",
    "fruit",
    "movie",
    "music",
    "piano",
    "guitar",
    "basketball",
    "football",
    "school",
    "teacher",
    "children",
    "parents",
    "birthday",
    "gift",
    "flight",
    "train",
    "hotel",
    "airport",
    "weather",
    "rain",
    "winter",
    "summer",
    "hospital",
    "bank",
    "phone",
    "laptop",
    "keyboard",
    "server",
    "api",
    "cache",
    "logs",
    "testing",
    "release",
    "version",
    "requirements",
    "design",
    "docs",
    "email",
    "vegan",
]
EN_GLUE = ["user", "prefers", "likes", "dislikes", "plans", "needs", "the", "and", "next", "week"]
BM25_QUERIES = ["咖啡", "database", "旅行", "coffee", "服务器", "birthday"]


# --------------------------------------------------------------------------- data


def tenant_name(t: int) -> str:
    return f"t{t:04d}"


def user_name(t: int, u: int) -> str:
    return f"t{t:04d}_u{u:04d}"


def partition_name(tenant: str) -> str:
    # Partition names allow [A-Za-z0-9_] only: real tenant ids need a safe mapping.
    return f"p_{tenant}"


def make_id(prefix: str, n: int) -> str:
    return f"{prefix}{n:020d}"[:32]


class DataGen:
    """Deterministic data: same seed -> same rows, queries and ids in every worker."""

    def __init__(self, seed: int, rows: int, tenants: int, users: int) -> None:
        import numpy as np

        self.np = np
        self.seed = seed
        self.rows = rows
        self.tenants = tenants
        self.users = users
        rng = np.random.default_rng(seed)
        n_centers = 64
        centers = rng.standard_normal((n_centers, DIM)).astype(np.float32)
        self.centers = centers / np.linalg.norm(centers, axis=1, keepdims=True)
        # Rows are assigned round-robin to tenants (so every tenant has rows / tenants rows),
        # users uniformly at random inside the tenant.
        self.tenant_of = np.arange(rows) % tenants
        self.user_of = rng.integers(0, users, size=rows)
        self.center_of = rng.integers(0, n_centers, size=rows)
        self.status_of = rng.choice([1, 2, 3, 4], size=rows, p=[0.85, 0.08, 0.05, 0.02])
        self.expire_kind = rng.choice([0, 1, 2], size=rows, p=[0.7, 0.2, 0.1])
        self.rng_seed_content = int(rng.integers(0, 2**31))
        self.rows_by_tenant: dict[int, list[int]] = {}
        for i in range(rows):
            self.rows_by_tenant.setdefault(int(self.tenant_of[i]), []).append(i)

    def vectors(self, idx: Any, salt: int = 0) -> Any:
        np = self.np
        rng = np.random.default_rng((self.seed, 7, salt, int(idx[0]) if len(idx) else 0))
        noise = rng.standard_normal((len(idx), DIM)).astype(np.float32)
        v = self.centers[self.center_of[idx] % len(self.centers)] + 0.6 * noise / np.sqrt(DIM) * 8
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    @staticmethod
    def sentence(rng: random.Random) -> str:
        parts: list[str] = []
        target = rng.randint(20, 200)
        length = 0
        while length < target:
            if rng.random() < 0.5:
                seg = "".join(
                    rng.choice(ZH_GLUE) + rng.choice(ZH_WORDS) for _ in range(rng.randint(1, 3))
                )
            else:
                seg = " ".join(
                    rng.choice(EN_GLUE) + " " + rng.choice(EN_WORDS)
                    for _ in range(rng.randint(1, 3))
                )
            parts.append(seg)
            length += len(seg) + 1
        text = "\uff0c".join(parts)  # fullwidth comma
        return text[:200] if len(text) > 200 else text

    def row(self, i: int, vec: Any, rng: random.Random, id_: str | None = None) -> dict[str, Any]:
        t = int(self.tenant_of[i % self.rows])
        u = int(self.user_of[i % self.rows])
        ek = int(self.expire_kind[i % self.rows])
        created = NOW_MS - rng.randint(0, 200) * DAY_MS
        expire = 0 if ek == 0 else (NOW_MS + 30 * DAY_MS if ek == 1 else NOW_MS - DAY_MS)
        content = self.sentence(rng)
        return {
            "id": id_ or make_id("m", i),
            "tenant_id": tenant_name(t),
            "user_id": user_name(t, u),
            "agent_scope": f"agent{rng.randint(0, 3)}",
            "session_id": f"s{rng.randint(0, 10_000):08d}",
            "type": rng.randint(1, 8),
            "tier": rng.randint(0, 2),
            "status": int(self.status_of[i % self.rows]),
            "topic_key": f"topic/{rng.choice(EN_WORDS)}/{rng.randint(0, 50)}",
            "content": content,
            "content_hash": hashlib.sha256(content.encode()).hexdigest(),
            "importance": round(rng.random(), 3),
            "confidence": round(rng.random(), 3),
            "source": rng.choice(["chat", "import", "tool", "summary"]),
            "tags": [rng.choice(EN_WORDS) for _ in range(rng.randint(0, 4))],
            "metadata": {"lang": "mixed", "n": rng.randint(0, 9)},
            "created_at": created,
            "occurred_at": created,
            "updated_at": created,
            "expire_at": expire,
            "valid_to": 0,
            "supersedes_id": "",
            "superseded_by_id": "",
            "version": 1,
            "embedding_model": "use-m3-512",
            "embedding": vec,
        }

    def rows_for(self, idx: list[int]) -> list[dict[str, Any]]:
        np = self.np
        arr = np.asarray(idx)
        vecs = self.vectors(arr)
        rng = random.Random(self.rng_seed_content * 1_000_003 + (idx[0] if idx else 0))
        return [self.row(i, vecs[k], rng) for k, i in enumerate(idx)]

    def queries(self, n: int) -> list[dict[str, Any]]:
        """A fixed pool of queries: (tenant, user, vector, bm25 text, ids of that tenant)."""
        np = self.np
        rng = random.Random(self.seed * 31 + 5)
        out = []
        qrng = np.random.default_rng((self.seed, 99))
        for k in range(n):
            i = rng.randrange(self.rows)  # a real row: its (tenant, user) exist
            t = int(self.tenant_of[i])
            u = int(self.user_of[i])
            v = (
                self.centers[self.center_of[i] % len(self.centers)]
                + 0.5 * qrng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM) * 8
            )
            v = (v / np.linalg.norm(v)).astype(np.float32)
            ids = [make_id("m", j) for j in rng.sample(self.rows_by_tenant[t], 10)]
            out.append(
                {
                    "tenant": tenant_name(t),
                    "user": user_name(t, u),
                    "vec": v.tolist(),
                    "text": BM25_QUERIES[k % len(BM25_QUERIES)],
                    "ids": ids,
                }
            )
        return out


# --------------------------------------------------------------------------- schema


def build_schema(
    client: Any,
    layout: str,
    tenant_index: bool = False,
    dense_only: bool = False,
    index_type: str = "FLAT",
) -> tuple[Any, Any]:
    """recalld's memory schema; `dense_only` drops what a Milvus 2.3 server lacks.

    Dense-only: no analyzer on `content`, no `sparse` field, no BM25 function and no
    INVERTED index on `user_id` (2.3 has no INVERTED scalar index), on every variant.
    `index_type` is the dense index (`SERVER_INDEXES`; FLAT everywhere but the server).
    """
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field(
        "tenant_id", DataType.VARCHAR, max_length=128, is_partition_key=layout == "partition_key"
    )
    schema.add_field("user_id", DataType.VARCHAR, max_length=128)
    schema.add_field("agent_scope", DataType.VARCHAR, max_length=128)
    schema.add_field("session_id", DataType.VARCHAR, max_length=128)
    schema.add_field("type", DataType.INT8)
    schema.add_field("tier", DataType.INT8)
    schema.add_field("status", DataType.INT8)
    schema.add_field("topic_key", DataType.VARCHAR, max_length=256)
    if dense_only:
        schema.add_field("content", DataType.VARCHAR, max_length=32768)
    else:
        schema.add_field(
            "content",
            DataType.VARCHAR,
            max_length=32768,
            enable_analyzer=True,
            analyzer_params={"tokenizer": "jieba"},
        )
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("importance", DataType.FLOAT)
    schema.add_field("confidence", DataType.FLOAT)
    schema.add_field("source", DataType.VARCHAR, max_length=64)
    schema.add_field(
        "tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=32, max_length=64
    )
    schema.add_field("metadata", DataType.JSON)
    for f in ("created_at", "occurred_at", "updated_at", "expire_at", "valid_to"):
        schema.add_field(f, DataType.INT64)
    schema.add_field("supersedes_id", DataType.VARCHAR, max_length=32)
    schema.add_field("superseded_by_id", DataType.VARCHAR, max_length=32)
    schema.add_field("version", DataType.INT64)
    schema.add_field("embedding_model", DataType.VARCHAR, max_length=64)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIM)
    index_params = client.prepare_index_params()
    build_params = SERVER_INDEXES[index_type][0]
    index_params.add_index(
        field_name="embedding",
        index_type=index_type,
        metric_type="COSINE",
        **({"params": build_params} if build_params else {}),
    )
    if dense_only:
        return schema, index_params
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="content_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["content"],
            output_field_names=["sparse"],
        )
    )
    index_params.add_index(
        field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
    )
    index_params.add_index(field_name="user_id", index_type="INVERTED")
    if tenant_index:
        index_params.add_index(field_name="tenant_id", index_type="INVERTED")
    return schema, index_params


def create_collection(
    client: Any,
    name: str,
    layout: str,
    tenant_index: bool = False,
    dense_only: bool = False,
    index_type: str = "FLAT",
) -> None:
    schema, index_params = build_schema(client, layout, tenant_index, dense_only, index_type)
    client.create_collection(
        collection_name=name,
        schema=schema,
        index_params=index_params,
        consistency_level="Strong",
    )


def hot_filter(tenant: str, user: str) -> str:
    return (
        f'tenant_id == "{tenant}" and user_id == "{user}" and status == 1 '
        f"and (expire_at == 0 or expire_at > {NOW_MS})"
    )


# --------------------------------------------------------------------------- resource probes


def path_size(path: str) -> dict[str, int]:
    apparent = 0
    allocated = 0
    if os.path.isfile(path):
        st = os.stat(path)
        return {"apparent_bytes": st.st_size, "allocated_bytes": st.st_blocks * 512}
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return {"apparent_bytes": apparent, "allocated_bytes": allocated}


def rss() -> dict[str, int]:
    """RSS of this process and of its children (Lite 2.5.x runs the engine as a child)."""
    try:
        import psutil
    except ImportError:  # fall back to /proc
        own = tree_rss(os.getpid(), children=False)
        return {"self_bytes": own, "children_bytes": tree_rss(os.getpid()) - own}
    p = psutil.Process()
    children = 0
    for c in p.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            children += c.memory_info().rss
    return {"self_bytes": p.memory_info().rss, "children_bytes": children}


def tree_rss(pid: int, children: bool = True) -> int:
    """RSS in bytes of a process and its descendants (a Milvus server), from /proc."""
    total = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    if not children:
        return total
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):  # children are listed per thread
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as fh:
                for child in fh.read().split():
                    total += tree_rss(int(child))
    return total


def jsonable(v: Any) -> Any:
    """Plain JSON for whatever pymilvus returned (delete results hold protobuf containers)."""
    if isinstance(v, dict) and "delete_count" in v:
        return {"delete_count": v["delete_count"]}
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v) and len(v) > 3:
        return {"ids_returned": len(v)}
    if isinstance(v, dict) and "upsert_count" in v:
        return {"upsert_count": v["upsert_count"]}
    try:
        return json.loads(json.dumps(v, default=str))
    except (TypeError, ValueError):
        return str(v)


def lite_version() -> str:
    from importlib.metadata import version

    return version("milvus-lite")


def short_err(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 400 else s[:400] + "..."


# --------------------------------------------------------------------------- worker


class Worker:
    def __init__(self, cfg: dict[str, Any]) -> None:
        from pymilvus import MilvusClient

        self.cfg = cfg
        self.layout: str = cfg["layout"]
        # Milvus Lite: a database file; a Milvus server: its URI (`uri`), and `dbpath` is the
        # server's data directory (for the disk figures), shared by its collections.
        self.dbpath: str = cfg["dbpath"]
        self.uri: str | None = cfg.get("uri")
        self.coll: str = cfg.get("collection", COLLECTION)
        self.dense_only: bool = cfg.get("dense_only", False)
        self.server_pid: int | None = cfg.get("server_pid")
        self.index_type: str = cfg.get("index_type", "FLAT")
        self.search_params: dict[str, Any] = {"metric_type": "COSINE"}
        if SERVER_INDEXES[self.index_type][1]:
            self.search_params["params"] = SERVER_INDEXES[self.index_type][1]
        self.gen = DataGen(cfg["seed"], cfg["rows"], cfg["tenants"], cfg["users"])
        self.pool = self.gen.queries(cfg.get("query_pool", 600))
        self.rss_baseline = self.rss()  # interpreter + pymilvus + numpy + data generator
        self.insert_counter = 0
        self.insert_lock = threading.Lock()
        t0 = time.perf_counter()
        self.client = MilvusClient(uri=self.uri) if self.uri else MilvusClient(self.dbpath)
        self.open_s = time.perf_counter() - t0

    def version(self) -> str:
        if self.uri:
            return "server-" + str(self.client.get_server_version()).lstrip("v")
        return lite_version()

    def rss(self) -> dict[str, int]:
        """Worker RSS; for a server variant, the server process tree as `children_bytes`."""
        own = rss()
        if self.server_pid:
            own = {"self_bytes": own["self_bytes"], "children_bytes": tree_rss(self.server_pid)}
        return own

    # -- helpers
    def pkw(self, tenant: str) -> dict[str, Any]:
        if self.layout == "partition_per_tenant":
            return {"partition_names": [partition_name(tenant)]}
        return {}

    def ikw(self, tenant: str) -> dict[str, Any]:
        if self.layout == "partition_per_tenant":
            return {"partition_name": partition_name(tenant)}
        return {}

    def next_ids(self, n: int) -> list[str]:
        with self.insert_lock:
            start = self.insert_counter
            self.insert_counter += n
        return [make_id("x", start + k) for k in range(n)]

    # -- commands
    def load(self) -> dict[str, Any]:
        c = self.client
        gen = self.gen
        res: dict[str, Any] = {"open_s": self.open_s}
        t0 = time.perf_counter()
        if self.uri and self.cfg.get("reuse") and self.coll in c.list_collections():
            return self.reuse(res, t0)
        if self.uri and self.coll in c.list_collections():
            c.drop_collection(self.coll)  # a server keeps collections between runs
        create_collection(
            c,
            self.coll,
            self.layout,
            self.cfg.get("tenant_index", False),
            self.dense_only,
            self.index_type,
        )
        if self.layout == "partition_per_tenant":
            try:
                for t in range(gen.tenants):
                    c.create_partition(self.coll, partition_name(tenant_name(t)))
            except Exception as e:
                res["unsupported"] = "create_partition: " + short_err(e)
                return res
        res["create_s"] = time.perf_counter() - t0
        gen_s = 0.0
        ins_s = 0.0
        batch = self.cfg.get("load_batch", 1000)
        t_start = time.perf_counter()
        progress_at = t_start
        inserted = 0
        batches = [
            (t, gen.rows_by_tenant.get(t, [])[k : k + batch])
            for t in range(gen.tenants)
            for k in range(0, len(gen.rows_by_tenant.get(t, [])), batch)
        ]

        def make(idx: list[int]) -> tuple[list[dict[str, Any]], float]:
            g0 = time.perf_counter()
            return gen.rows_for(idx), time.perf_counter() - g0

        # Generate the next batch in a thread while the current one is inserted (with
        # --prefetch; the generator's time is then partly hidden behind the server's).
        prefetch = self.cfg.get("prefetch", False)
        ex = ThreadPoolExecutor(1) if prefetch else None
        nxt = ex.submit(make, batches[0][1]) if ex and batches else None
        for b, (t, part) in enumerate(batches):
            if nxt is not None:
                rows, g = nxt.result()
                nxt = ex.submit(make, batches[b + 1][1]) if ex and b + 1 < len(batches) else None
            else:
                rows, g = make(part)
            g1 = time.perf_counter()
            c.insert(self.coll, rows, **self.ikw(tenant_name(t)))
            g2 = time.perf_counter()
            gen_s += g
            ins_s += g2 - g1
            inserted += len(rows)
            if inserted == len(rows):
                # Preflight: if the hot-path search does not work on this layout and
                # version, say so instead of loading everything.
                try:
                    self.dense(self.pool[0])
                except Exception as e:
                    res["unsupported"] = short_err(e)
                    res["rows"] = inserted
                    if ex:
                        ex.shutdown(cancel_futures=True)
                    return res
            if time.perf_counter() - progress_at > 30:
                progress_at = time.perf_counter()
                log(f"[{self.cfg['name']}] loaded {inserted}/{gen.rows} rows, insert {ins_s:.1f}s")
        if ex:
            ex.shutdown()
        res["insert_s"] = ins_s
        res["datagen_s"] = gen_s
        res["prefetch"] = bool(prefetch)
        res["insert_wall_s"] = time.perf_counter() - t_start
        f0 = time.perf_counter()
        c.flush(self.coll)
        res["flush_s"] = time.perf_counter() - f0
        res["load_s"] = res["create_s"] + ins_s + res["flush_s"]
        res["rows"] = inserted
        res["rows_per_s"] = inserted / ins_s if ins_s else None
        res["rows_per_s_wall"] = inserted / res["insert_wall_s"] if res["insert_wall_s"] else None
        res["since_create_s"] = time.perf_counter() - t0
        if self.uri:
            res["index"] = self.wait_index(inserted)
            res["since_create_s"] = time.perf_counter() - t0
        # first search after load (warm-up; includes any lazy index build)
        q = self.pool[0]
        w0 = time.perf_counter()
        try:
            self.dense(q)
            res["first_search_s"] = time.perf_counter() - w0
        except Exception as e:
            res["first_search_error"] = short_err(e)
        res["disk"] = path_size(self.dbpath)
        res["rss"] = self.rss()
        res["rss_baseline"] = self.rss_baseline
        try:
            res["row_count"] = c.get_collection_stats(self.coll).get("row_count")
        except Exception as e:
            res["row_count_error"] = short_err(e)
        try:
            res["partitions"] = len(c.list_partitions(self.coll))
        except Exception as e:
            res["partitions_error"] = short_err(e)
        return res

    def reuse(self, res: dict[str, Any], t0: float) -> dict[str, Any]:
        """--reuse: time the ops on a collection an earlier run left on the server."""
        c = self.client
        c.load_collection(self.coll)
        rows = int(c.get_collection_stats(self.coll).get("row_count") or 0)
        f0 = time.perf_counter()
        c.flush(self.coll)
        res.update(
            reused=True,
            rows=rows,
            row_count=rows,
            insert_s=None,
            rows_per_s=None,
            flush_s=time.perf_counter() - f0,
        )
        res["index"] = self.wait_index(rows)
        res["since_create_s"] = None
        res["disk"] = path_size(self.dbpath)
        res["rss"] = self.rss()
        res["rss_baseline"] = self.rss_baseline
        with contextlib.suppress(Exception):
            res["partitions"] = len(c.list_partitions(self.coll))
        self.insert_counter = 10_000_000  # ids apart from any earlier run's inserts
        return res

    def wait_index(self, rows: int) -> dict[str, Any]:
        """A server builds the dense index per sealed segment, in the background, while
        the rows arrive; wait (after the flush) until every row is indexed and every
        segment the query node serves carries the index, so the timed ops see it.

        `wait_s` is the time after the flush; the build of segments sealed earlier
        overlaps the load (compare `since_create_s` across index types).
        """
        c = self.client
        timeout = float(self.cfg.get("index_timeout", 1800))
        grace = float(self.cfg.get("index_serve_grace", 5))
        out: dict[str, Any] = {"type": self.index_type, "params": SERVER_INDEXES[self.index_type]}
        t0 = time.perf_counter()
        last_log = t0
        desc: dict[str, Any] = {}
        while True:
            desc = {}
            try:
                desc = c.describe_index(self.coll, "embedding") or {}
            except Exception as e:
                out["describe_error"] = short_err(e)
            built = (
                desc.get("state") == "Finished"
                and desc.get("indexed_rows", 0) >= desc.get("total_rows", 0) >= rows
                and not desc.get("pending_index_rows")
            )
            if built and "built_s" not in out:
                out["built_s"] = time.perf_counter() - t0
            served = None
            if built:
                try:
                    infos = c._get_connection().get_query_segment_info(self.coll)
                    served = sum(i.num_rows for i in infos if i.indexID)
                    out["segments"] = len(infos)
                    out["segments_indexed"] = sum(1 for i in infos if i.indexID)
                    out["rows_served_indexed"] = served
                except Exception as e:
                    out["segment_info_error"] = short_err(e)
                    served = rows
            if built and served is not None and served >= rows:
                break
            now = time.perf_counter()
            if built and now - t0 - out["built_s"] > grace:
                # 2.3.5 reports indexID 0 for served segments even when they are indexed
                out["served_unconfirmed"] = True
                break
            if now - t0 > timeout:
                out["timeout"] = True
                break
            if now - last_log > 30:
                last_log = now
                log(
                    f"[{self.cfg['name']}] index: {desc.get('indexed_rows')}/"
                    f"{desc.get('total_rows')} rows, pending {desc.get('pending_index_rows')}, "
                    f"served indexed {served}"
                )
            time.sleep(1.0)
        out["wait_s"] = time.perf_counter() - t0
        out["describe"] = {
            k: desc.get(k) for k in ("state", "total_rows", "indexed_rows", "pending_index_rows")
        }
        return out

    def dense(self, q: dict[str, Any], consistency: str = "Strong") -> int:
        r = self.client.search(
            self.coll,
            data=[q["vec"]],
            anns_field="embedding",
            limit=10,
            filter=hot_filter(q["tenant"], q["user"]),
            output_fields=OUTPUT_FIELDS,
            search_params=self.search_params,
            consistency_level=consistency,
            **self.pkw(q["tenant"]),
        )
        return len(r[0])

    def bm25(self, q: dict[str, Any]) -> int:
        r = self.client.search(
            self.coll,
            data=[q["text"]],
            anns_field="sparse",
            limit=10,
            filter=hot_filter(q["tenant"], q["user"]),
            output_fields=OUTPUT_FIELDS,
            search_params={"metric_type": "BM25"},
            consistency_level="Strong",
            **self.pkw(q["tenant"]),
        )
        return len(r[0])

    def user_load(self, q: dict[str, Any]) -> int:
        """Every scalar field of every row of one (tenant, user): recalld loading a user's
        working set on a server."""
        r = self.client.query(
            self.coll,
            filter=f'tenant_id == "{q["tenant"]}" and user_id == "{q["user"]}"',
            output_fields=SCALAR_FIELDS,
            consistency_level="Strong",
            **self.pkw(q["tenant"]),
        )
        return len(r)

    def get(self, q: dict[str, Any]) -> int:
        ids = ", ".join(f'"{i}"' for i in q["ids"])
        r = self.client.query(
            self.coll,
            filter=f'tenant_id == "{q["tenant"]}" and id in [{ids}]',
            output_fields=OUTPUT_FIELDS,
            consistency_level="Strong",
            **self.pkw(q["tenant"]),
        )
        return len(r)

    def insert(self, q: dict[str, Any], n: int) -> int:
        # one Write call = one tenant (and user); new rows cycle through the data set's shapes
        ids = self.next_ids(n)
        base = int(hashlib.md5(ids[0].encode()).hexdigest(), 16) % self.gen.rows
        t = int(q["tenant"][1:])
        # pick rows of the same tenant so tenant_id and partition agree
        cand = self.gen.rows_by_tenant[t]
        idx = [cand[(base + k) % len(cand)] for k in range(n)]
        vecs = self.gen.vectors(self.gen.np.asarray(idx), salt=1 + base)
        rng = random.Random(base)
        rows = [self.gen.row(i, vecs[k], rng, id_=ids[k]) for k, i in enumerate(idx)]
        for r in rows:
            r["user_id"] = q["user"]
        self.client.insert(self.coll, rows, **self.ikw(q["tenant"]))
        return n

    def run_op(self, op: str, conc: int, seconds: float, rnd: int) -> dict[str, Any]:
        fn: Callable[[dict[str, Any]], int]
        if op in ("dense", "dense_unflushed"):
            fn = self.dense
        elif op == "dense_bounded":
            # The same search at Bounded consistency: what Strong costs (a server waits
            # for its time tick to pass the request's timestamp).
            fn = lambda q: self.dense(q, "Bounded")  # noqa: E731
        elif op == "bm25":
            fn = self.bm25
        elif op == "get":
            fn = self.get
        elif op == "user_load":
            fn = self.user_load
        elif op == "insert1":
            fn = lambda q: self.insert(q, 1)  # noqa: E731
        elif op == "insert100":
            fn = lambda q: self.insert(q, 100)  # noqa: E731
        else:
            raise ValueError(op)
        pre: dict[str, Any] = {}
        if op == "dense_unflushed":
            # Leave a fixed amount of unflushed data in the growing buffer, then search.
            p0 = time.perf_counter()
            for k in range(5):
                self.insert(self.pool[(rnd * 7 + k) % len(self.pool)], 100)
            pre["pre_insert_rows"] = 500
            pre["pre_insert_s"] = time.perf_counter() - p0
        lat: list[float] = []
        hits: list[int] = []
        errors: list[str] = []
        lock = threading.Lock()
        deadline = time.perf_counter() + seconds
        pool = self.pool

        def loop(th: int) -> None:
            k = (rnd * 97 + th * 53) % len(pool)
            done = 0
            while True:
                q = pool[k % len(pool)]
                k += 1
                s = time.perf_counter()
                try:
                    h = fn(q)
                except Exception as e:
                    with lock:
                        errors.append(short_err(e))
                    return
                e2 = time.perf_counter()
                with lock:
                    lat.append((e2 - s) * 1000)
                    hits.append(h)
                done += 1
                if e2 >= deadline:
                    return

        t0 = time.perf_counter()
        if conc == 1:
            loop(0)
        else:
            with ThreadPoolExecutor(conc) as ex:
                list(ex.map(loop, range(conc)))
        elapsed = time.perf_counter() - t0
        out: dict[str, Any] = {
            "lat_ms": lat,
            "elapsed_s": elapsed,
            "n": len(lat),
            "mean_hits": statistics.fmean(hits) if hits else None,
            "errors": len(errors),
            "first_error": errors[0] if errors else None,
            **pre,
        }
        if op in ("insert1", "insert100", "dense_unflushed"):
            # leave the next round's searches on flushed data (as after loading)
            f0 = time.perf_counter()
            try:
                self.client.flush(self.coll)
                out["flush_after_s"] = time.perf_counter() - f0
            except Exception as e:
                out["flush_error"] = short_err(e)
        return out

    def verify(self, n: int) -> dict[str, Any]:
        """Ids returned for the first n pool queries (dense, BM25, user_load) to compare
        variants; a FLAT variant's dense ids are the true top-10 for the ANN ones."""
        out: dict[str, Any] = {"dense": [], "bm25": [], "user_load": [], "errors": []}
        for q in self.pool[:n]:
            try:
                r0 = self.client.query(
                    self.coll,
                    filter=f'tenant_id == "{q["tenant"]}" and user_id == "{q["user"]}"',
                    output_fields=["id"],
                    consistency_level="Strong",
                    **self.pkw(q["tenant"]),
                )
                out["user_load"].append(sorted(h["id"] for h in r0))
            except Exception as e:
                out["user_load"].append(None)
                out["errors"].append(short_err(e))
            kinds = [("dense", "embedding", q["vec"], "COSINE")]
            if not self.dense_only:
                kinds.append(("bm25", "sparse", q["text"], "BM25"))
            for kind, field, data, metric in kinds:
                try:
                    r = self.client.search(
                        self.coll,
                        data=[data],
                        anns_field=field,
                        limit=10,
                        filter=hot_filter(q["tenant"], q["user"]),
                        output_fields=["id"],
                        search_params=self.search_params
                        if kind == "dense"
                        else {"metric_type": metric},
                        consistency_level="Strong",
                        **self.pkw(q["tenant"]),
                    )
                    out[kind].append([h["id"] for h in r[0]])
                except Exception as e:
                    out[kind].append(None)
                    out["errors"].append(short_err(e))
        return out

    def reopen_probe(self) -> dict[str, Any]:
        """In a fresh process on an existing database: open time and first search."""
        res: dict[str, Any] = {"open_s": self.open_s}
        t0 = time.perf_counter()
        try:
            self.client.load_collection(self.coll)
            res["load_collection_s"] = time.perf_counter() - t0
        except Exception as e:
            res["load_collection_error"] = short_err(e)
        t1 = time.perf_counter()
        try:
            res["first_search_hits"] = self.dense(self.pool[0])
            res["first_search_s"] = time.perf_counter() - t1
        except Exception as e:
            res["first_search_error"] = short_err(e)
        res["rss"] = self.rss()
        res["rss_baseline"] = self.rss_baseline
        return res

    def filter_order(self, n: int) -> dict[str, Any]:
        """Correctness: does `<field> == X and id in [...]` find every row (vs ids first)?

        Each pool query carries 10 ids of its tenant (ground truth from the generator).
        Ends with one delete by the tenant-first filter, to see whether it deletes anything.
        """
        c = self.client
        counts: dict[str, int] = {}
        wrong_tenants: set[str] = set()
        bad_q: dict[str, Any] | None = None

        def q_count(flt: str, tenant: str) -> int:
            return len(
                c.query(
                    self.coll,
                    filter=flt,
                    output_fields=["id"],
                    consistency_level="Strong",
                    **self.pkw(tenant),
                )
            )

        for q in self.pool[:n]:
            t = q["tenant"]
            lst = ", ".join(f'"{i}"' for i in q["ids"])
            nums = sorted(int(i[1:]) for i in q["ids"])
            lo, hi = make_id("m", nums[0]), make_id("m", nums[-1])
            tn = int(t[1:])
            in_range = sum(1 for i in range(nums[0], nums[-1] + 1) if i % self.gen.tenants == tn)
            cases = {
                "tenant_then_ids": (f'tenant_id == "{t}" and id in [{lst}]', 10),
                "ids_then_tenant": (f'id in [{lst}] and tenant_id == "{t}"', 10),
                "status_then_ids": (f"status >= 0 and id in [{lst}]", 10),
                "tenant_then_paren_ids": (f'tenant_id == "{t}" and (id in [{lst}])', 10),
                "tenant_then_id_eq": (f'tenant_id == "{t}" and id == "{lo}"', 1),
                "tenant_then_id_range": (
                    f'tenant_id == "{t}" and id >= "{lo}" and id <= "{hi}"',
                    in_range,
                ),
                "id_range_then_tenant": (
                    f'id >= "{lo}" and id <= "{hi}" and tenant_id == "{t}"',
                    in_range,
                ),
            }
            for k, (flt, expected) in cases.items():
                ok = q_count(flt, t) == expected
                counts[k] = counts.get(k, 0) + ok
                if k == "tenant_then_ids" and not ok:
                    wrong_tenants.add(t)
                    bad_q = bad_q or q
            got = c.get(self.coll, ids=q["ids"], output_fields=["id", "tenant_id"])
            counts["get_ids"] = counts.get("get_ids", 0) + (len(got) == len(q["ids"]))
            r = c.search(
                self.coll,
                data=[q["vec"]],
                anns_field="embedding",
                limit=20,
                filter=cases["tenant_then_ids"][0],
                output_fields=["id"],
                consistency_level="Strong",
                **self.pkw(t),
            )
            counts["search_tenant_then_ids"] = counts.get("search_tenant_then_ids", 0) + (
                len(r[0]) == len(q["ids"])
            )
        out: dict[str, Any] = {
            "queries": n,
            "correct": counts,
            "wrong_tenants": sorted(wrong_tenants),
        }
        target = bad_q or self.pool[0]
        lst = ", ".join(f'"{i}"' for i in target["ids"])
        t = target["tenant"]
        try:
            c.delete(self.coll, filter=f'tenant_id == "{t}" and id in [{lst}]', **self.ikw(t))
            out["delete_tenant_then_ids_remaining"] = q_count(
                f'id in [{lst}] and tenant_id == "{t}"', t
            )
            c.delete(self.coll, filter=f'id in [{lst}] and tenant_id == "{t}"', **self.ikw(t))
            out["delete_ids_then_tenant_remaining"] = q_count(
                f'id in [{lst}] and tenant_id == "{t}"', t
            )
        except Exception as e:
            out["delete_error"] = short_err(e)
        return out

    def stats(self) -> dict[str, Any]:
        with contextlib.suppress(Exception):
            self.client.flush(self.coll)
        return {"disk": path_size(self.dbpath), "rss": self.rss()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def worker_main(cfg: dict[str, Any]) -> None:
    # Keep the protocol channel clean: anything printed by libraries goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(obj: dict[str, Any]) -> None:
        proto.write(MARK + json.dumps(obj) + "\n")
        proto.flush()

    try:
        if cfg.get("checks"):
            reply({"ok": True, "result": run_checks(cfg)})
            return
        w = Worker(cfg)
        reply({"ok": True, "result": {"version": w.version(), "open_s": w.open_s}})
        for line in sys.stdin:
            cmd = json.loads(line)
            try:
                if cmd["cmd"] == "load":
                    result: Any = w.load()
                elif cmd["cmd"] == "op":
                    result = w.run_op(cmd["op"], cmd["conc"], cmd["seconds"], cmd["round"])
                elif cmd["cmd"] == "verify":
                    result = w.verify(cmd["n"])
                elif cmd["cmd"] == "filter_order":
                    result = w.filter_order(cmd["n"])
                elif cmd["cmd"] == "reopen":
                    result = w.reopen_probe()
                elif cmd["cmd"] == "stats":
                    result = w.stats()
                elif cmd["cmd"] == "quit":
                    w.close()
                    reply({"ok": True, "result": None})
                    return
                else:
                    raise ValueError(cmd)
                reply({"ok": True, "result": result})
            except Exception as e:
                traceback.print_exc()
                reply({"ok": False, "error": short_err(e)})
    except Exception as e:
        traceback.print_exc()
        reply({"ok": False, "error": short_err(e)})


# --------------------------------------------------------------------------- feature checks


def run_checks(cfg: dict[str, Any]) -> dict[str, Any]:
    from pymilvus import MilvusClient

    base = cfg["dbdir"]
    out: dict[str, Any] = {"version": lite_version()}
    gen = DataGen(cfg["seed"], 400, 4, 5)

    def step(name: str, res: dict[str, Any], fn: Callable[[], Any]) -> Any:
        try:
            v = fn()
            res[name] = {"ok": True, "value": jsonable(v)}
            return v
        except Exception as e:
            res[name] = {"ok": False, "error": short_err(e)}
            return None

    def rows_for_tenant(t: int) -> list[dict[str, Any]]:
        return gen.rows_for(gen.rows_by_tenant[t])

    q_t0 = gen.queries(1)[0]
    t0name = tenant_name(0)
    u_any = rows_for_tenant(0)[0]["user_id"]

    def dense_filter(client: Any, flt: str, **kw: Any) -> list[str]:
        r = client.search(
            COLLECTION,
            data=[q_t0["vec"]],
            anns_field="embedding",
            limit=50,
            filter=flt,
            output_fields=["id", "tenant_id"],
            consistency_level="Strong",
            **kw,
        )
        return [*sorted({h["tenant_id"] for h in r[0]}), f"hits={len(r[0])}"]

    # 1. partition key layout ------------------------------------------------------------
    res: dict[str, Any] = {}
    out["partition_key"] = res
    c = MilvusClient(os.path.join(base, "pk.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_key"))
    step(
        "insert",
        res,
        lambda: sum(c.insert(COLLECTION, rows_for_tenant(t))["insert_count"] for t in range(4)),
    )
    step("flush", res, lambda: c.flush(COLLECTION))
    step("list_partitions", res, lambda: len(c.list_partitions(COLLECTION)))
    step("search_filter_tenant_only", res, lambda: dense_filter(c, f'tenant_id == "{t0name}"'))
    step("search_filter_hot_path", res, lambda: dense_filter(c, hot_filter(t0name, u_any)))
    step("search_filter_without_tenant", res, lambda: dense_filter(c, f'user_id == "{u_any}"'))
    step(
        "bm25_filter_tenant",
        res,
        lambda: len(
            c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=10,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                consistency_level="Strong",
            )[0]
        ),
    )
    step(
        "query_filter_tenant",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_tenant",
        res,
        lambda: c.delete(COLLECTION, filter=f'tenant_id == "{tenant_name(3)}"'),
    )
    step(
        "count_after_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter='id != ""',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    with contextlib.suppress(Exception):
        c.close()

    # 2. partition per tenant ------------------------------------------------------------
    res = {}
    out["partition_per_tenant"] = res
    c = MilvusClient(os.path.join(base, "ppt.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_per_tenant"))
    step(
        "create_partitions",
        res,
        lambda: (
            [c.create_partition(COLLECTION, partition_name(tenant_name(t))) for t in range(4)]
            and len(c.list_partitions(COLLECTION))
        ),
    )
    step(
        "insert",
        res,
        lambda: sum(
            c.insert(COLLECTION, rows_for_tenant(t), partition_name=partition_name(tenant_name(t)))[
                "insert_count"
            ]
            for t in range(4)
        ),
    )
    step(
        "insert_into_missing_partition",
        res,
        lambda: c.insert(
            COLLECTION,
            [dict(rows_for_tenant(0)[0], id="missingpart0001")],
            partition_name="p_does_not_exist",
        )["insert_count"],
    )
    step(
        "search_missing_partition",
        res,
        lambda: dense_filter(c, 'id != ""', partition_names=["p_does_not_exist"]),
    )
    with contextlib.suppress(Exception):
        c.delete(COLLECTION, ids=["missingpart0001"])
    # no flush: read-your-writes at Strong
    step(
        "search_before_flush_tenant_partition",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{t0name}"', partition_names=[partition_name(t0name)]
        ),
    )
    step("flush", res, lambda: c.flush(COLLECTION))
    step(
        "search_partition_names",
        res,
        lambda: dense_filter(
            c, hot_filter(t0name, u_any), partition_names=[partition_name(t0name)]
        ),
    )
    step(
        "search_partition_wrong_tenant_filter",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{tenant_name(1)}"', partition_names=[partition_name(t0name)]
        ),
    )
    step(
        "bm25_partition_names",
        res,
        lambda: len(
            c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=10,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                partition_names=[partition_name(t0name)],
                consistency_level="Strong",
            )[0]
        ),
    )
    step(
        "query_partition_names",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{t0name}"',
                output_fields=["id"],
                partition_names=[partition_name(t0name)],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    ids_t1 = [r["id"] for r in rows_for_tenant(1)][:5]
    step(
        "delete_ids_partition_name",
        res,
        lambda: c.delete(COLLECTION, ids=ids_t1, partition_name=partition_name(tenant_name(1))),
    )
    step(
        "get_deleted_ids",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f"id in {json.dumps(ids_t1)}",
                output_fields=["id"],
                consistency_level="Strong",
            )
        ),
    )
    u_t2 = rows_for_tenant(2)[0]["user_id"]
    step(
        "count_user_t2_before",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'user_id == "{u_t2}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_partition_name",
        res,
        lambda: c.delete(
            COLLECTION,
            filter=f'tenant_id == "{tenant_name(2)}" and user_id == "{u_t2}"',
            partition_name=partition_name(tenant_name(2)),
        ),
    )
    step(
        "count_user_t2_after",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'user_id == "{u_t2}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_wrong_partition",
        res,
        lambda: c.delete(
            COLLECTION,
            filter=f'tenant_id == "{tenant_name(2)}"',
            partition_name=partition_name(tenant_name(0)),
        ),
    )
    step(
        "count_t2_after_wrong_partition_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{tenant_name(2)}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "delete_filter_no_partition",
        res,
        lambda: c.delete(COLLECTION, filter=f'tenant_id == "{tenant_name(2)}"'),
    )
    step(
        "count_t2_after_delete",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter=f'tenant_id == "{tenant_name(2)}"',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "release_partition",
        res,
        lambda: c.release_partitions(COLLECTION, [partition_name(tenant_name(3))]),
    )
    step(
        "drop_partition", res, lambda: c.drop_partition(COLLECTION, partition_name(tenant_name(3)))
    )
    step(
        "count_after_drop",
        res,
        lambda: len(
            c.query(
                COLLECTION,
                filter='id != ""',
                output_fields=["id"],
                consistency_level="Strong",
                limit=1000,
            )
        ),
    )
    step(
        "search_after_drop_other_tenant",
        res,
        lambda: dense_filter(
            c, f'tenant_id == "{t0name}"', partition_names=[partition_name(t0name)]
        ),
    )

    # 3. upsert with a BM25 function ------------------------------------------------------
    res = {}
    out["upsert_bm25"] = res
    row = rows_for_tenant(0)[0]
    new = dict(row)
    new["content"] = "我喜欢喝茶 upsertmarker 乌龙茶"
    new["version"] = 2

    def copies(where: str) -> Callable[[], Any]:
        kw = {"partition_names": [partition_name(t0name)]} if where == "tenant_partition" else {}
        return lambda: [
            r["version"]
            for r in c.query(
                COLLECTION,
                filter=f'id == "{row["id"]}"',
                output_fields=["version"],
                consistency_level="Strong",
                **kw,
            )
        ]

    new1 = dict(new, version=2)
    step("upsert_no_partition_name", res, lambda: c.upsert(COLLECTION, [new1]))
    step("after_upsert_no_partition_versions_all", res, copies("all"))
    step("after_upsert_no_partition_versions_in_tenant_partition", res, copies("tenant_partition"))
    new["version"] = 3
    step(
        "upsert_partition_name",
        res,
        lambda: c.upsert(COLLECTION, [new], partition_name=partition_name(t0name)),
    )
    step("after_upsert_partition_versions_all", res, copies("all"))
    step("after_upsert_partition_versions_in_tenant_partition", res, copies("tenant_partition"))
    step(
        "query_after_upsert",
        res,
        lambda: c.query(
            COLLECTION,
            filter=f'id == "{row["id"]}"',
            output_fields=["content", "version"],
            consistency_level="Strong",
        ),
    )
    step(
        "bm25_finds_new_text",
        res,
        lambda: [
            h["id"]
            for h in c.search(
                COLLECTION,
                data=["upsertmarker"],
                anns_field="sparse",
                limit=5,
                output_fields=["id"],
                search_params={"metric_type": "BM25"},
                consistency_level="Strong",
            )[0]
        ],
    )
    step(
        "bm25_scores_sign",
        res,
        lambda: [
            round(float(h["distance"]), 4)
            for h in c.search(
                COLLECTION,
                data=["咖啡"],
                anns_field="sparse",
                limit=3,
                output_fields=["id"],
                consistency_level="Strong",
            )[0]
        ],
    )
    with contextlib.suppress(Exception):
        c.close()

    # 4. partition limit --------------------------------------------------------------------
    res = {}
    out["partition_limit"] = res
    c = MilvusClient(os.path.join(base, "plimit.db"))
    step("create", res, lambda: create_collection(c, COLLECTION, "partition_per_tenant"))
    target = cfg.get("partition_probe", 1100)
    budget = cfg.get("partition_probe_seconds", 240)
    created = 0
    p0 = time.perf_counter()
    err = None
    for k in range(target):
        try:
            c.create_partition(COLLECTION, f"p_{k:05d}")
            created += 1
        except Exception as e:
            err = short_err(e)
            break
        if time.perf_counter() - p0 > budget:
            err = f"stopped by time budget ({budget}s)"
            break
    res["created_ok"] = created
    res["first_error"] = err
    res["seconds"] = round(time.perf_counter() - p0, 2)
    step("list_partitions", res, lambda: len(c.list_partitions(COLLECTION)))
    if created:
        last = f"p_{created - 1:05d}"
        r0 = dict(rows_for_tenant(0)[0])
        step(
            "insert_last_partition",
            res,
            lambda: c.insert(COLLECTION, [r0], partition_name=last)["insert_count"],
        )
        step(
            "search_last_partition",
            res,
            lambda: len(
                c.search(
                    COLLECTION,
                    data=[q_t0["vec"]],
                    anns_field="embedding",
                    limit=5,
                    output_fields=["id"],
                    partition_names=[last],
                    consistency_level="Strong",
                )[0]
            ),
        )
    with contextlib.suppress(Exception):
        c.close()
    return out


# --------------------------------------------------------------------------- driver


class WorkerProc:
    def __init__(self, name: str, argv: list[str], logpath: str) -> None:
        self.name = name
        self.logfh = open(logpath, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.logfh,
            text=True,
            bufsize=1,
        )
        self.q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.q.put(line[len(MARK) :])
        self.q.put(None)

    def recv(self, timeout: float) -> dict[str, Any]:
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            return {"ok": False, "error": f"timeout after {timeout}s"}
        if line is None:
            return {"ok": False, "error": f"worker exited (rc={self.proc.poll()})"}
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, cmd: dict[str, Any]) -> str | None:
        """Send a command without waiting for the reply; an error text if that failed."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            return f"worker gone: {e}"
        return None

    def call(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        err = self.send(cmd)
        if err:
            return {"ok": False, "error": err}
        return self.recv(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.call({"cmd": "quit"}, 30)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.logfh.close()


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def probe_version(python: str) -> str:
    r = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v; print(v('milvus-lite'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.stdout.strip() or "unknown"


def probe_server_version(python: str, uri: str) -> str:
    code = (
        "import sys; from pymilvus import MilvusClient; "
        "print(MilvusClient(uri=sys.argv[1]).get_server_version())"
    )
    r = subprocess.run([python, "-c", code, uri], capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise SystemExit(f"cannot reach the Milvus server at {uri}: {r.stderr.strip()[-400:]}")
    return r.stdout.strip().splitlines()[-1]


def probe_pymilvus(python: str) -> str:
    r = subprocess.run(
        [python, "-c", "from importlib.metadata import version as v; print(v('pymilvus'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.stdout.strip() or "unknown"


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        info["mem_total_kb"] = int(fh.readline().split()[1])
    return info


def rotate(xs: list[Any], k: int) -> Iterator[Any]:
    n = len(xs)
    for i in range(n):
        yield xs[(i + k) % n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--users-per-tenant", type=int, default=100)
    ap.add_argument("--layout", nargs="+", default=list(LAYOUTS), choices=[*LAYOUTS, "all"])
    ap.add_argument(
        "--python",
        nargs="+",
        default=[sys.executable],
        help="interpreters (one per venv / milvus-lite version) to compare",
    )
    ap.add_argument(
        "--skip", nargs="*", default=[], help="variants to leave out, e.g. 2.5.1/partition_key"
    )
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--concurrency", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--op-seconds",
        type=float,
        default=3.0,
        help="wall time per (op, concurrency, variant) in each round",
    )
    ap.add_argument(
        "--verify",
        type=int,
        default=30,
        help="compare the ids of this many dense/BM25 searches across variants",
    )
    ap.add_argument(
        "--filter-order",
        type=int,
        default=40,
        help="queries for the `<field> and id in [...]` correctness check (0: skip)",
    )
    ap.add_argument(
        "--tenant-index",
        action="store_true",
        help="also give tenant_id an INVERTED scalar index (as user_id has)",
    )
    ap.add_argument(
        "--dense-only",
        action="store_true",
        help="schema without analyzer, sparse field, BM25 function and scalar index, on every "
        "variant (what a Milvus 2.3 server can hold); op bm25 is then left out",
    )
    ap.add_argument(
        "--server-uri",
        help="also run variants on this Milvus server (e.g. http://127.0.0.1:19530), one "
        "collection per layout",
    )
    ap.add_argument(
        "--server-layout",
        nargs="+",
        default=["partition_key", "filter_only"],
        choices=LAYOUTS,
        help="layouts to run on --server-uri",
    )
    ap.add_argument(
        "--server-index",
        nargs="+",
        default=["FLAT"],
        choices=list(SERVER_INDEXES),
        help="dense index(es) of the server variants (one variant per layout x index): FLAT; "
        "IVF_FLAT nlist 1024, nprobe 32; HNSW M 16, efConstruction 128, ef 64",
    )
    ap.add_argument(
        "--prefetch",
        action="store_true",
        help="generate the next load batch in a thread while the current one is inserted",
    )
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="server variants: time the ops on the collections an earlier run left there "
        "(no load; the load figures are those of that run)",
    )
    ap.add_argument(
        "--parallel-load",
        action="store_true",
        help="load all variants at the same time (server runs: the client is the bottleneck)",
    )
    ap.add_argument(
        "--rounds-deadline",
        metavar="HH:MM",
        help="start no further round after this UTC time (the rounds run so far are kept)",
    )
    ap.add_argument(
        "--index-timeout",
        type=float,
        default=1800.0,
        help="seconds to wait after a server load for the index to be built and served",
    )
    ap.add_argument(
        "--server-python",
        default=sys.executable,
        help="interpreter (pymilvus) for the server variants' workers",
    )
    ap.add_argument("--server-data", default="", help="the server's data dir (disk figures)")
    ap.add_argument("--server-pid", type=int, default=0, help="the server's pid (RSS figures)")
    ap.add_argument("--checks", action="store_true", help="also run the feature checks")
    ap.add_argument("--checks-only", action="store_true")
    ap.add_argument("--partition-probe", type=int, default=1100)
    ap.add_argument(
        "--cooldown",
        type=float,
        default=15.0,
        help="idle seconds between variant loads (thermal throttling)",
    )
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--workdir", default="/tmp/bench_storage")
    ap.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    ap.add_argument("--out", default="results.json")
    ap.add_argument("--report", metavar="JSON", help="print the tables of an earlier run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        worker_main(json.loads(args.worker))
        return
    if args.report:
        with open(args.report) as fh:
            print(markdown(json.load(fh)))
        return

    layouts = list(LAYOUTS) if "all" in args.layout else args.layout
    script = os.path.abspath(__file__)
    started = dt.datetime.now(dt.UTC)
    results: dict[str, Any] = {
        "started_utc": started.isoformat(timespec="seconds"),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "machine": machine_info(),
        "params": {k: v for k, v in vars(args).items() if k != "worker"},
        "now_ms": NOW_MS,
    }
    versions = {py: probe_version(py) for py in args.python}
    results["interpreters"] = versions
    if args.server_uri:
        results["server"] = {
            "uri": args.server_uri,
            "version": probe_server_version(args.server_python, args.server_uri),
            "python": args.server_python,
            "pymilvus": probe_pymilvus(args.server_python),
        }
    results["load_average"] = {"start": os.getloadavg()}
    ops = [o for o in args.ops if not (args.dense_only and o == "bm25")]
    logdir = os.path.join(args.workdir, "logs")
    os.makedirs(logdir, exist_ok=True)

    if args.checks or args.checks_only:
        results["checks"] = {}
        for py, ver in versions.items():
            d = os.path.join(args.workdir, f"checks-{ver}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            log(f"feature checks on milvus-lite {ver}")
            cfg = {
                "checks": True,
                "dbdir": d,
                "seed": args.seed,
                "partition_probe": args.partition_probe,
            }
            w = WorkerProc(
                f"checks-{ver}",
                [py, script, "--worker", json.dumps(cfg)],
                os.path.join(logdir, f"checks-{ver}.log"),
            )
            r = w.recv(900)
            w.proc.wait(timeout=60)
            w.logfh.close()
            results["checks"][ver] = r.get("result") if r.get("ok") else r
            if not args.keep:
                shutil.rmtree(d, ignore_errors=True)
        if args.checks_only:
            finish(results, args.out)
            return

    def worker_cfg(name: str, lay: str, index: str) -> dict[str, Any]:
        dbdir = os.path.join(args.workdir, name.replace("/", "_"))
        cfg: dict[str, Any] = {
            "name": name,
            "layout": lay,
            "dbpath": os.path.join(dbdir, "bench.db"),
            "seed": args.seed,
            "rows": args.rows,
            "tenants": args.tenants,
            "users": args.users_per_tenant,
            "tenant_index": args.tenant_index,
            "dense_only": args.dense_only,
            "prefetch": args.prefetch,
            "reuse": args.reuse,
        }
        if name.startswith("server-"):
            cfg.update(
                uri=args.server_uri,
                collection=f"{COLLECTION}_{lay}" + ("" if index == "FLAT" else f"_{index.lower()}"),
                dbpath=args.server_data or dbdir,
                server_pid=args.server_pid or None,
                index_type=index,
                index_timeout=args.index_timeout,
            )
        return cfg

    suffix = ("+tenant_index" if args.tenant_index else "") + (
        "+dense_only" if args.dense_only else ""
    )
    variants: list[tuple[str, str, str, str]] = []  # (name, python, layout, dense index)
    for py, ver in versions.items():
        for lay in layouts:
            name = f"{ver}/{lay}{suffix}"
            if name not in args.skip:
                variants.append((name, py, lay, "FLAT"))
    if args.server_uri:
        # The index goes into the name unless every server variant is FLAT (older runs).
        tag = args.server_index != ["FLAT"]
        for lay in args.server_layout:
            for index in args.server_index:
                name = f"server-{results['server']['version'].lstrip('v')}/{lay}"
                name += (f"+{index}" if tag else "") + suffix
                if name not in args.skip:
                    variants.append((name, args.server_python, lay, index))
    results["variants"] = [v[0] for v in variants]
    workers: dict[str, WorkerProc] = {}
    results["load"] = {}
    try:
        pending: list[tuple[str, WorkerProc, dict[str, Any] | None]] = []

        def loaded(name: str, w: WorkerProc, r: dict[str, Any]) -> None:
            results["load"][name] = r.get("result") if r.get("ok") else r
            if r.get("ok"):
                r["result"]["load_average_after"] = os.getloadavg()
                r["result"]["loaded_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            log(f"loaded {name}: {json.dumps(results['load'][name])[:300]}")
            if r.get("ok") and not (r.get("result") or {}).get("unsupported"):
                workers[name] = w
            else:
                w.stop()

        for name, py, lay, index in variants:
            dbdir = os.path.join(args.workdir, name.replace("/", "_"))
            shutil.rmtree(dbdir, ignore_errors=True)
            os.makedirs(dbdir)
            cfg = worker_cfg(name, lay, index)
            log(f"starting worker {name}")
            w = WorkerProc(
                name,
                [py, script, "--worker", json.dumps(cfg)],
                os.path.join(logdir, name.replace("/", "_") + ".log"),
            )
            hello = w.recv(300)
            if not hello.get("ok"):
                results["load"][name] = hello
                log(f"worker {name} failed to start: {hello}")
                w.stop()
                continue
            if args.parallel_load:
                # All variants load at once (the client side of a load is one busy
                # Python process; a server has cores to spare): rates are then shared.
                log(f"loading {args.rows} rows into {name} (parallel)")
                send_err = w.send({"cmd": "load"})
                pending.append((name, w, {"ok": False, "error": send_err} if send_err else None))
                continue
            # Load one variant at a time (loading saturates the cores); let the machine cool
            # down between loads so each starts from the same thermal state.
            if workers and args.cooldown:
                time.sleep(args.cooldown)
            log(f"loading {args.rows} rows into {name}")
            loaded(name, w, w.call({"cmd": "load"}, 3600))
        for name, w, failed in pending:
            loaded(name, w, failed or w.recv(3 * 3600))
        if pending:
            results["load_parallel"] = True
            if args.cooldown:
                time.sleep(args.cooldown)
        names = list(workers)

        if args.verify and names:
            results["verify"] = {}
            for name in names:
                r = workers[name].call({"cmd": "verify", "n": args.verify}, 600)
                results["verify"][name] = r.get("result") if r.get("ok") else r

        # Timed ops, interleaved: for each round, for each op and concurrency, every variant
        # in turn; the variant order rotates each round.
        raw: dict[str, dict[str, list[dict[str, Any]]]] = {n: {} for n in names}
        results["load_average"]["ops_start"] = os.getloadavg()
        for rnd in range(args.rounds):
            if rnd and args.rounds_deadline:
                hh, mm = (int(x) for x in args.rounds_deadline.split(":"))
                now = dt.datetime.now(dt.UTC)
                if (now.hour, now.minute) >= (hh, mm):
                    results["rounds_cut"] = {"run": rnd, "asked": args.rounds, "at": str(now)}
                    log(f"rounds deadline {args.rounds_deadline} UTC passed: {rnd} round(s) run")
                    break
            results["load_average"][f"round_{rnd}"] = os.getloadavg()
            for op in ops:
                concs = [1] if op == "dense_unflushed" else args.concurrency
                for conc in concs:
                    for name in rotate(names, rnd):
                        r = workers[name].call(
                            {
                                "cmd": "op",
                                "op": op,
                                "conc": conc,
                                "seconds": args.op_seconds,
                                "round": rnd,
                            },
                            max(300, args.op_seconds * 60),
                        )
                        res = r.get("result") if r.get("ok") else {"worker_error": r}
                        raw[name].setdefault(f"{op}@c{conc}", []).append(res or {})
                        res = res or {}
                        err = res.get("first_error") or res.get("worker_error")
                        log(f"round {rnd} {op} c{conc} {name}: n={res.get('n')} err={err}")
        results["raw"] = raw
        results["load_average"]["ops_end"] = os.getloadavg()
        if args.filter_order and names:
            # after the timed ops: it ends with a delete
            results["filter_order"] = {}
            for name in names:
                r = workers[name].call({"cmd": "filter_order", "n": args.filter_order}, 900)
                results["filter_order"][name] = r.get("result") if r.get("ok") else r
                log(f"filter order {name}: {json.dumps(results['filter_order'][name])[:300]}")
        results["final"] = {}
        for name in names:
            r = workers[name].call({"cmd": "stats"}, 600)
            results["final"][name] = r.get("result") if r.get("ok") else r
        # Restart cost: stop every worker, then reopen each database in a fresh process.
        for w in workers.values():
            w.stop()
        results["reopen"] = {}
        for name, py, lay, index in variants:
            if name not in workers:
                continue
            cfg = worker_cfg(name, lay, index)
            log(f"reopening {name}")
            w = WorkerProc(
                name,
                [py, script, "--worker", json.dumps(cfg)],
                os.path.join(logdir, name.replace("/", "_") + "-reopen.log"),
            )
            hello = w.recv(600)
            r = w.call({"cmd": "reopen"}, 600) if hello.get("ok") else hello
            results["reopen"][name] = r.get("result") if r.get("ok") else r
            log(f"reopen {name}: {json.dumps(results['reopen'][name])[:300]}")
            w.stop()
    finally:
        for w in workers.values():
            with contextlib.suppress(Exception):
                w.stop()
        if not args.keep:
            for name, _py, _lay, _index in variants:
                shutil.rmtree(
                    os.path.join(args.workdir, name.replace("/", "_")), ignore_errors=True
                )
    results["summary"] = summarise(results)
    results["summary"]["verify"] = verify_summary(results.get("verify", {}))
    results["finished_utc"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    finish(results, args.out)


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    raw: dict[str, dict[str, list[dict[str, Any]]]] = results.get("raw", {})
    names = list(raw)
    ref = names[0] if names else None
    summary: dict[str, Any] = {"reference": ref, "ops": {}}
    for name in names:
        for key, runs in raw[name].items():
            lat = [x for r in runs for x in r.get("lat_ms", [])]
            el = sum(r.get("elapsed_s", 0.0) for r in runs)
            n = sum(r.get("n", 0) for r in runs)
            batch = 100 if key.startswith("insert100") else 1
            errs = [r.get("first_error") or r.get("worker_error") for r in runs]
            errs = [e for e in errs if e]
            entry = {
                "n": n,
                "p50_ms": pct(lat, 0.5),
                "p90_ms": pct(lat, 0.9),
                "p99_ms": pct(lat, 0.99),
                "calls_per_s": n / el if el else None,
                "rows_per_s": n * batch / el if el and key.startswith("insert") else None,
                "mean_hits": statistics.fmean(
                    [r["mean_hits"] for r in runs if r.get("mean_hits") is not None]
                )
                if any(r.get("mean_hits") is not None for r in runs)
                else None,
                "per_round_calls_per_s": [
                    (r.get("n", 0) / r["elapsed_s"]) if r.get("elapsed_s") else None for r in runs
                ],
                "per_round_p50_ms": [pct(r.get("lat_ms", []), 0.5) for r in runs],
                "error": errs[0] if errs else None,
            }
            summary["ops"].setdefault(key, {})[name] = entry
    # side-by-side ratios against the reference variant, per round, then the median
    for _key, per in summary["ops"].items():
        if ref is None or ref not in per:
            continue
        base = per[ref]
        for _name, e in per.items():
            tr = [
                a / b
                for a, b in zip(
                    e["per_round_calls_per_s"], base["per_round_calls_per_s"], strict=False
                )
                if a and b
            ]
            lr = [
                a / b
                for a, b in zip(e["per_round_p50_ms"], base["per_round_p50_ms"], strict=False)
                if a and b
            ]
            e["throughput_ratio_vs_ref"] = statistics.median(tr) if tr else None
            e["p50_ratio_vs_ref"] = statistics.median(lr) if lr else None
    return summary


def fmt(x: Any, nd: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return str(x)


def markdown(results: dict[str, Any]) -> str:
    lines: list[str] = []
    load = results.get("load", {})
    if load:
        lines += [
            "After loading, and at the end of the run (rows inserted by the timed ops included):",
            "",
            "| variant | rows | insert s | rows/s | flush s | index wait s | create to served s "
            "| disk MiB | RSS MiB (self+child) | rows at end | disk MiB at end | RSS MiB at end |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        raw = results.get("raw", {})
        for name, r in load.items():
            if isinstance(r, dict) and r.get("unsupported"):
                msg = str(r["unsupported"])[:120].replace("|", "/").replace("\n", " ")
                lines.append(f"| {name} | not supported: {msg} |")
                continue
            if not isinstance(r, dict) or "insert_s" not in r:
                lines.append(f"| {name} | error: {str(r)[:120]} |")
                continue
            mib = 2**20
            rs = r["rss"]
            end_rows = r["rows"]
            for key, runs in raw.get(name, {}).items():
                for run in runs:
                    if key.startswith("insert"):
                        end_rows += run.get("n", 0) * (100 if key.startswith("insert100") else 1)
                    end_rows += run.get("pre_insert_rows", 0)
            fin = results.get("final", {}).get(name) or {}
            fd = (fin.get("disk") or {}).get("allocated_bytes")
            fr = fin.get("rss") or {}
            fr_tot = (fr["self_bytes"] + fr["children_bytes"]) / mib if fr else None
            wall = f" (wall {fmt(r['rows_per_s_wall'], 0)})" if r.get("rows_per_s_wall") else ""
            idx = r.get("index") or {}
            idx_wait = fmt(idx.get("wait_s")) + (" (timeout)" if idx.get("timeout") else "")
            lines.append(
                f"| {name} | {r['rows']:,} | {fmt(r['insert_s'])} | "
                f"{fmt(r['rows_per_s'], 0)}{wall} | "
                f"{fmt(r['flush_s'], 2)} | {idx_wait} | {fmt(r.get('since_create_s'))} | "
                f"{fmt(r['disk']['allocated_bytes'] / mib)} | "
                f"{fmt(rs['self_bytes'] / mib, 0)}+{fmt(rs['children_bytes'] / mib, 0)} | "
                f"{end_rows:,} | {fmt(fd / mib if fd else None)} | {fmt(fr_tot, 0)} |"
            )
        lines.append("")
    reopen = results.get("reopen", {})
    if reopen:
        lines += [
            "| variant | reopen: open s | load_collection s | first search s | RSS MiB |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, r in reopen.items():
            rs = r.get("rss") or {}
            tot = (rs.get("self_bytes", 0) + rs.get("children_bytes", 0)) / 2**20
            lines.append(
                f"| {name} | {fmt(r.get('open_s'), 2)} | "
                f"{fmt(r.get('load_collection_s'), 2)} | "
                f"{fmt(r.get('first_search_s'), 2)} | {fmt(tot, 0)} |"
            )
        lines.append("")
    la = results.get("load_average")
    if la:
        la_text = ", ".join(f"{k} {' / '.join(f'{x:.2f}' for x in v)}" for k, v in la.items())
        lines += [f"Load average (1/5/15 min): {la_text}", ""]
    ops = results.get("summary", {}).get("ops", {})
    if ops:
        ref = results["summary"].get("reference")
        lines += [
            f"Ratios are medians of per-round ratios against `{ref}` (interleaved rounds).",
            "",
            "| op | variant | n | p50 ms | p90 ms | p99 ms | calls/s | rows/s | x thrpt "
            "| x p50 | hits | error |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for key, per in ops.items():
            for name, e in per.items():
                err = (e["error"] or "")[:80].replace("|", "/")
                lines.append(
                    f"| {key} | {name} | {e['n']} | {fmt(e['p50_ms'])} | "
                    f"{fmt(e.get('p90_ms'))} | {fmt(e['p99_ms'])} | "
                    f"{fmt(e['calls_per_s'])} | {fmt(e['rows_per_s'], 0)} | "
                    f"{fmt(e.get('throughput_ratio_vs_ref'), 2)} | "
                    f"{fmt(e.get('p50_ratio_vs_ref'), 2)} | {fmt(e['mean_hits'])} | {err} |"
                )
        lines.append("")
    fo = results.get("filter_order", {})
    if fo:
        keys: list[str] = []
        for r in fo.values():
            for k in r.get("correct", {}):
                if k not in keys:
                    keys.append(k)
        lines += [
            "Filter-order correctness (queries returning exactly the expected rows; "
            "`*_then_*` = order of the terms in the expression):",
            "",
            "| variant | " + " | ".join(keys) + " | left after delete(tenant first) "
            "| left after delete(ids first) |",
            "|---|" + "---:|" * (len(keys) + 2),
        ]
        for name, r in fo.items():
            if "correct" not in r:
                lines.append(f"| {name} | error: {str(r)[:100]} |")
                continue
            nq = r["queries"]
            cells = [f"{r['correct'].get(k, 0)}/{nq}" for k in keys]
            lines.append(
                f"| {name} | " + " | ".join(cells) + " | "
                f"{fmt(r.get('delete_tenant_then_ids_remaining'))} | "
                f"{fmt(r.get('delete_ids_then_tenant_remaining'))} |"
            )
        lines.append("")
    for v in verify_summary(results.get("verify", {})):
        recall = (
            f", recall {v['recall']:.3f} of the reference's {v['ref_ids']} ids"
            if v["recall"] is not None
            else ""
        )
        lines.append(
            f"- verify {v['kind']}: {v['variant']} vs {v['reference']}: same ids in the same "
            f"order for {v['same_order']}/{v['queries']} queries, same set for "
            f"{v['same_set']}/{v['queries']}{recall}"
        )
    if results.get("verify"):
        lines.append("")
    return "\n".join(lines)


def verify_summary(ver: dict[str, Any]) -> list[dict[str, Any]]:
    """Each variant's ids against the first FLAT variant's (exact search: the true top-10).

    `recall` = ids of the reference found by the variant / ids the reference returned.
    """
    out: list[dict[str, Any]] = []
    names = [n for n in ver if isinstance(ver[n], dict)]
    if not names:
        return out
    exact = [n for n in names if "+HNSW" not in n and "+IVF_FLAT" not in n]
    ref = exact[0] if exact else names[0]
    for kind in ("dense", "bm25", "user_load"):
        for name in names:
            if name == ref:
                continue
            a = ver[ref].get(kind) or []
            b = ver[name].get(kind) or []
            if not a:
                continue
            pairs = [(x, y) for x, y in zip(a, b, strict=False) if x is not None]
            ref_ids = sum(len(x) for x, _y in pairs)
            found = sum(len(set(x) & set(y or [])) for x, y in pairs)
            out.append(
                {
                    "kind": kind,
                    "variant": name,
                    "reference": ref,
                    "queries": len(a),
                    "same_order": sum(1 for x, y in pairs if x == y),
                    "same_set": sum(1 for x, y in pairs if y is not None and set(x) == set(y)),
                    "ref_ids": ref_ids,
                    "recall": found / ref_ids if ref_ids else None,
                }
            )
    return out


def finish(results: dict[str, Any], out: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1, ensure_ascii=False)
    if "checks" in results:
        for ver, chk in results["checks"].items():
            print(f"\n### Feature checks, milvus-lite {ver}\n")
            print("```json")
            print(json.dumps(chk, indent=1, ensure_ascii=False)[:20000])
            print("```")
    print(markdown(results))
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
