"""A Strong read's latency against the Milvus server's time tick, with the tick's CPU cost.

    PYTHONPATH=. python benchmarks/storage_choice/tick_probe.py --ticks 20,10,5,20 \
        --out benchmarks/storage_choice/results/milvus-server-2.3.5-tick-probe.json

For each tick (`proxy.timeTickInterval`, ms) a fresh PyPI Milvus 2.3.5 standalone
server (tests.services.MilvusServerProcess) holds 100k rows of 2,000 users (512-d,
FLAT); 200 users' rows are read one at a time at Strong, Bounded and Eventually
consistency, in rotating order. The server's CPU (utime+stime of its process group)
is sampled idle for 30 s after the load and over the timed reads, and 50 writes are
each read back at once at Strong (all must be found).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import DataType, MilvusClient

from tests.services import MilvusServerProcess, milvus_server_binary

COLL = "tick_probe"
IDLE_WINDOW_S = 30
RAW_N = 50
CLK_TCK = os.sysconf("SC_CLK_TCK")
DIM = 512
N_USERS = 2000
PER_USER = 50
BATCH = 2000
N_QUERY_USERS = 200
WARMUP = 30
LEVELS = ("Strong", "Bounded", "Eventually")
OUTPUT_FIELDS = ["id", "tenant_id", "user_id", "content", "embedding"]
SEED = 20240607


def pgroup_cpu(pgid: int) -> tuple[float, int]:
    """CPU seconds (utime+stime) summed over live processes in process group pgid."""
    total = 0
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(")") + 2 :].split()
        # fields[0] is field 3 (state): pgrp is field 5, utime 14, stime 15
        if int(fields[2]) != pgid:
            continue
        total += int(fields[11]) + int(fields[12])
        n += 1
    return total / CLK_TCK, n


def measure_idle(pgid: int, window_s: float) -> dict[str, Any]:
    c0, n0 = pgroup_cpu(pgid)
    t0 = time.monotonic()
    slices = []
    prev_c, prev_t = c0, t0
    while time.monotonic() - t0 < window_s - 0.01:
        time.sleep(min(5.0, window_s - (time.monotonic() - t0)))
        c, _ = pgroup_cpu(pgid)
        t = time.monotonic()
        slices.append(round(100 * (c - prev_c) / (t - prev_t), 1))
        prev_c, prev_t = c, t
    c1, n1 = pgroup_cpu(pgid)
    wall = time.monotonic() - t0
    return {
        "window_s": round(wall, 2),
        "cpu_s": round(c1 - c0, 2),
        "pct_of_one_core": round(100 * (c1 - c0) / wall, 1),
        "pct_per_5s_slice": slices,
        "procs_in_group": [n0, n1],
    }


def read_after_write(client: MilvusClient, rng: np.random.Generator, tag: str) -> dict[str, Any]:
    """Insert one row for a fresh user, then at once query it at Strong; RAW_N times."""
    found = 0
    misses = []
    ins_ms: list[float] = []
    read_ms: list[float] = []
    for k in range(RAW_N):
        user = f"raw-{tag}-{k}"
        vec = rng.standard_normal(DIM).astype(np.float32)
        vec /= np.linalg.norm(vec)
        row = {
            "id": f"r-{tag}-{k}"[:32],
            "tenant_id": "t",
            "user_id": user,
            "content": f"read-after-write probe {k}",
            "embedding": vec.tolist(),
        }
        t0 = time.perf_counter()
        client.insert(COLL, [row])
        t1 = time.perf_counter()
        rows = client.query(
            COLL,
            filter=f'tenant_id == "t" and user_id == "{user}"',
            output_fields=["id", "user_id"],
            limit=10,
            consistency_level="Strong",
        )
        t2 = time.perf_counter()
        ins_ms.append((t1 - t0) * 1000)
        read_ms.append((t2 - t1) * 1000)
        if len(rows) == 1 and rows[0]["id"] == row["id"]:
            found += 1
        else:
            misses.append({"k": k, "rows": len(rows)})
    return {
        "found": found,
        "of": RAW_N,
        "misses": misses,
        "insert_ms": pct(ins_ms),
        "strong_read_ms": pct(read_ms),
    }


def wait_idle() -> float:
    """Waits until no other heavy job runs; returns seconds waited."""
    t0 = time.monotonic()
    while (
        subprocess.run(
            ["pgrep", "-f", "ci-clone|recalld_bench|benchmarks.million"],
            stdout=subprocess.DEVNULL,
        ).returncode
        == 0
    ):
        time.sleep(20)
    return time.monotonic() - t0


def pct(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {
        "n": int(a.size),
        "p50": round(float(np.percentile(a, 50)), 2),
        "p90": round(float(np.percentile(a, 90)), 2),
        "p99": round(float(np.percentile(a, 99)), 2),
        "mean": round(float(a.mean()), 2),
        "min": round(float(a.min()), 2),
        "max": round(float(a.max()), 2),
    }


def effective_yaml(data_dir: Path) -> dict[str, Any]:
    """Which timeTickInterval lines landed in the milvus.yaml the launcher wrote."""
    path = data_dir / "configs" / "milvus.yaml"
    text = path.read_text()
    sections: list[str] = []
    hits = []
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        m = re.match(r"^( *)([A-Za-z0-9_]+):", line)
        if not m:
            continue
        level = len(m.group(1)) // 2
        sections = [*sections[:level], m.group(2)]
        if "timetick" in m.group(2).lower():
            hits.append({"key": ".".join(sections), "line": line.strip()})
    return {"path": str(path), "timeTick_lines": hits}


def child_pids(pgid: int) -> list[dict[str, str]]:
    out = subprocess.run(
        ["ps", "-o", "pid=,pgid=,args=", "-g", str(pgid)], capture_output=True, text=True
    ).stdout
    return [{"ps": line.strip()[:200]} for line in out.splitlines() if line.strip()]


def build(client: MilvusClient, rng: np.random.Generator) -> dict[str, float]:
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("tenant_id", DataType.VARCHAR, max_length=512)
    schema.add_field("user_id", DataType.VARCHAR, max_length=512)
    schema.add_field("content", DataType.VARCHAR, max_length=32_768)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIM)
    params = client.prepare_index_params()
    params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    params.add_index("tenant_id", index_type="Trie")
    params.add_index("user_id", index_type="Trie")
    client.create_collection(COLL, schema=schema, index_params=params)
    t0 = time.monotonic()
    total = N_USERS * PER_USER
    for start in range(0, total, BATCH):
        vecs = rng.standard_normal((BATCH, DIM), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rows = [
            {
                "id": f"m-{i:08d}",
                "tenant_id": "t",
                "user_id": f"u-{i % N_USERS}",
                "content": f"memory {i} of user u-{i % N_USERS}: " + "lorem ipsum " * 10,
                "embedding": vecs[j].tolist(),
            }
            for j, i in enumerate(range(start, start + BATCH))
        ]
        client.insert(COLL, rows)
    t_insert = time.monotonic() - t0
    client.flush(COLL)
    t_flush = time.monotonic() - t0 - t_insert
    client.release_collection(COLL)
    client.load_collection(COLL)
    t_load = time.monotonic() - t0 - t_insert - t_flush
    count = client.query(COLL, filter="", output_fields=["count(*)"], consistency_level="Strong")
    return {
        "insert_s": round(t_insert, 1),
        "flush_s": round(t_flush, 1),
        "load_s": round(t_load, 1),
        "count": int(count[0]["count(*)"]),
    }


def measure(client: MilvusClient, users: list[int], pgid: int) -> dict[str, Any]:
    def one(user: int, level: str) -> tuple[float, int]:
        t0 = time.perf_counter()
        rows = client.query(
            COLL,
            filter=f'tenant_id == "t" and user_id == "u-{user}"',
            output_fields=OUTPUT_FIELDS,
            limit=100,
            consistency_level=level,
        )
        return (time.perf_counter() - t0) * 1000, len(rows)

    for k in range(WARMUP):
        for level in LEVELS:
            one(users[k % len(users)], level)
    lat: dict[str, list[float]] = {level: [] for level in LEVELS}
    nrows: dict[str, set[int]] = {level: set() for level in LEVELS}
    c0, _ = pgroup_cpu(pgid)
    t0 = time.monotonic()
    for k, user in enumerate(users):
        order = LEVELS[k % 3 :] + LEVELS[: k % 3]
        for level in order:
            ms, n = one(user, level)
            lat[level].append(ms)
            nrows[level].add(n)
    wall = time.monotonic() - t0
    c1, _ = pgroup_cpu(pgid)
    nq = sum(len(v) for v in lat.values())
    return {
        "wall_s": round(wall, 1),
        "query_cpu": {
            "queries": nq,
            "cpu_s": round(c1 - c0, 2),
            "wall_s": round(wall, 2),
            "cpu_ms_per_query": round(1000 * (c1 - c0) / nq, 2),
            "pct_of_one_core": round(100 * (c1 - c0) / wall, 1),
        },
        "rows_per_query": {lv: sorted(v) for lv, v in nrows.items()},
        "latency_ms": {lv: pct(v) for lv, v in lat.items()},
        "raw_ms": {lv: [round(x, 3) for x in v] for lv, v in lat.items()},
    }


def run_variant(binary: str, tick_ms: int, label: str) -> dict[str, Any]:
    result: dict[str, Any] = {"tick_ms": tick_ms, "label": label}
    result["idle_wait_before_start_s"] = round(wait_idle(), 1)
    with tempfile.TemporaryDirectory(prefix="tick-probe-") as tmp:
        data_dir = Path(tmp) / "m"
        data_dir.mkdir()
        server = MilvusServerProcess(binary, data_dir, tick_ms=tick_ms)
        t0 = time.monotonic()
        try:
            server.start(timeout_s=240)
            assert server.process is not None
            result["argv"] = [str(a) for a in server.process.args]  # type: ignore[union-attr]
            result["startup_s"] = round(time.monotonic() - t0, 1)
            result["processes"] = child_pids(server.process.pid)
            result["effective_config"] = effective_yaml(data_dir)
            client = MilvusClient(uri=server.uri, timeout=600)
            try:
                rng = np.random.default_rng(SEED)
                result["build"] = build(client, rng)
                users = random.Random(SEED).sample(range(N_USERS), N_QUERY_USERS)
                result["idle_wait_before_timing_s"] = round(wait_idle(), 1)
                with open("/proc/loadavg") as f:
                    result["loadavg_before"] = f.read().strip()
                pgid = server.process.pid
                result["idle_cpu"] = measure_idle(pgid, IDLE_WINDOW_S)
                result.update(measure(client, users, pgid))
                qc = result["query_cpu"]
                idle_rate = result["idle_cpu"]["cpu_s"] / result["idle_cpu"]["window_s"]
                qc["cpu_ms_per_query_net_of_idle"] = round(
                    1000 * (qc["cpu_s"] - idle_rate * qc["wall_s"]) / qc["queries"], 2
                )
                result["idle_wait_before_raw_s"] = round(wait_idle(), 1)
                result["read_after_write"] = read_after_write(
                    client, np.random.default_rng(SEED + 1), label
                )
                with open("/proc/loadavg") as f:
                    result["loadavg_after"] = f.read().strip()
            finally:
                client.close()
        finally:
            server.stop()
            result["server_alive_after_stop"] = server.alive()
            pg = server.process.pid if server.process else None
            result["leftover_in_pgroup"] = child_pids(pg) if pg else []
            result["leftover_cpu_probe"] = pgroup_cpu(pg)[1] if pg else 0
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", default="20,10,5,20", help="proxy.timeTickInterval values")
    parser.add_argument("--out", type=Path, default=Path("tick-probe.json"))
    args = parser.parse_args()
    binary = milvus_server_binary()
    assert binary, "no milvus-server binary (scripts/test.sh installs it)"
    plan = [int(t) for t in args.ticks.split(",")]
    out: dict[str, Any] = {
        "binary": binary,
        "params": {
            "dim": DIM,
            "users": N_USERS,
            "per_user": PER_USER,
            "batch": BATCH,
            "query_users": N_QUERY_USERS,
            "warmup_per_level": WARMUP,
            "output_fields": OUTPUT_FIELDS,
            "limit": 100,
            "levels": list(LEVELS),
            "order": "per user, the three levels in rotating order",
            "idle_window_s": IDLE_WINDOW_S,
            "read_after_write_n": RAW_N,
            "nproc": os.cpu_count(),
            "clk_tck": CLK_TCK,
        },
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": [],
    }
    for idx, tick in enumerate(plan):
        label = f"tick {tick} ms, run {idx}"
        print(f"== {label}", flush=True)
        try:
            res = run_variant(binary, tick, label)
        except Exception as exc:  # keep the other variants' results
            res = {"tick_ms": tick, "label": label, "error": repr(exc)}
        out["runs"].append(res)
        summary = {
            lv: {k: v for k, v in s.items() if k in ("p50", "p90", "p99")}
            for lv, s in res.get("latency_ms", {}).items()
        }
        raw = res.get("read_after_write") or {}
        print(
            json.dumps(
                {
                    "label": label,
                    "build": res.get("build"),
                    "summary": summary,
                    "idle_cpu": res.get("idle_cpu"),
                    "query_cpu": res.get("query_cpu"),
                    "raw": [raw.get("found"), raw.get("of")],
                    "error": res.get("error"),
                }
            ),
            flush=True,
        )
        args.out.write_text(json.dumps(out, indent=1))
    out["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
