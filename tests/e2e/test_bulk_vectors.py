"""A store copied with its vectors: `recalld export --with-vectors`, then `recalld import
--with-vectors` into another store, through the real commands, Milvus Lite files and a
real server on each side."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from recalld_client import RecalldClient
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess

TENANT = "bulk"


def _recalld(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recalld_server", *argv, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _export(data_dir: Path, out: Path) -> list[str]:
    done = _recalld("export", "--with-vectors", "--data-dir", str(data_dir), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store written through a real server (with a supersede and a forget), exported."""
    root = tmp_path_factory.mktemp("bulk")
    server = ServerProcess(root / "source").start()
    try:

        async def write() -> None:
            async with RecalldClient(server.address, tenant=TENANT) as client:
                for user in ("ana", "ben"):
                    await client.write(
                        user,
                        [memory(f"{user} plays chess on Sundays"), memory(f"{user} drinks oolong")],
                    )
                await client.write("ana", [memory("ana lives in Porto", topic_key="home.city")])
                await client.write("ana", [memory("ana moved to Lisbon", topic_key="home.city")])
                listed = await client.list("ben")
                await client.forget("ben", [listed.memories[0].id])

        asyncio.run(write())
    finally:
        server.terminate()
    lines = _export(root / "source", root / "source.jsonl")
    return root, lines


def test_the_export_holds_every_row_with_its_vector(source: tuple[Path, list[str]]) -> None:
    _, lines = source
    header = json.loads(lines[0])
    assert header["recalld_vectors"] == 1 and header["rows"] == len(lines) - 1 == 6
    assert header["dimension"] == 512
    rows = [json.loads(line) for line in lines[1:]]
    assert {r["user_id"] for r in rows} == {"ana", "ben"}
    assert {r["status"] for r in rows} >= {1, 2, 3}  # active, superseded, archived
    assert all(len(r["embedding"]) > 2000 for r in rows)  # 512 float32 in base64


def test_an_import_reproduces_the_store_and_a_second_run_writes_nothing(
    source: tuple[Path, list[str]],
) -> None:
    root, lines = source
    target = root / "copy"
    first = _recalld(
        "import", "--with-vectors", str(root / "source.jsonl"), "--data-dir", str(target)
    )
    assert first.returncode == 0, first.stderr
    assert "6 read, 6 inserted, 0 already there" in first.stderr
    again = _recalld(
        "import", "--with-vectors", str(root / "source.jsonl"), "--data-dir", str(target)
    )
    assert again.returncode == 0, again.stderr
    assert "6 read, 0 inserted, 6 already there" in again.stderr
    # Byte for byte the same rows, vectors included: nothing was embedded again.
    assert _export(target, root / "copy.jsonl") == lines

    server = ServerProcess(target).start()
    try:

        async def recall() -> list[str]:
            async with RecalldClient(server.address, tenant=TENANT) as client:
                found = await client.recall("ana", "Where does ana live?")
                return [item.memory.content for item in found.items]

        assert asyncio.run(recall())[0] == "ana moved to Lisbon"
    finally:
        server.terminate()


def test_an_interrupted_import_resumes_with_what_is_missing(
    source: tuple[Path, list[str]],
) -> None:
    root, lines = source
    half = root / "half.jsonl"
    half.write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")
    target = root / "resumed"
    assert (
        _recalld("import", "--with-vectors", str(half), "--data-dir", str(target)).returncode == 0
    )
    done = _recalld(
        "import", "--with-vectors", str(root / "source.jsonl"), "--data-dir", str(target)
    )
    assert done.returncode == 0, done.stderr
    assert "6 read, 3 inserted, 3 already there" in done.stderr
    assert _export(target, root / "resumed-out.jsonl") == lines


def test_a_fresh_store_takes_each_id_once_across_batches(
    source: tuple[Path, list[str]],
) -> None:
    # A fresh store skips looking ids up in the store: the file's own repeats must
    # still be caught, also when they fall in batches written at the same time.
    root, lines = source
    repeated = root / "repeated.jsonl"
    repeated.write_text("\n".join([*lines, lines[1], lines[5], lines[1]]) + "\n", encoding="utf-8")
    target = root / "fresh-repeats"
    done = _recalld(
        "import", "--with-vectors", str(repeated), "--data-dir", str(target), "--batch-size", "2"
    )
    assert done.returncode == 0, done.stderr
    assert "9 read, 6 inserted, 3 already there" in done.stderr
    assert _export(target, root / "fresh-repeats-out.jsonl") == lines


def test_another_models_vectors_are_refused(source: tuple[Path, list[str]]) -> None:
    root, lines = source
    header = json.loads(lines[0])
    foreign = root / "foreign.jsonl"
    header.update(model_id="someone/else-v1", dimension=384)
    foreign.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    done = _recalld("import", "--with-vectors", str(foreign), "--data-dir", str(root / "copy"))
    assert done.returncode == 2
    assert "the store serves" in done.stderr and "someone/else-v1" in done.stderr


def test_a_malformed_line_stops_the_import_and_names_the_line(
    source: tuple[Path, list[str]],
) -> None:
    root, lines = source
    broken = root / "broken.jsonl"
    row = json.loads(lines[3])
    row["embedding"] = row["embedding"][:-8]
    broken.write_text("\n".join([*lines[:3], json.dumps(row), *lines[4:]]) + "\n", encoding="utf-8")
    done = _recalld(
        "import", "--with-vectors", str(broken), "--data-dir", str(root / "broken-store"),
        "--batch-size", "2",
    )  # fmt: skip
    assert done.returncode == 1
    assert "line 4: the embedding has" in done.stderr
    assert "2 rows were written before it" in done.stderr
    plain = root / "plain.jsonl"  # what `recalld export` writes without vectors
    plain.write_text('{"content": "ana drinks oolong", "user_id": "ana"}\n', encoding="utf-8")
    refused = _recalld("import", "--with-vectors", str(plain), "--data-dir", str(root / "x"))
    assert refused.returncode == 2
    assert "line 1 is not the header of a vectors export" in refused.stderr
