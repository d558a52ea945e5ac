"""The `recalld` command."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from recalld_server.config import load_config

SWITCH_INTERVAL_S = 0.0005
"""How long a thread may hold the GIL before another that waits gets it."""


async def _serve(argv: Sequence[str]) -> None:
    from recalld_server.wiring.server import start_server

    config = load_config(argv, os.environ)
    running = await start_server(config, environ=os.environ)
    # Everything built so far (modules, the model, dictionaries) lives as long as the
    # process. Frozen, it leaves the collector's full passes, which otherwise scan it
    # all and stall every call in flight (~70 ms each, measured at 10k memories).
    gc.collect()
    gc.freeze()
    # The event loop shares the GIL with gRPC's pollers and the threads that wait on
    # the model's process. At the default 5 ms switch interval a completed call can
    # wait several slices to reach the loop: recall p99 at 8 callers 237-262 ms, at
    # 0.5 ms 81-89 ms (benchmarks/README.md, same run, 10k store, when the model
    # still ran on a thread of this process).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    print(f"recalld listening on {config.host}:{running.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    # Stop accepting, let in-flight and queued calls finish, then close storage.
    await running.stop(config.shutdown_grace_s)


def _migrate(command: str, argv: Sequence[str]) -> int:
    if "--with-vectors" in argv:  # straight from and to the store, no re-embedding
        from recalld_server.maintenance import bulk_commands

        main = bulk_commands.main_import if command == "import" else bulk_commands.main_export
        return main(argv, os.environ)
    from recalld_server.migrate import commands

    if command == "import":
        return commands.main_import(argv, os.environ)
    return commands.main_export(argv, os.environ)


def _reembed(argv: Sequence[str]) -> int:
    from recalld_server.maintenance.commands import main_reembed

    return main_reembed(argv, os.environ)


def _calibrate(argv: Sequence[str]) -> int:
    from recalld_server.maintenance.calibrate import main_calibrate

    return main_calibrate(argv, os.environ)


def _mcp(argv: Sequence[str]) -> int:
    """`recalld-mcp`, the MCP facade (a client of a running recalld; docs/mcp.md)."""
    from recalld_mcp.cli import main as main_mcp

    return main_mcp(argv)


def _health(argv: Sequence[str]) -> int:
    """Exit 0 when the server answers SERVING (container and compose health checks)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    parser = argparse.ArgumentParser(prog="recalld health", description=_health.__doc__)
    parser.add_argument("--address", default="127.0.0.1:50051")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument(
        "--tls-ca", type=Path, default=None, help="PEM roots: check a TLS server with them"
    )
    args = parser.parse_args(list(argv))
    channel = (
        grpc.secure_channel(args.address, grpc.ssl_channel_credentials(args.tls_ca.read_bytes()))
        if args.tls_ca
        else grpc.insecure_channel(args.address)
    )
    try:
        with channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=args.timeout
            )
    except grpc.RpcError as error:
        print(f"recalld health: {args.address}: {error.code().name}", file=sys.stderr)
        return 1
    serving = answer.status == health_pb2.HealthCheckResponse.SERVING
    print(health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status))
    return 0 if serving else 1


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: `recalld serve|import|export|reembed|calibrate|mcp|health [flags]`."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="recalld", description="recalld memory backend")
    parser.add_argument(
        "command",
        choices=["serve", "import", "export", "reembed", "calibrate", "mcp", "health"],
        help="serve: run the server; import / export: migrate memories (docs/migration.md); "
        "reembed: switch the embedding model (docs/lifecycle.md); "
        "calibrate: measure the embedding model's thresholds (docs/calibration.md); "
        "mcp: serve recalld's memory to MCP agents (docs/mcp.md); "
        "health: exit 0 when a server answers SERVING (container health checks)",
    )
    parsed = parser.parse_args(args[:1])
    logging.basicConfig(
        level=os.environ.get("RECALLD_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if parsed.command == "serve":
        asyncio.run(_serve(args[1:]))
    elif parsed.command == "reembed":
        sys.exit(_reembed(args[1:]))
    elif parsed.command == "calibrate":
        sys.exit(_calibrate(args[1:]))
    elif parsed.command == "mcp":
        sys.exit(_mcp(args[1:]))
    elif parsed.command == "health":
        sys.exit(_health(args[1:]))
    else:
        sys.exit(_migrate(parsed.command, args[1:]))


if __name__ == "__main__":
    main()
