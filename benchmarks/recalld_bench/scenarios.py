"""One command per scenario: start the server variant(s), sweep, write JSON/MD/PNG.

    python -m benchmarks.recalld_bench prepare --memories 10000 --out /tmp/rb/base-10k
    python -m benchmarks.recalld_bench run --base /tmp/rb/base-10k --scenario recall \\
        --variants plain,redis --concurrency 1,4,16,64,256 --out benchmarks/results/recall
    python -m benchmarks.recalld_bench prepare-sessions --base /tmp/rb/base-10k \\
        --sessions 1000 --messages 200 --out /tmp/rb/sessions-10k
    python -m benchmarks.recalld_bench run --base /tmp/rb/sessions-10k --scenario context,recall \\
        --concurrency 1,32

Every variant gets a fresh copy of the prepared data and its own server; all of them
stay up, and each load point runs every variant back to back in alternating order,
so the compared variants see the same machine state (this 2-core machine throttles
after ~40 s of full load: compare within a point, not across runs). Several
scenarios (`--scenario context,recall`) run the same way: one server per variant,
every (variant, scenario) pair back to back within each point.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks.recalld_bench import (
    conversations,
    datasets,
    loader,
    loadgen,
    meta,
    report,
    server,
    stages,
)

VARIANTS = ("plain", "redis", "sequential", "dense", "keyword", "noflush")
# Server flags per variant: "sequential" runs the recall stages one after another
# (what the fan-out saves), "dense"/"keyword" restrict retrieval (quality and cost of
# each half of hybrid search, through the server), "noflush" never writes the batched
# recall statistics back during the run (what the 30 s access flush costs).
VARIANT_ARGS: dict[str, tuple[str, ...]] = {
    "sequential": ("--recall-sequential",),
    "noflush": ("--access-flush-interval", "0"),
    "dense": ("--recall-mode", "dense"),
    "keyword": ("--recall-mode", "keyword"),
}
SCENARIOS = {
    "recall": "recall",
    "write-single": "write_single",
    "write-batch": "write_batch",
    "mixed": "mixed",
    "context": "context",
}
SESSIONS_FILE = "sessions.json"
"""Written by prepare-sessions next to dataset.json: the sessions' spec and load."""


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Loads a dataset through a fresh server; keeps the data directory as the base copy."""
    spec = datasets.DatasetSpec(args.memories, args.tenants, args.users, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with server.recalld(
        out / "data", server_src=args.server_src, log_file=out / "prepare.log"
    ) as srv:
        result = asyncio.run(loader.load(srv.address, spec, concurrency=args.load_concurrency))
    result["spec"] = dataclasses.asdict(spec)
    result["summary"] = datasets.summary(spec)
    (out / "dataset.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "summary"}, indent=2))
    return result


def prepare_sessions(args: argparse.Namespace) -> dict[str, Any]:
    """Copies a prepared base and appends seeded conversations to it (no extraction).

    The copy (memories + the session store in its data directory) is a base for
    `run`: `--scenario context` draws its sessions from it.
    """
    base, out = Path(args.base), Path(args.out)
    if (base / SESSIONS_FILE).exists():
        raise SystemExit(f"{base} already holds sessions; start from a `prepare` base")
    if out.resolve() == base.resolve():
        raise SystemExit("--out must differ from --base (the base stays as it is)")
    dataset_info = json.loads((base / "dataset.json").read_text())
    spec = conversations.SessionSpec(
        datasets.DatasetSpec(**dataset_info["spec"]), args.sessions, args.messages, args.seed
    )
    out.mkdir(parents=True, exist_ok=True)
    server.snapshot(base / "data", out / "data")
    shutil.copy2(base / "dataset.json", out / "dataset.json")
    with server.recalld(
        out / "data", server_src=args.server_src, log_file=out / "prepare-sessions.log"
    ) as srv:
        result = asyncio.run(
            conversations.load(
                srv.address, spec, concurrency=args.load_concurrency, batch=args.batch
            )
        )
    result["spec"] = {"sessions": spec.sessions, "messages": spec.messages, "seed": spec.seed}
    result["summary"] = conversations.summary(spec)
    result["meta"] = meta.collect(args.server_src)
    (out / SESSIONS_FILE).write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(json.dumps({k: v for k, v in result.items() if k != "meta"}, indent=2))
    return result


def sessions_of(base: Path, dataset: datasets.DatasetSpec) -> conversations.SessionSpec | None:
    """The sessions a base holds (None for a `prepare` base without sessions)."""
    path = base / SESSIONS_FILE
    if not path.exists():
        return None
    return conversations.SessionSpec(dataset, **json.loads(path.read_text())["spec"])


def _series(variant: str, scenario: str, variants: list[str], scenarios: list[str]) -> str:
    """A result's label in tables and plots: the variant, the scenario, or both."""
    if len(scenarios) == 1:
        return variant
    return scenario if len(variants) == 1 else f"{variant}/{scenario}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(args.base)
    dataset_info = json.loads((base / "dataset.json").read_text())
    spec = datasets.DatasetSpec(**dataset_info["spec"])
    scenario_names = args.scenario.split(",")
    for s in scenario_names:
        if s not in SCENARIOS:
            raise SystemExit(f"unknown scenario {s!r}; choose from {sorted(SCENARIOS)}")
    sessions = sessions_of(base, spec)
    if "context" in scenario_names and sessions is None:
        raise SystemExit(f"--scenario context needs sessions: {base} has no {SESSIONS_FILE}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work or f"/tmp/recalld-bench-run-{int(time.time())}")
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"unknown variant {v!r}; choose from {VARIANTS}")
    pairs = [(v, s) for v in variants for s in scenario_names]
    points: list[dict[str, Any]] = (
        [{"mode": "closed", "concurrency": c} for c in _ints(args.concurrency)]
        if args.mode == "closed"
        else [{"mode": "open", "rate": r} for r in _floats(args.rates)]
    )
    results: list[dict[str, Any]] = []
    stage_results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    info = meta.collect(args.server_src)
    with contextlib.ExitStack() as stack:
        servers: dict[str, server.ServerProcess] = {}
        for v in variants:
            vdir = work / v
            data = server.snapshot(base / "data", vdir / "data")
            redis_url = stack.enter_context(server.redis_server()) if v == "redis" else ""
            traces = vdir / "spans.jsonl" if args.traces else None
            servers[v] = stack.enter_context(
                server.recalld(
                    data,
                    redis_url=redis_url,
                    traces_file=traces,
                    log_file=vdir / "server.log",
                    server_src=args.server_src,
                    extra_args=VARIANT_ARGS.get(v, ()),
                )
            )
        prewarmed: dict[str, Any] = {}
        if args.prewarm:
            for v in variants:
                prewarmed[v] = loadgen.prewarm(servers[v].address, spec, server_pid=servers[v].pid)
                cold = prewarmed[v]
                print(
                    f"prewarm {v}: {cold['users']} cold first recalls, p50 {cold['p50_ms']:.1f} "
                    f"p99 {cold['p99_ms']:.1f} ms, {cold['server_cpu_ms_per_recall']:.1f} ms "
                    "server CPU each",
                    flush=True,
                )
                if "context" in scenario_names and sessions is not None:
                    cold = prewarmed[f"{v}/context"] = loadgen.prewarm_sessions(
                        servers[v].address,
                        sessions,
                        token_budget=args.token_budget,
                        server_pid=servers[v].pid,
                    )
                    print(
                        f"prewarm {v}: {cold['sessions']} first GetContext calls, p50 "
                        f"{cold['p50_ms']:.1f} p99 {cold['p99_ms']:.1f} ms, "
                        f"{cold['server_cpu_ms_per_call']:.1f} ms server CPU each",
                        flush=True,
                    )
        for i, point in enumerate(points):
            order = pairs[i % len(pairs) :] + pairs[: i % len(pairs)]
            for v, scenario in order:
                srv = servers[v]
                load = loadgen.LoadSpec(
                    address=srv.address,
                    operation=SCENARIOS[scenario],
                    mode=point["mode"],
                    concurrency=int(point.get("concurrency", 0)),
                    rate=float(point.get("rate", 0.0)),
                    duration_s=args.duration,
                    warmup_s=args.warmup,
                    processes=args.processes,
                    dataset=spec,
                    seed=args.seed + i,
                    batch_size=args.batch,
                    top_k=args.top_k,
                    write_fraction=args.write_fraction,
                    write_users=args.write_users,
                    sessions=sessions if scenario == "context" else None,
                    token_budget=args.token_budget,
                    empty_query_share=args.empty_query_share,
                )
                offset = (
                    srv.traces_file.stat().st_size
                    if (srv.traces_file and srv.traces_file.exists())
                    else 0
                )
                result = loadgen.run(load, server_pid=srv.pid)
                result["variant"] = v
                result["scenario"] = scenario
                result["series"] = _series(v, scenario, variants, scenario_names)
                result["point"] = point
                result["loadavg_1m_after"] = os.getloadavg()[0]
                if srv.traces_file and srv.traces_file.exists():
                    time.sleep(0.5)
                    spans = stages.read_spans(srv.traces_file, offset)
                    result["stages"] = stages.breakdown(spans)
                    stage_results[v].append({"point": point, **result["stages"]})
                results.append(result)
                a = result["all"]
                print(
                    f"{scenario} {v} {point}: {a['throughput_rps']:.1f}/s "
                    f"p50 {a['p50_ms']:.1f} p99 {a['p99_ms']:.1f} ms, "
                    f"errors {result['error_count']}, client cpu {result['client_cpu_cores']:.2f}"
                    f", server cpu {result['server_cpu_cores']:.2f}",
                    flush=True,
                )
                if args.cooldown:
                    time.sleep(args.cooldown)
    doc = {
        "scenario": args.scenario,
        "scenarios": scenario_names,
        "operation": ",".join(SCENARIOS[s] for s in scenario_names),
        "mode": args.mode,
        "variants": variants,
        "series": [_series(v, s, variants, scenario_names) for v, s in pairs],
        "meta": info,
        "dataset": dataset_info["summary"],
        "dataset_load": {k: v for k, v in dataset_info.items() if k not in ("summary", "spec")},
        "settings": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "processes": args.processes,
            "top_k": args.top_k,
            "batch": args.batch,
            "write_fraction": args.write_fraction,
            "write_users": args.write_users,
            "traces": args.traces,
            "prewarm": args.prewarm,
            "token_budget": args.token_budget,
            "empty_query_share": args.empty_query_share,
        },
        "prewarm": prewarmed,
        "results": results,
    }
    if sessions is not None:
        doc["sessions"] = json.loads((base / SESSIONS_FILE).read_text())["summary"]
    name = args.name or f"{'-'.join(scenario_names)}-{args.mode}"
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2))
    report.write_reports(doc, out, name)
    return doc


def add_arguments(sub: Any) -> None:
    p = sub.add_parser("prepare", help="generate a dataset and load it into a fresh data dir")
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--tenants", type=int, default=100)
    p.add_argument("--users", type=int, default=10, help="users per tenant")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--load-concurrency", type=int, default=8)
    p.add_argument("--out", required=True)
    p.add_argument("--server-src", type=Path, default=None)
    p.set_defaults(func=prepare)

    ps = sub.add_parser(
        "prepare-sessions",
        help="copy a prepared base and append seeded conversations to it (SessionService)",
    )
    ps.add_argument("--base", required=True, help="a directory made by `prepare`")
    ps.add_argument("--sessions", type=int, default=1000)
    ps.add_argument("--messages", type=int, default=200, help="messages per session")
    ps.add_argument("--batch", type=int, default=20, help="messages per AppendMessages call")
    ps.add_argument("--seed", type=int, default=7)
    ps.add_argument("--load-concurrency", type=int, default=4)
    ps.add_argument("--out", required=True)
    ps.add_argument("--server-src", type=Path, default=None)
    ps.set_defaults(func=prepare_sessions)

    r = sub.add_parser("run", help="run one scenario (a sweep) against prepared data")
    r.add_argument("--base", required=True, help="a directory made by `prepare`")
    r.add_argument(
        "--scenario",
        default="recall",
        help=f"one of {', '.join(sorted(SCENARIOS))}, or several (context,recall) run "
        "interleaved point by point; context needs a base made by prepare-sessions",
    )
    r.add_argument("--mode", choices=["closed", "open"], default="closed")
    r.add_argument("--concurrency", default="1,4,16,64,256")
    r.add_argument("--rates", default="10,20,40,80")
    r.add_argument("--variants", default="plain")
    r.add_argument("--duration", type=float, default=10.0)
    r.add_argument("--warmup", type=float, default=3.0)
    r.add_argument("--cooldown", type=float, default=2.0)
    r.add_argument("--processes", type=int, default=2)
    r.add_argument("--batch", type=int, default=10)
    r.add_argument(
        "--write-users",
        choices=loadgen.WRITE_USER_PATTERNS,
        default="spread",
        help="spread: each Write to a uniformly drawn user; bursts: runs of Writes to one user",
    )
    r.add_argument("--top-k", type=int, default=10, help="Recall top_k, GetContext memory_top_k")
    r.add_argument("--token-budget", type=int, default=2000, help="GetContext token_budget")
    r.add_argument(
        "--empty-query-share",
        type=float,
        default=0.5,
        help="GetContext calls without a query (the server recalls for the last user message)",
    )
    r.add_argument("--write-fraction", type=float, default=0.1)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--traces", action="store_true", help="record spans: stage breakdown")
    r.add_argument(
        "--prewarm",
        action="store_true",
        help="recall every user once before the timed points (cached users); the cold "
        "first recalls are reported apart",
    )
    r.add_argument(
        "--server-src",
        type=Path,
        default=None,
        help="run the server from this source tree (e.g. a git archive of HEAD)",
    )
    r.add_argument("--work", default="", help="scratch directory for data copies and logs")
    r.add_argument("--name", default="")
    r.add_argument("--out", default="benchmarks/results")
    r.set_defaults(func=run)
