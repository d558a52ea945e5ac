"""Markdown tables of the comparison results (benchmarks/results/compare-*.json).

python -m benchmarks.recalld_bench.summary benchmarks/results
python -m benchmarks.recalld_bench.summary benchmarks/results -100k   # compare-*-100k.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _load(directory: Path, name: str) -> dict[str, Any] | None:
    path = directory / f"compare-{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def floor_table(doc: dict[str, Any]) -> str:
    lines = [
        "| round | floor p50 ms (embed + search) | floor p99 ms | recalld Recall p50 ms "
        "| recalld p99 ms | recalld p50 / floor p50 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in doc["rounds"]:
        f = r["floor"]
        lines.append(
            f"| {r['round']} | {f['total']['p50_ms']:.1f} ({f['embed']['p50_ms']:.1f} + "
            f"{f['search']['p50_ms']:.1f}) | {f['total']['p99_ms']:.1f} "
            f"| {r['recalld']['p50_ms']:.1f} | {r['recalld']['p99_ms']:.1f} "
            f"| {r['ratio_p50']:.2f}x |"
        )
    return "\n".join(lines)


def pair_table(doc: dict[str, Any], a: str, b: str) -> str:
    lines = [
        f"| concurrency | {a} ok/s | {a} p50 | {a} p99 | {b} ok/s | {b} p50 | {b} p99 "
        f"| {a} errors | {b} errors | {b}/{a} throughput |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    for r in doc["rounds"]:
        x, y = r[a], r[b]
        lines.append(
            f"| {r['concurrency']} | {x['throughput_rps']:.1f} | {x['p50_ms']:.1f} "
            f"| {x['p99_ms']:.1f} | {y['throughput_rps']:.1f} | {y['p50_ms']:.1f} "
            f"| {y['p99_ms']:.1f} | {x['errors'] or 0} | {y['errors'] or 0} "
            f"| {y['throughput_rps'] / max(1e-9, x['throughput_rps']):.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results")
    suffix = sys.argv[2] if len(sys.argv) > 2 else ""  # the compare runs' --name suffix
    if (doc := _load(directory, "floor" + suffix)) is not None:
        print("## Floor\n\n" + floor_table(doc) + "\n")
    if (doc := _load(directory, "ghz" + suffix)) is not None:
        print(f"## ghz ({doc['ghz_version']})\n\n" + pair_table(doc, "ghz", "ours") + "\n")
    if (doc := _load(directory, "mem0" + suffix)) is not None:
        print("## mem0\n\n" + pair_table(doc, "mem0", "recalld") + "\n")
        print(f"load: recalld {doc['recalld_load']}, mem0 {doc['mem0_load']}\n")


if __name__ == "__main__":
    main()
