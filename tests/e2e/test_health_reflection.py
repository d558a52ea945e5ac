"""Standard services: grpc.health.v1 and server reflection."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from recalld_server.wiring.server import RunningServer
from tests.services import free_port


async def test_health_reports_serving(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "recalld.v1.MemoryService"):
            response = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_lists_the_memory_service(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        services: set[str] = set()
        async for response in stub.ServerReflectionInfo(iter([request]), timeout=5):
            services.update(s.name for s in response.list_services_response.service)
        assert {"recalld.v1.MemoryService", "grpc.health.v1.Health"} <= services


async def test_the_health_command_reports_a_serving_server(server: RunningServer) -> None:
    """`recalld health`, the container and compose health check."""
    command = [sys.executable, "-m", "recalld_server", "health", "--address"]
    serving = await asyncio.to_thread(
        subprocess.run,
        [*command, f"127.0.0.1:{server.port}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert serving.returncode == 0 and serving.stdout.strip() == "SERVING", serving.stderr
    absent = await asyncio.to_thread(
        subprocess.run,
        [*command, f"127.0.0.1:{free_port()}", "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert absent.returncode == 1
