"""Overload and shutdown: calls are shed with RESOURCE_EXHAUSTED + RetryInfo, never
CANCELLED or left hanging, and SIGTERM lets every accepted call finish."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recalld.v1 import memory_service_pb2, memory_service_pb2_grpc
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.figures import record

TENANT = (("x-recalld-tenant", "overload"),)


@pytest.fixture(scope="module")
async def small_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    """One call runs at a time, two may wait (the in-memory backend: fast, no disk)."""
    running = await start_server(
        ServerConfig(
            port=0,
            storage="memory",
            data_dir=tmp_path_factory.mktemp("overload"),
            max_in_flight=1,
            max_queued=2,
            max_queue_wait_s=5,
        ),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


async def test_a_burst_beyond_the_queue_is_shed_with_retry_info(
    small_server: RunningServer,
) -> None:
    address = f"127.0.0.1:{small_server.port}"
    async with grpc.aio.insecure_channel(address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)

        async def recall(i: int) -> str:
            request = memory_service_pb2.RecallRequest(user_id=f"u{i}", query=f"question {i}")
            try:
                await stub.Recall(request, timeout=30, metadata=TENANT)
            except grpc.aio.AioRpcError as error:
                if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    shed = RecalldError.from_rpc_error(error)
                    assert shed.shed and shed.retry_delay_s is not None
                    assert 0 < shed.retry_delay_s <= 5
                return error.code().name
            return "OK"

        calls = [asyncio.create_task(recall(i)) for i in range(40)]
        # Health is never shed, even with every slot and queue place taken.
        probe = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert probe.status == health_pb2.HealthCheckResponse.SERVING
        codes = Counter(await asyncio.gather(*calls))
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
    assert codes["RESOURCE_EXHAUSTED"] > 0 and codes["OK"] >= 3
    record("overload_burst", calls=40, max_in_flight=1, max_queued=2, **dict(codes))


async def _burst(address: str, calls: int, channels: int, timeout_s: float = 60) -> Counter[str]:
    """`calls` recalls at once over `channels` raw channels (no client retries)."""
    opened = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    stubs = [memory_service_pb2_grpc.MemoryServiceStub(c) for c in opened]

    async def recall(i: int) -> str:
        request = memory_service_pb2.RecallRequest(user_id=f"u{i % 200}", query=f"question {i}")
        try:
            await stubs[i % channels].Recall(request, timeout=timeout_s, metadata=TENANT)
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                shed = RecalldError.from_rpc_error(error)
                assert shed.shed and shed.retry_delay_s is not None, error.details()
            return error.code().name
        return "OK"

    try:
        return Counter(await asyncio.gather(*(recall(i) for i in range(calls))))
    finally:
        for channel in opened:
            await channel.close(None)


async def test_bursts_at_default_settings_are_served_or_shed_never_refused(
    tmp_path: Path,
) -> None:
    """Default flags, the embedded default, bursts of 1k and 5k calls on one channel,
    with the Python client's recall deadline (5 s).

    Before, a connection took 256 streams and gRPC kept 3,000 calls pending: a
    1k burst on one channel lost 640 calls as UNAVAILABLE (refused streams) and a
    5k burst 2,170 as CANCELLED, with none shed. Then, with admission control but
    blind to the calls still in the transport, a 5k burst lost up to 2,362 calls
    as DEADLINE_EXCEEDED.
    """
    server = ServerProcess(tmp_path / "data").start()
    try:
        for calls in (1000, 5000):
            codes = await _burst(server.address, calls, channels=1, timeout_s=5.0)
            assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, (calls, codes)
            assert codes["OK"] > 0
            record(f"overload_default_burst_{calls}", calls=calls, **dict(codes))
        async with grpc.aio.insecure_channel(server.address) as channel:
            probe = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
            assert probe.status == health_pb2.HealthCheckResponse.SERVING
        assert await _burst(server.address, 20, channels=1) == Counter(OK=20)
    finally:
        server.terminate()


async def test_the_client_retries_shed_calls_even_writes(
    small_server: RunningServer, user_id: str
) -> None:
    async with RecalldClient(f"127.0.0.1:{small_server.port}", tenant="overload") as client:
        written = await asyncio.gather(
            *(client.write(user_id, [memory(f"Burst memory number {i}")]) for i in range(8))
        )
        listed = await client.list(user_id, page_size=50)
    assert len({r.results[0].id for r in written}) == 8
    assert len(listed.memories) == 8


async def test_sigterm_lets_accepted_calls_finish(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "--shutdown-grace", "30").start()
    try:
        async with RecalldClient(server.address, tenant="drain") as client:
            writes = [
                asyncio.create_task(client.write(f"user-{i % 4}", [memory(f"Drained write {i}")]))
                for i in range(40)
            ]
            await asyncio.sleep(0.05)  # every call is on the wire before the signal
            assert server.process is not None
            server.process.send_signal(signal.SIGTERM)
            results = await asyncio.gather(*writes, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        assert failures == [], failures
        record("sigterm_drain", calls_in_flight=40, cut=len(failures))
        assert server.process.wait(60) == 0
    finally:
        if server.process is not None and server.process.poll() is None:
            server.kill()
    # Everything acknowledged is there after a restart.
    again = ServerProcess(tmp_path / "data").start()
    try:
        async with RecalldClient(again.address, tenant="drain") as client:
            stored = [len((await client.list(f"user-{u}")).memories) for u in range(4)]
        assert sum(stored) == 40
    finally:
        again.terminate()


async def test_silent_and_idle_connections_are_closed(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    """Connections that never speak, or stop calling, do not pile up."""
    running = await start_server(
        ServerConfig(
            port=0,
            storage="memory",
            data_dir=tmp_path,
            connection_idle_s=1.0,
            handshake_timeout_s=1.0,
        ),
        embedder=embedder,
    )
    try:
        silent = []
        for _ in range(20):  # TCP connects, never sends the HTTP/2 preface
            reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
            silent.append((reader, writer))
        started = time.monotonic()
        for reader, _ in silent:
            await asyncio.wait_for(reader.read(), 10)  # read() returns only at EOF: closed
        assert time.monotonic() - started < 8
        for _, writer in silent:
            writer.close()

        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            request = memory_service_pb2.ListRequest(user_id="idle")
            await stub.List(request, metadata=TENANT, timeout=10)
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            # The server closes the idle connection (GOAWAY): the channel goes idle.
            state = channel.get_state()
            deadline = time.monotonic() + 8
            while state == grpc.ChannelConnectivity.READY and time.monotonic() < deadline:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(channel.wait_for_state_change(state), 1)
                state = channel.get_state()
            assert state != grpc.ChannelConnectivity.READY
            await stub.List(request, metadata=TENANT, timeout=10)  # and reconnects on use
    finally:
        await running.stop(grace_s=1)
