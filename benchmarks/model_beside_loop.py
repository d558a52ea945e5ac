"""The embedding model beside a busy Python thread: on a thread of the same process or in its own.

The server's event loop is a Python thread that is busy under load. A model on
another thread of the same process gives the GIL up and wins it back dozens of
times per forward pass, each time waiting out the busy thread's switch
interval. This measures one batch of texts, alternating the four set-ups
(thread or process, idle or busy neighbour) round by round so that the
machine's throttling hits all of them alike.

    python -m benchmarks.model_beside_loop --rounds 2 --batch 5
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import threading
import time
from collections.abc import Callable

from benchmarks.recalld_bench.datasets import DatasetSpec, generate
from recalld_server.domain.core.ports import Vectors
from recalld_server.embedding.model_process import ModelProcess
from recalld_server.embedding.usem import usem3_encoder

Encode = Callable[[list[str]], Vectors]


def _busy(stop: threading.Event) -> None:
    total = 0
    while not stop.is_set():
        for i in range(1_000):
            total += i


def _batch_ms(encode: Encode, texts: list[str], batch: int, busy: bool) -> list[float]:
    stop = threading.Event()
    neighbour = threading.Thread(target=_busy, args=(stop,)) if busy else None
    if neighbour is not None:
        neighbour.start()
    timings = []
    try:
        for start in range(0, len(texts), batch):
            began = time.perf_counter()
            encode(texts[start : start + batch])
            timings.append((time.perf_counter() - began) * 1000)
    finally:
        stop.set()
        if neighbour is not None:
            neighbour.join()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--texts", type=int, default=200, help="benchmark dataset texts a round")
    args = parser.parse_args()
    texts = [m.content for m in itertools.islice(generate(DatasetSpec()), args.texts)]
    in_thread = usem3_encoder()
    in_process = ModelProcess("recalld_server.embedding.usem:usem3_encoder")
    setups: dict[str, tuple[Encode, bool]] = {
        "thread, idle neighbour": (in_thread, False),
        "thread, busy neighbour": (in_thread, True),
        "process, idle neighbour": (in_process.encode, False),
        "process, busy neighbour": (in_process.encode, True),
    }
    results: dict[str, list[float]] = {name: [] for name in setups}
    try:
        for _ in range(args.rounds):
            for name, (encode, busy) in setups.items():
                results[name] += _batch_ms(encode, texts, args.batch, busy)
    finally:
        in_process.close()
    print(f"{args.texts} texts a round, batches of {args.batch}, {args.rounds} rounds")
    print("| set-up | batches | mean ms | p50 ms | p90 ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, timings in results.items():
        ordered = sorted(timings)
        print(
            f"| {name} | {len(ordered)} | {statistics.mean(ordered):.1f} | "
            f"{statistics.median(ordered):.1f} | {ordered[int(0.9 * len(ordered))]:.1f} |"
        )


if __name__ == "__main__":
    main()
