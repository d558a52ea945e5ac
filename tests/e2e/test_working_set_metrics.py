"""The working set's counters reach the configured metrics exporter."""

from __future__ import annotations

import json
from pathlib import Path

from recalld_client import RecalldClient
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import start_server
from tests.e2e.helpers import memory


async def test_hits_loads_and_users_are_exported(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "metrics.jsonl"
    running = await start_server(
        ServerConfig(port=0, storage="memory", data_dir=tmp_path / "data"),
        embedder=embedder,
        environ={"RECALLD_OTEL_METRICS_FILE": str(path), "OTEL_METRIC_EXPORT_INTERVAL": "60000"},
    )
    try:
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant="metrics") as client:
            await client.write("ana", [memory("Ana drinks green tea")])
            for user in ("ana", "ben"):
                for _ in range(3):
                    await client.recall(user, "tea")
        working_set = running.memories.working_set
        opens, hits, loads = working_set.opens, working_set.hits, working_set.loads
    finally:
        await running.stop(grace_s=1)  # shuts the meter provider down: one last export
    last: dict[str, float] = {}
    for line in path.read_text().splitlines():
        point = json.loads(line)
        last[point["name"]] = point["value"] if "value" in point else point["count"]
    assert last["recalld.working_set.opens"] == opens >= 6
    assert last["recalld.working_set.hits"] == hits
    assert last["recalld.working_set.loads"] == loads
    assert opens == hits + loads  # no user was uncacheable or dirty here
    assert last["recalld.working_set.users"] == 2
    assert last["recalld.working_set.bytes"] > 0
