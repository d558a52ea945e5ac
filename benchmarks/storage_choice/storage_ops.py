"""The timed operations (`--ops`): dense, bm25, get, insert1, insert100,
dense_unflushed, dense_bounded and user_load, each run by `--concurrency` threads sharing
one sync `MilvusClient` for `--op-seconds`.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import short_err
    from benchmarks.storage_choice.storage_data import DataGen, make_id, partition_name
    from benchmarks.storage_choice.storage_schema import OUTPUT_FIELDS, SCALAR_FIELDS, hot_filter
else:  # run as a script: sys.path[0] is this folder
    from storage_common import short_err
    from storage_data import DataGen, make_id, partition_name
    from storage_schema import OUTPUT_FIELDS, SCALAR_FIELDS, hot_filter


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


class TimedOps:
    """One variant's collection and the calls the study times on it (`--ops`).

    `Worker` (storage_worker) opens the client and sets these attributes.
    """

    layout: str
    coll: str
    dense_only: bool
    search_params: dict[str, Any]
    gen: DataGen
    pool: list[dict[str, Any]]
    insert_counter: int
    insert_lock: threading.Lock
    client: Any

    # -- helpers (partition arguments and fresh ids, for every layout)
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
