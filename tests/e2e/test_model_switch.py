"""Switching the embedding model with `recalld reembed`, through the real command.

A store written with the default model (USE, 512-d) is moved to WordLlama
(256-d) and back: every memory keeps its id, version, etag, status and history,
recall works in the new space, the old collection is gone (so a hard forget
leaves nothing behind in it), and a server can never start on one model's
collection with another model's embedder.

The servers around the switch run as child processes, as in production: Milvus
Lite keeps one engine per file and process for the life of the process, so an
in-process server would not see what another process changed in the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.usem import USEM3_MODEL_ID
from recalld_server.embedding.wordllama import WORDLLAMA_MODEL_ID
from recalld_server.storage.milvus_collection import MEMORIES_PREFIX, collection_name_for
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.slow


def reembed(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs `recalld reembed` as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "recalld_server", "reembed", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "RECALLD_LOG_LEVEL": "WARNING"},
    )


async def start(data_dir: Path, embedder: MicroBatchingEmbedder | None = None) -> RunningServer:
    config = ServerConfig(host="127.0.0.1", port=0, data_dir=data_dir, consolidate_interval_s=0)
    return await start_server(config, embedder=embedder)


def memory_collections(data_dir: Path) -> list[str]:
    """The memories collections in the store, read by `recalld reembed --list`."""
    listed = reembed(data_dir, "--list")
    assert listed.returncode == 0, listed.stderr
    return sorted(line.split()[0] for line in listed.stdout.splitlines() if MEMORIES_PREFIX in line)


def serve_fails(data_dir: Path, *args: str) -> str:
    """Runs `recalld serve` expecting it to refuse to start; returns its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "recalld_server", "serve", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    return done.stderr


def without_model(m: memory_pb2.Memory) -> memory_pb2.Memory:
    copy = memory_pb2.Memory()
    copy.CopyFrom(m)
    copy.ClearField("embedding_model")
    return copy


async def test_switch_model_and_back(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = ServerProcess(data_dir).start()
    try:
        address = server.address
        async with (
            RecalldClient(address, tenant="acme") as acme,
            RecalldClient(address, tenant="globex") as globex,
        ):
            peanuts = (await acme.write("alice", [memory("Alice is allergic to peanuts")])).results
            americano = await acme.write(
                "alice",
                [
                    memory(
                        "Alice prefers americano coffee",
                        memory_pb2.MEMORY_TYPE_PREFERENCE,
                        topic_key="coffee",
                    )
                ],
            )
            latte = await acme.write(
                "alice",
                [
                    memory(
                        "Alice now prefers latte",
                        memory_pb2.MEMORY_TYPE_PREFERENCE,
                        topic_key="coffee",
                    )
                ],
            )
            assert latte.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_SUPERSEDED
            old_address = (await acme.write("alice", [memory("Alice lives on Elm Street")])).results
            await acme.forget("alice", [old_address[0].id])
            draft = await acme.write("alice", [memory("Alice might enjoy jazz", confidence=0.3)])
            assert draft.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_DRAFT
            order = await acme.write("bob", [memory("Bob's order SO-88231 has shipped")])
            await globex.write("alice", [memory("Globex's Alice is allergic to shellfish")])
            ids = [
                peanuts[0].id,
                americano.results[0].id,
                latte.results[0].id,
                old_address[0].id,
                draft.results[0].id,
            ]
            before = {i: await acme.get("alice", i) for i in ids}
            history_before = await acme.history("alice", americano.results[0].id)

        # Milvus Lite allows one process per store: the command refuses while a server runs.
        refused = reembed(data_dir, "--to", WORDLLAMA_MODEL_ID, "--no-progress")
        assert refused.returncode == 2
        assert "stop the server" in refused.stderr
    finally:
        assert server.terminate() == 0

    planned = reembed(data_dir, "--to", WORDLLAMA_MODEL_ID, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert "dry run" in planned.stdout and "rows: 7 in the source" in planned.stdout
    assert memory_collections(data_dir) == [collection_name_for(USEM3_MODEL_ID)]

    switched = reembed(data_dir, "--to", WORDLLAMA_MODEL_ID)
    assert switched.returncode == 0, switched.stderr
    assert "reembed: 7/7 memories" in switched.stderr  # the progress line
    assert f"switched: {collection_name_for(WORDLLAMA_MODEL_ID)} now serves" in switched.stdout
    assert memory_collections(data_dir) == [collection_name_for(WORDLLAMA_MODEL_ID)]
    listed = reembed(data_dir, "--list")
    assert f"* {WORDLLAMA_MODEL_ID}" in listed.stdout

    # A server asked for the old model can never serve the new collection.
    refused_start = serve_fails(data_dir, "--embedding-model", USEM3_MODEL_ID)
    assert f"recalld reembed --to {USEM3_MODEL_ID}" in refused_start

    server = ServerProcess(data_dir).start()  # follows the store to the new model
    try:
        address = server.address
        async with (
            RecalldClient(address, tenant="acme") as acme,
            RecalldClient(address, tenant="globex") as globex,
        ):
            for memory_id, old in before.items():
                new = await acme.get("alice", memory_id)
                assert new.embedding_model == WORDLLAMA_MODEL_ID
                assert without_model(new) == without_model(old), "only the vector space moved"
            history = await acme.history("alice", americano.results[0].id)
            assert [v.memory.version for v in history] == [v.memory.version for v in history_before]

            hits = await acme.recall("alice", "What is Alice allergic to?", top_k=3)
            assert hits.items[0].memory.id == peanuts[0].id
            assert all("shellfish" not in i.memory.content for i in hits.items)
            coffee = await acme.recall("alice", "Which coffee does Alice prefer?", top_k=5)
            recalled = {i.memory.id for i in coffee.items}
            assert latte.results[0].id in recalled
            assert not recalled & {americano.results[0].id, old_address[0].id, draft.results[0].id}
            shipped = await acme.recall("bob", "SO-88231", top_k=1)
            assert shipped.items[0].memory.id == order.results[0].id
            theirs = await globex.recall("alice", "What is Alice allergic to?", top_k=5)
            assert {i.memory.content for i in theirs.items} == {
                "Globex's Alice is allergic to shellfish"
            }

            # A caller still holding vectors of the old model cannot search with them.
            with pytest.raises(RecalldError) as caught:
                await acme.recall("alice", query_vector=[0.04] * 512)
            assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
            assert [v.field for v in caught.value.field_violations] == ["query_vector"]

            again = await acme.write("alice", [memory("Alice is allergic to peanuts")])
            assert again.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_DUPLICATE
            fresh = await acme.write("alice", [memory("Alice runs every Sunday morning")])
            stored = await acme.get("alice", fresh.results[0].id)
            assert stored.embedding_model == WORDLLAMA_MODEL_ID
    finally:
        assert server.terminate() == 0

    # And back: the vectors are recomputed, so cross-lingual recall (which the
    # English-only model cannot do) works again.
    back = reembed(data_dir, "--to", USEM3_MODEL_ID, "--no-progress")
    assert back.returncode == 0, back.stderr
    assert "embedded: 8 rows" in back.stdout
    server = ServerProcess(data_dir).start()
    try:
        async with RecalldClient(server.address, tenant="acme") as acme:
            hits = await acme.recall("alice", "爱丽丝对什么过敏？", top_k=1)
            assert hits.items[0].memory.id == peanuts[0].id
            await acme.forget("alice", all_of_user=True, mode=memory_service_pb2.FORGET_MODE_HARD)
            assert not (await acme.list("alice")).memories
    finally:
        assert server.terminate() == 0
    # Nothing of the forgotten user survives in a stale copy of another model.
    assert memory_collections(data_dir) == [collection_name_for(USEM3_MODEL_ID)]


async def test_start_flag_naming_another_model_is_refused(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    data_dir = tmp_path / "data"
    running = await start(data_dir, embedder)
    await running.stop(grace_s=1)
    config = ServerConfig(
        host="127.0.0.1", port=0, data_dir=data_dir, embedding_model=WORDLLAMA_MODEL_ID
    )
    with pytest.raises(SystemExit, match=f"reembed --to {WORDLLAMA_MODEL_ID}"):
        await start_server(config)
    config = ServerConfig(
        host="127.0.0.1", port=0, data_dir=tmp_path / "fresh", embedding_model="no-such"
    )
    with pytest.raises(SystemExit, match="unknown embedding model"):
        await start_server(config)


async def test_fresh_store_starts_with_the_requested_model(tmp_path: Path) -> None:
    config = ServerConfig(
        host="127.0.0.1", port=0, data_dir=tmp_path / "data", embedding_model=WORDLLAMA_MODEL_ID
    )
    running = await start_server(config)
    try:
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant="t") as client:
            written = await client.write("u", [memory("The user's cat is called Miso")])
            stored = await client.get("u", written.results[0].id)
            assert stored.embedding_model == WORDLLAMA_MODEL_ID
    finally:
        await running.stop(grace_s=1)
    # A restart without the flag follows the store.
    running = await start(tmp_path / "data")
    try:
        assert running.embedder.model_id == WORDLLAMA_MODEL_ID
    finally:
        await running.stop(grace_s=1)
