"""The summary (percentiles, interleaved ratios, verification) and the Markdown tables
printed at the end of a run and by `--report`.
"""

from __future__ import annotations

import json
import os
import statistics
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_common import log
else:  # run as a script: sys.path[0] is this folder
    from storage_common import log


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


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
