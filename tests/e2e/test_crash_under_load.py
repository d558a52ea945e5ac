"""kill -9 under write load: everything acknowledged is there once after a restart,
and every call left in doubt, retried with its request id, lands exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from recalld_client import RecalldClient, RecalldError, RetryPolicy
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.figures import record

pytestmark = pytest.mark.slow

CYCLES = 2
WRITERS = 8


async def _write_until_killed(
    address: str, writer: int, cycle: int, acknowledged: dict[str, str], in_doubt: set[str]
) -> None:
    async with RecalldClient(address, tenant="crash", retry=RetryPolicy(attempts=1)) as client:
        step = 0
        while True:
            step += 1
            request_id = f"c{cycle}-w{writer}-{step}"
            content = f"Crash cycle {cycle} writer {writer} fact {step}"
            try:
                written = await client.write(
                    f"crash-user-{writer}", [memory(content)], request_id=request_id, timeout=10
                )
            except RecalldError:
                in_doubt.add(request_id)  # sent, never answered: stored or not
                return
            acknowledged[request_id] = written.results[0].id


async def test_acknowledged_writes_survive_kill_9_under_load(tmp_path: Path) -> None:
    acknowledged: dict[str, str] = {}
    in_doubt: set[str] = set()
    for cycle in range(CYCLES):
        server = ServerProcess(tmp_path / "data").start()
        writers = [
            asyncio.create_task(
                _write_until_killed(server.address, w, cycle, acknowledged, in_doubt)
            )
            for w in range(WRITERS)
        ]
        await asyncio.sleep(6)
        server.kill()  # SIGKILL, with writes in flight
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*writers), 30)

    server = ServerProcess(tmp_path / "data").start()
    started = time.monotonic()
    try:
        async with RecalldClient(server.address, tenant="crash") as client:
            # The callers retry what they never heard back about, with the same ids.
            for request_id in sorted(in_doubt):
                cycle_part, writer_part, step_part = request_id.split("-")  # c<n>-w<n>-<n>
                cycle, writer, step = int(cycle_part[1:]), int(writer_part[1:]), int(step_part)
                content = f"Crash cycle {cycle} writer {writer} fact {step}"
                again = await client.write(
                    f"crash-user-{writer}", [memory(content)], request_id=request_id
                )
                acknowledged[request_id] = again.results[0].id
            contents: list[str] = []
            for writer in range(WRITERS):
                listed = await client.list(f"crash-user-{writer}", page_size=500)
                assert not listed.next_page_token
                contents.extend(m.content for m in listed.memories)
                stored_ids = {m.id for m in listed.memories}
                for request_id, memory_id in acknowledged.items():
                    if f"-w{writer}-" in request_id:
                        assert memory_id in stored_ids, request_id
        duplicates = len(contents) - len(set(contents))
        assert duplicates == 0
        assert len(contents) == len(acknowledged)
    finally:
        server.terminate()
    assert len(acknowledged) > 20 * CYCLES
    record(
        "kill9_under_write_load",
        cycles=CYCLES,
        writers=WRITERS,
        acknowledged=len(acknowledged) - len(in_doubt),
        in_doubt_retried=len(in_doubt),
        present=len(contents),
        lost=0,
        duplicates=duplicates,
        restart_to_verified_s=round(time.monotonic() - started, 1),
    )
