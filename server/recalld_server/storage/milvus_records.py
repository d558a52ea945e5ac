"""History and idempotency records in Milvus, beside the memories.

Milvus is recalld's one durable store, so audit history and Write answers live
there too, each in a collection of its own. Milvus requires a vector field in
every collection; these carry a constant 2-dimensional placeholder that is
never searched.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pymilvus import AsyncMilvusClient, DataType, MilvusClient

from recalld_server.domain.core.model import (
    HistoryEntry,
    Memory,
    MemoryType,
    Operation,
    Status,
    StoredWrite,
    Tier,
    WriteOutcome,
)
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_features import detect
from recalld_server.storage.milvus_store import QUERY_LIMIT, translate_errors

HISTORY = "recalld_history"
REQUESTS = "recalld_requests"
_PLACEHOLDER = [0.0, 1.0]


_FIELDS = tuple(f.name for f in dataclasses.fields(Memory))


def memory_to_json(memory: Memory) -> dict[str, Any]:
    """A JSON-safe snapshot of a memory.

    Field by field rather than `dataclasses.asdict`, whose deep copies cost more than
    the rest of a history append; tags and metadata are JSON values already.
    """
    data = {name: getattr(memory, name) for name in _FIELDS}
    for name in ("type", "tier", "status"):
        data[name] = int(data[name])
    data["tags"] = list(memory.tags)
    return data


def memory_from_json(data: dict[str, Any]) -> Memory:
    """The memory in a snapshot."""
    values = dict(data)
    values["type"] = MemoryType(values["type"])
    values["tier"] = Tier(values["tier"])
    values["status"] = Status(values["status"])
    return Memory(**values)


def ensure_record_collections(config: MilvusConfig) -> None:
    """Creates the history and request collections if missing (sync client)."""
    client = MilvusClient(uri=config.uri, token=config.token, timeout=config.timeout_s)
    try:
        for name, fields in ((HISTORY, _history_fields), (REQUESTS, _request_fields)):
            if client.has_collection(name):
                client.load_collection(name)
                continue
            schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
            fields(schema)
            schema.add_field("placeholder", DataType.FLOAT_VECTOR, dim=2)
            params = client.prepare_index_params()
            params.add_index("placeholder", index_type="FLAT", metric_type="L2")
            params.add_index("tenant_id", index_type=detect(client, config.uri).scalar_index)
            client.create_collection(name, schema=schema, index_params=params)
    finally:
        client.close()


def _history_fields(schema: Any) -> None:
    add = schema.add_field
    add("key", DataType.VARCHAR, is_primary=True, max_length=64)  # memory id + version
    add("tenant_id", DataType.VARCHAR, max_length=512)
    add("user_id", DataType.VARCHAR, max_length=512)
    add("memory_id", DataType.VARCHAR, max_length=32)
    add("version", DataType.INT64)
    add("operation", DataType.INT8)
    add(
        "changed_fields",
        DataType.ARRAY,
        element_type=DataType.VARCHAR,
        max_capacity=64,
        max_length=64,
    )
    add("changed_at", DataType.INT64)
    add("related_id", DataType.VARCHAR, max_length=32)
    add("snapshot", DataType.JSON)


def _request_fields(schema: Any) -> None:
    add = schema.add_field
    add("key", DataType.VARCHAR, is_primary=True, max_length=1024)  # tenant + request id
    add("tenant_id", DataType.VARCHAR, max_length=512)
    add("user_id", DataType.VARCHAR, max_length=512)
    add("request_id", DataType.VARCHAR, max_length=512)
    add("fingerprint", DataType.VARCHAR, max_length=64)
    add("results", DataType.JSON)
    add("created_at", DataType.INT64)


def _overwrite(client: AsyncMilvusClient, newest_row_wins: bool) -> Any:
    """How a row is written over one with its primary key, cheaply on each Milvus.

    Milvus Lite 2.5.1's upsert costs time in proportion to the collection (a delete
    there rewrites it: 9 ms of the engine's CPU for one history row at 30k rows and
    growing; an insert stays near 1 ms), while a Lite query answers with the newest
    row of a key, so on Lite an insert replaces as an upsert would. A Milvus server
    answers with the oldest row of a key (2.3.5, probed), so it keeps its upsert.
    """
    return client.insert if newest_row_wins else client.upsert


class MilvusHistoryStore:
    """HistoryStore on the `recalld_history` collection.

    `newest_row_wins`: the store answers a key with its newest row (Milvus Lite),
    so a version appended again is written by an insert (`_overwrite`).
    """

    def __init__(self, client: AsyncMilvusClient, newest_row_wins: bool = False) -> None:
        self._client = client
        self._write = _overwrite(client, newest_row_wins)

    async def append(self, entries: Sequence[HistoryEntry]) -> None:
        """Records versions of any tenants in one write (a replayed version overwrites itself)."""
        rows = [
            {
                "key": f"{e.memory.id}:{e.memory.version:012d}",
                "tenant_id": e.memory.tenant_id,
                "user_id": e.memory.user_id,
                "memory_id": e.memory.id,
                "version": e.memory.version,
                "operation": int(e.operation),
                "changed_fields": list(e.changed_fields),
                "changed_at": e.changed_at,
                "related_id": e.related_id,
                "snapshot": memory_to_json(e.memory),
                "placeholder": _PLACEHOLDER,
            }
            for e in entries
        ]
        if rows:
            with translate_errors("history append"):
                await self._write(HISTORY, rows)

    async def versions(self, tenant_id: str, memory_id: str) -> list[HistoryEntry]:
        """A memory's versions, oldest first."""
        with translate_errors("history query"):
            rows = await self._client.query(
                HISTORY,
                filter=f"tenant_id == {quote(tenant_id)} and memory_id == {quote(memory_id)}",
                output_fields=[
                    "snapshot",
                    "operation",
                    "changed_fields",
                    "changed_at",
                    "related_id",
                    "version",
                ],
                limit=QUERY_LIMIT,
                consistency_level="Strong",
            )
        rows.sort(key=lambda r: r["version"])
        return [
            HistoryEntry(
                memory=memory_from_json(r["snapshot"]),
                operation=Operation(r["operation"]),
                changed_fields=tuple(r["changed_fields"] or ()),
                changed_at=r["changed_at"],
                related_id=r["related_id"],
            )
            for r in rows
        ]

    async def delete_memories(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Forgets the history of these memories."""
        for start in range(0, len(memory_ids), 1000):
            chunk = ", ".join(quote(i) for i in memory_ids[start : start + 1000])
            with translate_errors("history delete"):
                await self._client.delete(
                    HISTORY, filter=f"memory_id in [{chunk}] and tenant_id == {quote(tenant_id)}"
                )

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets a user's (or the tenant's) history."""
        expression = f"tenant_id == {quote(tenant_id)}"
        if user_id is not None:
            expression += f" and user_id == {quote(user_id)}"
        with translate_errors("history delete"):
            await self._client.delete(HISTORY, filter=expression)


class MilvusIdempotencyStore:
    """IdempotencyStore on the `recalld_requests` collection (`newest_row_wins`: as history's)."""

    def __init__(self, client: AsyncMilvusClient, newest_row_wins: bool = False) -> None:
        self._client = client
        self._write = _overwrite(client, newest_row_wins)

    @staticmethod
    def _key(tenant_id: str, user_id: str, request_id: str) -> str:
        # A digest: fixed length, hex only, so no request id can upset the expression.
        raw = json.dumps([tenant_id, user_id, request_id], ensure_ascii=False)
        return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()

    async def get(self, tenant_id: str, user_id: str, request_id: str) -> StoredWrite | None:
        """The stored answer to this user's request id, if any."""
        with translate_errors("request lookup"):
            rows = await self._client.query(
                REQUESTS,
                filter=f"key == {quote(self._key(tenant_id, user_id, request_id))} "
                f"and tenant_id == {quote(tenant_id)}",
                output_fields=["user_id", "fingerprint", "results", "created_at"],
                limit=1,
                consistency_level="Strong",
            )
        if not rows:
            return None
        row = rows[0]
        results = [(r[0], WriteOutcome(r[1]), r[2]) for r in row["results"]["items"]]
        return StoredWrite(
            tenant_id, row["user_id"], request_id, row["fingerprint"], results, row["created_at"]
        )

    async def put(self, record: StoredWrite) -> None:
        """Stores an answer."""
        row = {
            "key": self._key(record.tenant_id, record.user_id, record.request_id),
            "tenant_id": record.tenant_id,
            "user_id": record.user_id,
            "request_id": record.request_id,
            "fingerprint": record.fingerprint,
            "results": {"items": [[i, int(o), r] for i, o, r in record.results]},
            "created_at": record.created_at,
            "placeholder": _PLACEHOLDER,
        }
        with translate_errors("request store"):
            await self._write(REQUESTS, [row])

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Forgets a user's (or the tenant's) records."""
        expression = f"tenant_id == {quote(tenant_id)}"
        if user_id is not None:
            expression += f" and user_id == {quote(user_id)}"
        with translate_errors("request delete"):
            await self._client.delete(REQUESTS, filter=expression)

    async def delete_older_than(self, cutoff_ms: int) -> int:
        """Drops records created before the cutoff."""
        with translate_errors("request expiry"):
            result = await self._client.delete(REQUESTS, filter=f"created_at < {int(cutoff_ms)}")
        # pymilvus answers with the deleted keys when the server sends them (Lite), else a count.
        if isinstance(result, list):
            return len(result)
        return int(result.get("delete_count", 0)) if isinstance(result, dict) else 0
