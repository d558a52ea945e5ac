"""Column packing builds the very request pymilvus' own row packing builds.

The schemas are the ones recalld creates, described by a real Milvus Lite; the
reference is pymilvus' `Prepare` (what every write sent before the packer). Rows
come from the domain's own row builders, with the awkward values a user sends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient
from pymilvus.client.prepare import Prepare

from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import Memory, MemoryType, Status, Tier
from recalld_server.storage.milvus_collection import (
    MilvusConfig,
    collection_name_for,
    ensure_collection,
    memory_to_row,
)
from recalld_server.storage.milvus_packing import (
    UnsupportedRows,
    pack_columns,
    use_column_packing,
)
from recalld_server.storage.milvus_records import HISTORY, REQUESTS, ensure_record_collections

DIM = 64
MODEL = "packing-model"
AWKWARD = ["", "全部字段 all fields", 'quote " and \\ backslash', "emoji 🧠\u200d", "x" * 3000]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClient]:
    uri = str(Path(tmp_path_factory.mktemp("packing")) / "milvus.db")
    config = MilvusConfig(uri=uri, dimension=DIM, model_id=MODEL)
    ensure_collection(config, collection_name_for(MODEL))
    ensure_record_collections(config)
    opened = MilvusClient(uri=uri)
    yield opened
    opened.close()


def fields_of(client: MilvusClient, collection: str) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = client.describe_collection(collection)["fields"]
    return fields


def memories(count: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        memory = Memory(
            id=new_id(1_700_000_000_000 + i),
            tenant_id=f"tenant-{i % 3}",
            user_id=AWKWARD[i % len(AWKWARD)][:512] or "u",
            content=AWKWARD[(i + 1) % len(AWKWARD)] or "c",
            type=list(MemoryType)[i % len(MemoryType)],
            tier=list(Tier)[i % len(Tier)],
            status=list(Status)[i % len(Status)],
            importance=float(rng.random()),
            confidence=0.1 * (i % 10),
            tags=[AWKWARD[j % len(AWKWARD)][:64] for j in range(i % 4)],
            metadata={"k": i, "nested": {"list": [1, "二", None, 2.5]}, "ü": True} if i % 2 else {},
            created_at=1_700_000_000_000 + i,
            occurred_at=2**62 + i,  # near the int64 ceiling
            expire_at=0,
            expire_explicit=bool(i % 2),
        )
        vector = rng.standard_normal(DIM).astype(np.float32)
        rows.append(memory_to_row(memory, vector))
    return rows


def history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for n, row in enumerate(rows):
        out.append(
            {
                "key": f"{row['id']}:{n:012d}",
                "tenant_id": row["tenant_id"],
                "user_id": row["user_id"],
                "memory_id": row["id"],
                "version": n,
                "operation": n % 4,
                "changed_fields": ["content", "tags"][: n % 3],
                "changed_at": 1_700_000_000_000 + n,
                "related_id": "",
                "snapshot": {k: v for k, v in row.items() if k != "embedding"},
                "placeholder": [0.0, 1.0],
            }
        )
    return out


def requests(count: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"{i:064x}",
            "tenant_id": "t",
            "user_id": AWKWARD[i % len(AWKWARD)][:512],
            "request_id": f"req-{i}",
            "fingerprint": f"{i:064x}",
            "results": [{"id": new_id(1_700_000_000_000), "outcome": i % 3}] if i % 2 else [],
            "created_at": i,
            "placeholder": [0.0, 1.0],
        }
        for i in range(count)
    ]


def by_name(fields_data: Any) -> dict[str, Any]:
    return {data.field_name: data for data in fields_data}


@pytest.mark.parametrize("collection", ["memories", HISTORY, REQUESTS])
def test_columns_equal_pymilvus_row_packing(client: MilvusClient, collection: str) -> None:
    name = collection_name_for(MODEL) if collection == "memories" else collection
    fields = fields_of(client, name)
    memory_rows = memories(40, seed=7)
    rows = {
        "memories": memory_rows,
        HISTORY: history(memory_rows),
        REQUESTS: requests(40),
    }[collection]
    # Snapshots must survive orjson as they do pymilvus' own encoder.
    if collection == HISTORY:
        assert all(isinstance(r["snapshot"], dict) for r in rows)
    ours = by_name(pack_columns(fields, rows))
    theirs = by_name(Prepare.row_insert_param(name, rows, "", fields).fields_data)
    assert ours.keys() == theirs.keys()
    for field, data in ours.items():
        assert data == theirs[field], field
    upserted = by_name(Prepare.row_upsert_param(name, rows, "", fields).fields_data)
    assert ours == upserted


def test_values_it_does_not_know_are_left_to_pymilvus(client: MilvusClient) -> None:
    fields = fields_of(client, collection_name_for(MODEL))
    good = memories(2, seed=1)
    for field, bad in [
        ("content", 5),  # not a string
        ("content", "y" * 40_000),  # past max_length
        ("metadata", "{}"),  # JSON text: pymilvus' own rule
        ("metadata", None),
        ("created_at", 2**70),  # past int64
        ("embedding", [0.0] * (DIM - 1)),  # wrong dimension
    ]:
        rows = [dict(good[0]), dict(good[1])]
        rows[1][field] = bad
        with pytest.raises(UnsupportedRows):
            pack_columns(fields, rows)
    with pytest.raises(UnsupportedRows):
        pack_columns([{"name": "b", "type": DataType.BINARY_VECTOR, "params": {"dim": 8}}], [{}])


def test_the_hooks_are_installed_and_writes_read_back(client: MilvusClient) -> None:
    # False would mean this pymilvus renamed its hooks: writes would silently pack slowly.
    assert use_column_packing(client._get_connection())
    name = collection_name_for(MODEL)
    rows = memories(12, seed=3)
    client.insert(name, rows[:6])
    client.upsert(name, rows[6:])
    changed = dict(rows[0], content="changed", status=int(Status.SUPERSEDED))
    client.upsert(name, [changed])
    found = {
        r["id"]: r
        for r in client.query(
            name,
            filter=f"id in {[r['id'] for r in rows]}",
            output_fields=["*"],
            consistency_level="Strong",
        )
    }
    assert len(found) == 12
    for row in [changed, *rows[1:]]:
        stored = found[row["id"]]
        for key, value in row.items():
            if key == "embedding":
                np.testing.assert_allclose(stored[key], value, rtol=1e-6)
            elif isinstance(value, float):
                assert stored[key] == pytest.approx(value, rel=1e-6), key
            else:
                assert stored[key] == value, key
    # A write the packer cannot take (JSON given as text) still happens, packed by pymilvus.
    text_json = dict(memories(1, seed=4)[0], metadata='{"given": "as text"}')
    client.insert(name, [text_json])
    stored = client.query(
        name,
        filter=f'id == "{text_json["id"]}"',
        output_fields=["metadata"],
        consistency_level="Strong",
    )
    assert [r["metadata"] for r in stored] == [{"given": "as text"}]
