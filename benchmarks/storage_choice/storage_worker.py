"""The worker (`--worker`, started by the driver): owns one database and one
`MilvusClient`, loads the seeded data and answers JSON-line commands on its stdin.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_checks import run_checks
    from benchmarks.storage_choice.storage_common import (
        MARK,
        lite_version,
        log,
        path_size,
        rss,
        short_err,
        tree_rss,
    )
    from benchmarks.storage_choice.storage_correctness import filter_order, verify
    from benchmarks.storage_choice.storage_data import DataGen, partition_name, tenant_name
    from benchmarks.storage_choice.storage_ops import TimedOps
    from benchmarks.storage_choice.storage_schema import (
        COLLECTION,
        SERVER_INDEXES,
        create_collection,
    )
else:  # run as a script: sys.path[0] is this folder
    from storage_checks import run_checks
    from storage_common import MARK, lite_version, log, path_size, rss, short_err, tree_rss
    from storage_correctness import filter_order, verify
    from storage_data import DataGen, partition_name, tenant_name
    from storage_ops import TimedOps
    from storage_schema import COLLECTION, SERVER_INDEXES, create_collection


class Worker(TimedOps):
    """One database and one `MilvusClient`; answers the driver's commands."""

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

    def stats(self) -> dict[str, Any]:
        with contextlib.suppress(Exception):
            self.client.flush(self.coll)
        return {"disk": path_size(self.dbpath), "rss": self.rss()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


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
                    result = verify(w, cmd["n"])
                elif cmd["cmd"] == "filter_order":
                    result = filter_order(w, cmd["n"])
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
