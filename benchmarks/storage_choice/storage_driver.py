"""The driver: starts one worker process per variant (interpreter x layout, and the
server's layout x index), loads them one at a time with a cool-down between loads (or all
at once with `--parallel-load`), runs the timed ops interleaved (each (op, concurrency) on
every variant in turn, the order rotating every round), then the verification, the
filter-order check, the final figures and the restart cost, and writes the report.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import log
    from benchmarks.storage_choice.storage_data import NOW_MS
    from benchmarks.storage_choice.storage_procs import (
        WorkerProc,
        machine_info,
        probe_pymilvus,
        probe_server_version,
        probe_version,
    )
    from benchmarks.storage_choice.storage_report import finish, summarise, verify_summary
    from benchmarks.storage_choice.storage_schema import COLLECTION, LAYOUTS
else:  # run as a script: sys.path[0] is this folder
    from storage_common import log
    from storage_data import NOW_MS
    from storage_procs import (
        WorkerProc,
        machine_info,
        probe_pymilvus,
        probe_server_version,
        probe_version,
    )
    from storage_report import finish, summarise, verify_summary
    from storage_schema import COLLECTION, LAYOUTS


def rotate(xs: list[Any], k: int) -> Iterator[Any]:
    n = len(xs)
    for i in range(n):
        yield xs[(i + k) % n]


def run(args: argparse.Namespace, script: str) -> None:
    """A run as the flags ask; workers are started as `<python> <script> --worker <cfg>`."""
    layouts = list(LAYOUTS) if "all" in args.layout else args.layout
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
