"""Markdown tables and PNG plots from a scenario's JSON result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.recalld_bench.stages import STAGES


def _x(result: dict[str, Any]) -> float:
    point = result["point"]
    return float(point.get("concurrency") or point.get("rate"))


def _series(result: dict[str, Any]) -> str:
    """The label of a result: its variant, or scenario (and variant) when several ran."""
    return str(result.get("series", result["variant"]))


def server_cpu_ms_per_call(result: dict[str, Any]) -> float | None:
    """Server CPU (the process and its children) per successful call of the point."""
    cores, rps = result.get("server_cpu_cores"), result["all"]["throughput_rps"]
    return None if cores is None or not rps else 1000.0 * cores / rps


def table(doc: dict[str, Any]) -> str:
    xname = "concurrency" if doc["mode"] == "closed" else "offered rate (/s)"
    lines = [
        f"| variant | {xname} | op | ok/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms "
        "| errors | client CPU (cores) | server CPU (cores) | server CPU ms/call |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in doc["results"]:
        ops = r["by_operation"] if len(r["by_operation"]) > 1 else {"all": r["all"]}
        for op, s in ops.items():
            errors = ", ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())) or "0"
            if r.get("dropped"):
                errors += f"; dropped {r['dropped']}"
            server_cpu = r.get("server_cpu_cores")
            per_call = server_cpu_ms_per_call(r)
            lines.append(
                f"| {_series(r)} | {_x(r):g} | {op} | {s['throughput_rps']:.1f} "
                f"| {s['p50_ms']:.1f} | {s['p90_ms']:.1f} | {s['p99_ms']:.1f} "
                f"| {s['p999_ms']:.1f} | {s['max_ms']:.1f} | {errors} "
                f"| {r['client_cpu_cores']:.2f} "
                f"| {'' if server_cpu is None else f'{server_cpu:.2f}'} "
                f"| {'' if per_call is None else f'{per_call:.2f}'} |"
            )
    return "\n".join(lines)


def memories_per_call(result: dict[str, Any]) -> int:
    """Memories a successful call wrote (a write_batch call carries `batch_size`)."""
    op = result["spec"]["operation"]
    return int(result["spec"]["batch_size"]) if op == "write_batch" else 1


def cpu_table(doc: dict[str, Any]) -> str:
    """Server CPU per call by process, and an embedding endpoint's CPU measured apart."""
    rows = [r for r in doc["results"] if r.get("server_cpu_by_process_cores")]
    if not rows:
        return ""
    names = sorted({n for r in rows for n in r["server_cpu_by_process_cores"]})
    lines = [
        "CPU ms per successful call (per memory for writes); server = recalld's process, "
        "then its children; endpoint = the embedding server's process (not a child).",
        "",
        "| variant | x | ok/s | memories/s | "
        + " | ".join(names)
        + " | endpoint | total | total ms/memory | texts/request |",
        "| --- | ---: " + "| ---: " * (len(names) + 6) + "|",
    ]
    for r in rows:
        rps = r["all"]["throughput_rps"]
        per = memories_per_call(r)
        if not rps:
            continue

        def ms(cores: float | None, rate: float = rps) -> str:
            return "" if cores is None else f"{1000.0 * cores / rate:.2f}"

        by = r["server_cpu_by_process_cores"]
        endpoint = r.get("embedder_cpu_cores")
        total = sum(by.values()) + (endpoint or 0.0)
        writes = r["spec"]["operation"] in ("write_single", "write_batch")
        batch = (
            f"{r['embedder_texts'] / r['embedder_requests']:.1f}"
            if r.get("embedder_requests")
            else ""
        )
        lines.append(
            f"| {_series(r)} | {_x(r):g} | {rps:.1f} | {f'{rps * per:.0f}' if writes else ''} | "
            + " | ".join(ms(by.get(n)) for n in names)
            + f" | {ms(endpoint)} | {ms(total)} | {ms(total, rps * per) if writes else ''} "
            f"| {batch} |"
        )
    return "\n".join(lines)


def span_table(doc: dict[str, Any]) -> str:
    """Each RPC's stage spans (`--traces`): mean ms over the calls that have the stage."""
    lines = []
    for r in doc["results"]:
        for root, info in sorted(r.get("span_stages", {}).items()):
            if root.endswith("/Recall") or not info["calls"]:
                continue  # Recall has its own table
            cells = ", ".join(
                f"{name} {st['mean_ms']:.1f} (p50 {st['p50_ms']:.1f}, n {st['n']})"
                for name, st in info["stages"].items()
            )
            lines.append(
                f"| {_series(r)} | {_x(r):g} | {root.rsplit('/', 1)[-1]} | {info['calls']} "
                f"| {info['total']['mean_ms']:.1f} | {info['total']['p50_ms']:.1f} | {cells} |"
            )
    if not lines:
        return ""
    return "\n".join(
        [
            "Stage spans of the other calls (mean ms, p50 and calls in parentheses).",
            "",
            "| variant | x | rpc | calls | mean ms | p50 ms | stages |",
            "| --- | ---: | --- | ---: | ---: | ---: | --- |",
            *lines,
        ]
    )


def commit_table(doc: dict[str, Any]) -> str:
    """Group commits over the window (`--probe-commits`)."""
    rows = [r for r in doc["results"] if r.get("commits", {}).get("group")]
    if not rows:
        return ""
    lines = [
        "Group commits over the measured window (commit_probe.py): busy = share of the "
        "window a group was being written; the storage calls' mean ms (calls/s).",
        "",
        "| variant | x | groups/s | requests/group | rows/group (new, changed, history) "
        "| groups with upserts | group mean ms (p90) | busy | insert | replace | history |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def call(c: dict[str, Any] | None) -> str:
        return "" if not c else f"{c['mean_ms']:.1f} ({c['per_s']:.0f}/s)"

    for r in rows:
        c = r["commits"]
        g = c["group"]
        lines.append(
            f"| {_series(r)} | {_x(r):g} | {g['per_s']:.1f} | {g['requests_per_group']:.1f} "
            f"| {g['inserts_per_group']:.1f}, {g['upserts_per_group']:.1f}, "
            f"{g['history_per_group']:.1f} | {100 * g['groups_with_upserts']:.0f}% "
            f"| {g['mean_ms']:.1f} ({g['p90_ms']:.1f}) | {g['busy']:.2f} "
            f"| {call(c.get('insert'))} | {call(c.get('replace'))} | {call(c.get('append'))} |"
        )
    return "\n".join(lines)


def profile_table(doc: dict[str, Any], top: int = 8) -> str:
    """py-spy (`--py-spy`): each thread's busy share of the window, the top functions."""
    rows = [r for r in doc["results"] if r.get("profile")]
    if not rows:
        return ""
    lines = [
        "py-spy over the measured window (server process; busy = share of the window a "
        "thread ran; self = share of samples on top of the stack).",
        "",
        "| variant | x | threads busy | top self |",
        "| --- | ---: | --- | --- |",
    ]
    for r in rows:
        p = r["profile"]
        threads = ", ".join(
            f"{name} {t['busy']:.2f}"
            for name, t in list(p["threads"].items())[:4]
            if t.get("busy") is not None
        )
        tops = ", ".join(
            f"{row['function']} {100 * row['share']:.0f}%" for row in p["top_self"][:top]
        )
        lines.append(f"| {_series(r)} | {_x(r):g} | {threads} | {tops} |")
    return "\n".join(lines)


def stage_table(doc: dict[str, Any]) -> str:
    rows = [r for r in doc["results"] if r.get("stages", {}).get("calls")]
    if not rows:
        return ""
    header = (
        "| variant | x | calls | "
        + " | ".join(s.split(".")[1] for s in STAGES)
        + (
            " | fan-out wall | sum of fan-out stages | Recall span | sequential estimate "
            "| speed-up |"
        )
    )
    lines = [header, "| --- " * (len(STAGES) + 8) + "|"]
    for r in rows:
        st = r["stages"]
        cells = " | ".join(f"{st['stages'][s]['p50_ms']:.1f}" for s in STAGES)
        lines.append(
            f"| {_series(r)} | {_x(r):g} | {st['calls']} | {cells} "
            f"| {st['fanout_wall']['mean_ms']:.1f} | {st['fanout_sum']['mean_ms']:.1f} "
            f"| {st['recall_total']['mean_ms']:.1f} | {st['sequential_estimate']['mean_ms']:.1f} "
            f"| {st['parallel_speedup_estimate']:.2f}x |"
        )
    return (
        "Stage p50 (ms) from the recall spans; the last five columns are means (ms).\n\n"
        + "\n".join(lines)
    )


def plots(doc: dict[str, Any], out: Path, name: str) -> list[str]:
    files = []
    xlabel = "concurrency (closed loop)" if doc["mode"] == "closed" else "offered rate (/s)"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for variant in doc.get("series", doc["variants"]):
        rs = sorted((r for r in doc["results"] if _series(r) == variant), key=_x)
        if not rs:
            continue
        xs = [_x(r) for r in rs]
        for key, style in (
            ("p50_ms", "-o"),
            ("p90_ms", "--s"),
            ("p99_ms", ":^"),
            ("p999_ms", "-.v"),
        ):
            ax1.plot(xs, [r["all"][key] for r in rs], style, label=f"{variant} {key[:-3]}")
        ax2.plot(xs, [r["all"]["throughput_rps"] for r in rs], "-o", label=variant)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    ax1.set_yscale("log")
    ax1.set_ylabel("latency (ms)")
    ax2.set_ylabel("successful calls / s")
    fig.suptitle(f"{doc['scenario']} ({doc['dataset']['name']}, {doc['mode']} loop)")
    fig.tight_layout()
    path = out / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path.name)

    rows = [r for r in doc["results"] if r.get("stages", {}).get("calls")]
    if rows:
        fig, ax = plt.subplots(figsize=(10, 4.5))
        labels = [f"{_series(r)}\n{_x(r):g}" for r in rows]
        bottoms = [0.0] * len(rows)
        for stage in STAGES:
            values = [r["stages"]["stages"][stage]["mean_ms"] for r in rows]
            ax.bar(labels, values, bottom=bottoms, label=stage.split(".")[1])
            bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
        ax.plot(
            labels,
            [r["stages"]["recall_total"]["mean_ms"] for r in rows],
            "k_",
            markersize=30,
            mew=2,
            label="Recall span (wall)",
        )
        ax.set_ylabel("mean ms per call (stacked = if run one after another)")
        ax.set_xlabel("variant / concurrency")
        ax.legend(fontsize=7, ncol=2)
        ax.set_title("Recall stage breakdown (from the server's spans)")
        fig.tight_layout()
        path = out / f"{name}-stages.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path.name)
    return files


def write_reports(doc: dict[str, Any], out: Path, name: str) -> None:
    files = plots(doc, out, name)
    m = doc["meta"]
    parts = [
        f"# {doc['scenario']} ({doc['mode']} loop)",
        "",
        f"- dataset: {doc['dataset']['name']} ({doc['dataset']['memories']} memories, "
        f"{doc['dataset']['tenants']} tenants, {doc['dataset']['users']} users)",
        *(
            [
                f"- sessions: {doc['sessions']['name']} ({doc['sessions']['sessions']} sessions "
                f"of {doc['sessions']['messages_per_session']} messages over "
                f"{doc['sessions']['users']} users)"
            ]
            if doc.get("sessions")
            else []
        ),
        f"- machine: {m['machine']['cpus']} CPUs ({m['machine']['cpu_model']}), "
        f"{m['machine']['mem_gb']} GB",
        f"- server: revision {m.get('server_revision', m['git_head'])} ({m['server_src']})",
        f"- settings: {doc['settings']}",
        *[
            f"- embedding, {v}: {e.get('model_id', '')}"
            + (f" via {e['url']} ({e['command']})" if e.get("url") else f" ({e['embedder']})")
            for v, e in doc.get("embedding", {}).items()
        ],
        f"- command: `{m['command']}`",
        "",
        table(doc),
        "",
        cpu_table(doc),
        "",
        stage_table(doc),
        "",
        span_table(doc),
        "",
        commit_table(doc),
        "",
        profile_table(doc),
        "",
        *[f"![{f}]({f})" for f in files],
        "",
    ]
    (out / f"{name}.md").write_text("\n".join(parts))
