"""A multi-process gRPC load generator for recalld: closed and open loop, HDR histograms.

Closed loop keeps `concurrency` calls in flight (each stream sends its next call when
the previous one returns). Open loop sends calls at a fixed arrival rate (Poisson
arrivals) whatever the server does, and measures each call from its *intended* start,
so a slow server cannot hide queueing (no coordinated omission). Warm-up calls are
made but not recorded. Worker processes each run an asyncio loop with their own
channels; the parent merges their histograms and reports client and server CPU.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import multiprocessing as mp
import os
import random
import time
from typing import Any

import grpc
from hdrh.histogram import HdrHistogram

from benchmarks.recalld_bench import conversations, datasets
from benchmarks.recalld_bench.server import cpu_by_process, tree_cpu_s
from recalld.v1 import (
    memory_pb2,
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)

HIST_MAX_US = 120_000_000
OPERATIONS = ("recall", "write_single", "write_batch", "mixed", "context")
TYPE_ENUM = {
    "fact": memory_pb2.MEMORY_TYPE_FACT,
    "preference": memory_pb2.MEMORY_TYPE_PREFERENCE,
    "event": memory_pb2.MEMORY_TYPE_EVENT,
    "state": memory_pb2.MEMORY_TYPE_STATE,
    "decision": memory_pb2.MEMORY_TYPE_DECISION,
    "task": memory_pb2.MEMORY_TYPE_TASK,
    "skill": memory_pb2.MEMORY_TYPE_SKILL,
    "summary": memory_pb2.MEMORY_TYPE_SUMMARY,
}
TIER_ENUM = {
    "P0": memory_pb2.MEMORY_TIER_P0,
    "P1": memory_pb2.MEMORY_TIER_P1,
    "P2": memory_pb2.MEMORY_TIER_P2,
}


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, HIST_MAX_US, 3)


def to_proto(m: datasets.GenMemory) -> memory_pb2.Memory:
    memory = memory_pb2.Memory(
        content=m.content,
        type=TYPE_ENUM[m.type],
        tier=TIER_ENUM[m.tier],
        importance=m.importance,
        confidence=m.confidence,
        topic_key=m.topic_key,
        tags=list(m.tags),
        source="bench",
    )
    memory.occurred_at.FromMilliseconds(m.occurred_at_ms)
    return memory


@dataclasses.dataclass(frozen=True, slots=True)
class LoadSpec:
    address: str
    operation: str = "recall"  # recall | write_single | write_batch | mixed | context
    mode: str = "closed"  # closed | open
    concurrency: int = 8  # closed loop: calls in flight (total over processes)
    rate: float = 0.0  # open loop: arrivals per second (total)
    duration_s: float = 10.0  # measured window
    warmup_s: float = 3.0
    processes: int = 2
    channels_per_process: int = 2
    dataset: datasets.DatasetSpec = dataclasses.field(default_factory=datasets.DatasetSpec)
    seed: int = 1
    write_fraction: float = 0.1  # mixed
    batch_size: int = 10  # write_batch
    top_k: int = 10
    timeout_s: float = 10.0
    max_in_flight: int = 2048  # open loop: arrivals beyond this are counted as dropped
    skip_profile: bool = False
    write_users: str = "spread"  # spread: each Write to a uniformly drawn user | bursts
    # context: GetContext for a session drawn uniformly from the loaded ones (`sessions`),
    # within `token_budget`, recalling up to `top_k` memories; a query from the recall
    # templates, or (a share `empty_query_share` of the calls) none, so the server
    # recalls for the session's last user message.
    sessions: conversations.SessionSpec | None = None
    token_budget: int = 2000
    empty_query_share: float = 0.5


WRITE_USER_PATTERNS = ("spread", "bursts")
"""How Writes pick their user. spread: every Write goes to a user drawn uniformly,
as recalls do (many agents, many users). bursts: the dataset generator's order, so
consecutive Writes, and the concurrent streams of a worker, go to the same user
(~10 in a row): one user's writes serialise on its lock."""


@dataclasses.dataclass(slots=True)
class _Recorder:
    measure_from: float
    measure_to: float
    hist: dict[str, HdrHistogram] = dataclasses.field(default_factory=dict)
    ok: dict[str, int] = dataclasses.field(default_factory=dict)
    errors: dict[str, int] = dataclasses.field(default_factory=dict)
    outcomes: dict[str, int] = dataclasses.field(default_factory=dict)
    dropped: int = 0
    warmup_calls: int = 0

    def record(self, op: str, intended: float, done: float, code: str) -> None:
        if intended < self.measure_from or intended >= self.measure_to:
            self.warmup_calls += 1
            return
        if code != "OK":
            self.errors[code] = self.errors.get(code, 0) + 1
            return
        hist = self.hist.get(op)
        if hist is None:
            hist = self.hist[op] = new_histogram()
        hist.record_value(max(1, int((done - intended) * 1e6)))
        self.ok[op] = self.ok.get(op, 0) + 1


class _Workload:
    """What each call sends: deterministic per (seed, worker)."""

    def __init__(self, spec: LoadSpec, worker: int) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed * 1000 + worker)
        self.queries = datasets.queries(spec.dataset, 4096, seed_offset=spec.seed * 100 + worker)
        write_spec = dataclasses.replace(
            spec.dataset,
            memories=max(2000, spec.dataset.memories // 5),
            seed=spec.dataset.seed + 10_000 + spec.seed * 100 + worker,
        )
        self.writes = iter(datasets.generate(write_spec))
        self.write_spec = write_spec
        self.users = datasets.users_of(spec.dataset)
        self.sessions = conversations.session_keys(spec.sessions) if spec.sessions else []
        self.i = 0

    def _next(self) -> datasets.GenMemory:
        while True:
            try:
                return next(self.writes)
            except StopIteration:
                self.write_spec = dataclasses.replace(
                    self.write_spec, seed=self.write_spec.seed + 7
                )
                self.writes = iter(datasets.generate(self.write_spec))

    def next_memories(self, n: int) -> tuple[str, str, list[memory_pb2.Memory]]:
        """n new memories for one user (spread: a random user; bursts: the first one's)."""
        batch = [self._next() for _ in range(n)]
        if self.spec.write_users == "spread":
            tenant, user = self.users[self.rng.randrange(len(self.users))]
        else:
            tenant, user = batch[0].tenant, batch[0].user
        return tenant, user, [to_proto(m) for m in batch]

    def pick(self) -> str:
        op = self.spec.operation
        if op == "mixed":
            return "write_single" if self.rng.random() < self.spec.write_fraction else "recall"
        return op


class _Stubs:
    """Both services on one channel (they share the server's port)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.memory = memory_service_pb2_grpc.MemoryServiceStub(channel)
        self.sessions = session_service_pb2_grpc.SessionServiceStub(channel)


async def _call(
    stub: _Stubs, work: _Workload, op: str, rec: _Recorder, intended: float, deadline_s: float
) -> None:
    code = "OK"
    try:
        if op == "recall":
            tenant, user, query = work.queries[work.i % len(work.queries)]
            work.i += 1
            request = memory_service_pb2.RecallRequest(
                user_id=user,
                query=query,
                top_k=work.spec.top_k,
                skip_profile=work.spec.skip_profile,
            )
            await stub.memory.Recall(
                request, timeout=deadline_s, metadata=(("x-recalld-tenant", tenant),)
            )
        elif op == "context":
            key = work.sessions[work.rng.randrange(len(work.sessions))]
            query = ""
            if work.rng.random() >= work.spec.empty_query_share:
                query = work.queries[work.i % len(work.queries)][2]
                work.i += 1
            await stub.sessions.GetContext(
                session_service_pb2.GetContextRequest(
                    user_id=key.user,
                    session_id=key.session_id,
                    query=query,
                    token_budget=work.spec.token_budget,
                    memory_top_k=work.spec.top_k,
                    skip_profile=work.spec.skip_profile,
                ),
                timeout=deadline_s,
                metadata=(("x-recalld-tenant", key.tenant),),
            )
        else:
            n = 1 if op == "write_single" else work.spec.batch_size
            tenant, user, memories = work.next_memories(n)
            response = await stub.memory.Write(
                memory_service_pb2.WriteRequest(user_id=user, memories=memories),
                timeout=deadline_s,
                metadata=(("x-recalld-tenant", tenant),),
            )
            if intended >= rec.measure_from:
                for result in response.results:
                    name = memory_service_pb2.WriteOutcome.Name(result.outcome)
                    rec.outcomes[name] = rec.outcomes.get(name, 0) + 1
    except grpc.aio.AioRpcError as error:
        code = error.code().name
    except Exception as error:  # a client-side failure still counts, by type
        code = f"CLIENT_{type(error).__name__}"
    rec.record(op, intended, time.perf_counter(), code)


async def _run_worker(spec: LoadSpec, worker: int, start_wall: float) -> dict[str, Any]:
    work = _Workload(spec, worker)
    channels = [grpc.aio.insecure_channel(spec.address) for _ in range(spec.channels_per_process)]
    stubs = [_Stubs(c) for c in channels]
    for channel in channels:
        await channel.channel_ready()
    await asyncio.sleep(max(0.0, start_wall - time.time()))
    t0 = time.perf_counter()
    rec = _Recorder(t0 + spec.warmup_s, t0 + spec.warmup_s + spec.duration_s)
    end = rec.measure_to
    cpu_start = cpu_end = os.times()
    max_in_flight = 0

    if spec.mode == "closed":
        share = spec.concurrency // spec.processes + (
            1 if worker < spec.concurrency % spec.processes else 0
        )

        async def stream(k: int) -> None:
            stub = stubs[k % len(stubs)]
            while True:
                now = time.perf_counter()
                if now >= end:
                    return
                await _call(stub, work, work.pick(), rec, now, spec.timeout_s)

        tasks = [asyncio.create_task(stream(k)) for k in range(share)]
        await asyncio.sleep(max(0.0, rec.measure_from - time.perf_counter()))
        cpu_start = os.times()
        await asyncio.sleep(max(0.0, end - time.perf_counter()))
        cpu_end = os.times()
        await asyncio.gather(*tasks)
        max_in_flight = share
    else:
        rate = spec.rate / spec.processes
        rng = random.Random(spec.seed * 7 + worker)
        in_flight: set[asyncio.Task[None]] = set()
        next_at = t0
        k = 0
        measuring = False
        while next_at < end:
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if not measuring and next_at >= rec.measure_from:
                cpu_start = os.times()
                measuring = True
            if len(in_flight) >= spec.max_in_flight:
                if next_at >= rec.measure_from:
                    rec.dropped += 1
            else:
                task = asyncio.create_task(
                    _call(stubs[k % len(stubs)], work, work.pick(), rec, next_at, spec.timeout_s)
                )
                in_flight.add(task)
                task.add_done_callback(in_flight.discard)
                max_in_flight = max(max_in_flight, len(in_flight))
            k += 1
            next_at += rng.expovariate(rate)
        cpu_end = os.times()
        if in_flight:
            await asyncio.wait(in_flight, timeout=spec.timeout_s + 1)
    for channel in channels:
        await channel.close(None)
    cpu = (cpu_end.user - cpu_start.user) + (cpu_end.system - cpu_start.system)
    return {
        "worker": worker,
        "ok": rec.ok,
        "errors": rec.errors,
        "outcomes": rec.outcomes,
        "dropped": rec.dropped,
        "warmup_calls": rec.warmup_calls,
        "max_in_flight": max_in_flight,
        "cpu_s": cpu,
        "hist": {op: base64.b64encode(h.encode()).decode() for op, h in rec.hist.items()},
    }


def _worker_main(spec: LoadSpec, worker: int, start_wall: float, queue: Any) -> None:
    try:
        queue.put(asyncio.run(_run_worker(spec, worker, start_wall)))
    except BaseException as error:  # report, never hang the parent
        queue.put({"worker": worker, "fatal": repr(error)})


def summarize(hist: HdrHistogram, count: int, window_s: float) -> dict[str, float]:
    ms = 1000.0
    return {
        "count": count,
        "throughput_rps": count / window_s if window_s else 0.0,
        "p50_ms": hist.get_value_at_percentile(50) / ms,
        "p90_ms": hist.get_value_at_percentile(90) / ms,
        "p99_ms": hist.get_value_at_percentile(99) / ms,
        "p999_ms": hist.get_value_at_percentile(99.9) / ms,
        "max_ms": hist.get_max_value() / ms,
        "mean_ms": hist.get_mean_value() / ms,
    }


def run(
    spec: LoadSpec, server_pid: int | None = None, embedder_pid: int | None = None
) -> dict[str, Any]:
    """Runs one load point and returns its merged result (JSON-ready).

    Server CPU is the server process and its children (the Milvus Lite engine, the
    bundled model's process), also given by process; `embedder_pid` is an embedding
    endpoint's process, not the server's child, measured apart over the same window.
    """
    if spec.operation not in OPERATIONS:
        raise ValueError(f"unknown operation {spec.operation!r}")
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    start_wall = time.time() + 2.0 + 0.3 * spec.processes  # spawn + imports + channel set-up
    procs = [
        ctx.Process(target=_worker_main, args=(spec, w, start_wall, queue), daemon=True)
        for w in range(spec.processes)
    ]
    for p in procs:
        p.start()
    time.sleep(max(0.0, start_wall + spec.warmup_s - time.time()))
    server_cpu_start = tree_cpu_s(server_pid) if server_pid else 0.0
    by_process_start = cpu_by_process(server_pid) if server_pid else {}
    embedder_cpu_start = tree_cpu_s(embedder_pid) if embedder_pid else 0.0
    time.sleep(max(0.0, start_wall + spec.warmup_s + spec.duration_s - time.time()))
    server_cpu_end = tree_cpu_s(server_pid) if server_pid else 0.0
    by_process_end = cpu_by_process(server_pid) if server_pid else {}
    embedder_cpu_end = tree_cpu_s(embedder_pid) if embedder_pid else 0.0
    bound = spec.warmup_s + spec.duration_s + spec.timeout_s + 60
    parts = [queue.get(timeout=bound) for _ in procs]
    for p in procs:
        p.join(timeout=10)
    fatal = [p["fatal"] for p in parts if "fatal" in p]
    if fatal:
        raise RuntimeError(f"load worker failed: {fatal}")
    merged: dict[str, HdrHistogram] = {}
    ok: dict[str, int] = {}
    errors: dict[str, int] = {}
    outcomes: dict[str, int] = {}
    for part in parts:
        for op, encoded in part["hist"].items():
            merged.setdefault(op, new_histogram()).add(
                HdrHistogram.decode(base64.b64decode(encoded))
            )
        for src, dst in ((part["ok"], ok), (part["errors"], errors), (part["outcomes"], outcomes)):
            for key, value in src.items():
                dst[key] = dst.get(key, 0) + value
    window = spec.duration_s
    total = new_histogram()
    for h in merged.values():
        total.add(h)
    client_cpu = sum(p["cpu_s"] for p in parts)
    return {
        "spec": {k: v for k, v in dataclasses.asdict(spec).items() if k != "dataset"},
        "dataset": spec.dataset.name,
        "all": summarize(total, sum(ok.values()), window),
        "by_operation": {op: summarize(h, ok[op], window) for op, h in merged.items()},
        "errors": errors,
        "error_count": sum(errors.values()),
        "write_outcomes": outcomes,
        "dropped": sum(p["dropped"] for p in parts),
        "max_in_flight": sum(p["max_in_flight"] for p in parts),
        "client_cpu_s": client_cpu,
        "client_cpu_cores": client_cpu / window,
        "server_cpu_cores": (server_cpu_end - server_cpu_start) / window if server_pid else None,
        "server_cpu_by_process_cores": {
            name: (end - by_process_start.get(name, 0.0)) / window
            for name, end in by_process_end.items()
        },
        "embedder_cpu_cores": (
            (embedder_cpu_end - embedder_cpu_start) / window if embedder_pid else None
        ),
        "histograms": {op: base64.b64encode(h.encode()).decode() for op, h in merged.items()},
        "window_wall": [start_wall + spec.warmup_s, start_wall + spec.warmup_s + spec.duration_s],
    }


async def _prewarm(address: str, users: list[tuple[str, str]], concurrency: int) -> list[float]:
    channel = grpc.aio.insecure_channel(address)
    stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
    todo = list(users)
    latencies: list[float] = []

    async def worker() -> None:
        while todo:
            tenant, user = todo.pop()
            started = time.perf_counter()
            await stub.Recall(
                memory_service_pb2.RecallRequest(user_id=user, query="what does the user like?"),
                timeout=30,
                metadata=(("x-recalld-tenant", tenant),),
            )
            latencies.append((time.perf_counter() - started) * 1000.0)

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await channel.close(None)
    return latencies


def prewarm(
    address: str, dataset: datasets.DatasetSpec, concurrency: int = 4, server_pid: int | None = None
) -> dict[str, Any]:
    """Recalls every user of the dataset once, so the timed load sees cached users.

    These are first recalls of cold users: their latency (and the server CPU they
    took) is returned, the figure for a user the server has not held yet.
    """
    users = datasets.users_of(dataset)
    cpu_start = tree_cpu_s(server_pid) if server_pid else 0.0
    started = time.perf_counter()
    latencies = sorted(asyncio.run(_prewarm(address, users, concurrency)))
    elapsed = time.perf_counter() - started
    cpu = (tree_cpu_s(server_pid) - cpu_start) if server_pid else 0.0

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]

    return {
        "users": len(users),
        "concurrency": concurrency,
        "seconds": elapsed,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "max_ms": latencies[-1],
        "server_cpu_ms_per_recall": 1000.0 * cpu / len(users) if server_pid else None,
    }


async def _prewarm_sessions(
    address: str, keys: list[conversations.SessionKey], token_budget: int, concurrency: int
) -> list[float]:
    channel = grpc.aio.insecure_channel(address)
    stub = session_service_pb2_grpc.SessionServiceStub(channel)
    todo = list(keys)
    latencies: list[float] = []

    async def worker() -> None:
        while todo:
            key = todo.pop()
            started = time.perf_counter()
            await stub.GetContext(
                session_service_pb2.GetContextRequest(
                    user_id=key.user, session_id=key.session_id, token_budget=token_budget
                ),
                timeout=30,
                metadata=(("x-recalld-tenant", key.tenant),),
            )
            latencies.append((time.perf_counter() - started) * 1000.0)

    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        await channel.close(None)
    return latencies


def prewarm_sessions(
    address: str,
    sessions: conversations.SessionSpec,
    token_budget: int = 2000,
    concurrency: int = 4,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """GetContext (no query) once for every loaded session before the timed points.

    The first read of a session after the server starts; its latency and server CPU
    are returned, like prewarm's cold recalls.
    """
    keys = conversations.session_keys(sessions)
    cpu_start = tree_cpu_s(server_pid) if server_pid else 0.0
    started = time.perf_counter()
    latencies = sorted(asyncio.run(_prewarm_sessions(address, keys, token_budget, concurrency)))
    elapsed = time.perf_counter() - started
    cpu = (tree_cpu_s(server_pid) - cpu_start) if server_pid else 0.0

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]

    return {
        "sessions": len(keys),
        "concurrency": concurrency,
        "seconds": elapsed,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "max_ms": latencies[-1],
        "server_cpu_ms_per_call": 1000.0 * cpu / len(keys) if server_pid else None,
    }
