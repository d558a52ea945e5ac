"""What recalld's HTTP embedding client costs on its own: its embedder, the hash endpoint.

    python -m benchmarks.recalld_bench.endpoint_cost --callers 1,12,32 --texts 1,10

recalld's `OpenAIEmbedder` (the server's own class, default settings: 4 requests
in flight, 32 texts a request) in this process, with nothing else on its event
loop, against the zero-cost hash embedder in its own process on loopback.
`callers` concurrent tasks each embed `texts` new texts of the benchmark
dataset per call, back to back, for `--duration` seconds. Reported: calls and
texts per second, call latency, texts per request (from the embedder's
counters), and the CPU of this process (recalld's side: httpx, the wire format,
the answer's checks) and of the endpoint per text. Loopback only; bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.recalld_bench import datasets, meta, server


async def _point(
    url: str, model: str, callers: int, per_call: int, duration_s: float, texts: list[str]
) -> dict[str, Any]:
    from recalld_server.embedding.endpoint_settings import EndpointSettings
    from recalld_server.embedding.openai_http import OpenAIEmbedder

    embedder = await OpenAIEmbedder.connect(EndpointSettings(base_url=url, model=model))
    latencies: list[float] = []
    cursor = 0

    async def caller() -> None:
        nonlocal cursor
        while time.perf_counter() < end:
            batch = [texts[(cursor + i) % len(texts)] for i in range(per_call)]
            cursor += per_call
            started = time.perf_counter()
            await embedder.embed(batch)
            latencies.append(time.perf_counter() - started)

    try:
        cpu0, t0 = os.times(), time.perf_counter()
        end = t0 + duration_s
        await asyncio.gather(*(caller() for _ in range(callers)))
        cpu1, elapsed = os.times(), time.perf_counter() - t0
    finally:
        await embedder.close()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    calls = len(latencies)
    latencies.sort()
    return {
        "callers": callers,
        "texts_per_call": per_call,
        "seconds": elapsed,
        "calls_per_s": calls / elapsed,
        "texts_per_s": calls * per_call / elapsed,
        "latency_mean_ms": 1000 * statistics.fmean(latencies),
        "latency_p50_ms": 1000 * latencies[len(latencies) // 2],
        "latency_p99_ms": 1000 * latencies[min(calls - 1, int(0.99 * calls))],
        "client_cpu_cores": cpu / elapsed,
        "client_cpu_ms_per_text": 1000 * cpu / (calls * per_call),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.server_src is not None:  # the embedder of a fixed revision, not the installed one
        sys.path.insert(0, str(args.server_src / "server"))
    spec = datasets.DatasetSpec(20_000, 100, 10, seed=4242)
    texts = [m.content for m in datasets.generate(spec)]  # new texts: the endpoint's cache misses
    points = []
    with server.hash_embedder() as endpoint:
        for callers in (int(c) for c in args.callers.split(",")):
            for per_call in (int(t) for t in args.texts.split(",")):
                before = endpoint.stats() or {}
                cpu_before = server.process_cpu_s(endpoint.pid)
                point = asyncio.run(
                    _point(endpoint.url, endpoint.model, callers, per_call, args.duration, texts)
                )
                after = endpoint.stats() or {}
                requests = after.get("requests", 0) - before.get("requests", 0)
                sent = after.get("texts", 0) - before.get("texts", 0)
                point["texts_per_request"] = sent / requests if requests else 0.0
                point["endpoint_cpu_ms_per_text"] = (
                    1000 * (server.process_cpu_s(endpoint.pid) - cpu_before) / sent if sent else 0.0
                )
                points.append(point)
                print(
                    f"callers {callers} x {per_call} texts: {point['texts_per_s']:.0f} texts/s, "
                    f"call p50 {point['latency_p50_ms']:.1f} ms, "
                    f"{point['texts_per_request']:.1f} texts/request, recalld side "
                    f"{point['client_cpu_ms_per_text']:.2f} ms CPU/text "
                    f"({point['client_cpu_cores']:.2f} cores), endpoint "
                    f"{point['endpoint_cpu_ms_per_text']:.2f} ms/text",
                    flush=True,
                )
    doc = {"meta": meta.collect(args.server_src), "duration_s": args.duration, "points": points}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2))
    return doc


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recalld_bench.endpoint_cost")
    parser.add_argument("--callers", default="1,12,32")
    parser.add_argument("--texts", default="1,10", help="texts per call")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--out", default="", help="write the points here as JSON")
    parser.add_argument(
        "--server-src", type=Path, default=None, help="import recalld_server from this tree"
    )
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
