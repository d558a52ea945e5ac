"""VectorStore over Milvus (Milvus Lite by default, or a Milvus server by URI).

Layout: one collection per embedding model (`recalld_memories_<model>`; which
one serves is the alias `recalld_memories` on a Milvus server and a settings row
on Milvus Lite, see `active_collection`). Every read,
write and delete expression starts with `tenant_id == <caller's tenant>` and
`user_id == <user>`, built in one place (`build_filter` / `_scoped`).

On a Milvus server `tenant_id` is the collection's partition key, so that
filter also prunes the search to the tenant's partition. Milvus Lite 2.5.1
implements no partitions (CreatePartition/ShowPartitions are UNIMPLEMENTED and
filters on a partition-key field are rejected), so there `tenant_id` is a plain
INVERTED-indexed field and the filter alone separates tenants
(docs/storage-choice.md has the measurements behind this choice).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import numpy as np
from pymilvus import (
    AsyncMilvusClient,
    DataType,
    Function,
    FunctionType,
    MilvusClient,
    MilvusException,
)

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import (
    LIVE,
    PURGEABLE,
    Memory,
    MemoryFilter,
    MemoryType,
    Status,
    Tier,
    Upkeep,
)
from recalld_server.domain.core.ports import Vector, Vectors
from recalld_server.storage.expressions import quote
from recalld_server.storage.keyword_analyzer import CONTENT_ANALYZER
from recalld_server.storage.milvus_features import MilvusFeatures, detect, is_local_uri

log = logging.getLogger(__name__)


class StoreModelError(RuntimeError):
    """The store cannot be served with the requested embedding model as it stands."""


ALIAS = "recalld_memories"
MEMORIES_PREFIX = "recalld_memories_"

QUERY_LIMIT = 16_384  # Milvus caps offset + limit of one query at this.
SCAN_PAGE = 4096
"""Rows per page of a scan across tenants (background jobs)."""
SCALAR_FIELDS = [
    "id",
    "tenant_id",
    "user_id",
    "agent_scope",
    "session_id",
    "type",
    "tier",
    "status",
    "topic_key",
    "content",
    "content_hash",
    "importance",
    "confidence",
    "source",
    "tags",
    "metadata",
    "created_at",
    "occurred_at",
    "updated_at",
    "expire_at",
    "valid_to",
    "supersedes_id",
    "superseded_by_id",
    "version",
    "embedding_model",
    "last_accessed_at",
    "access_count",
    "expire_explicit",
]


@dataclasses.dataclass(frozen=True, slots=True)
class MilvusConfig:
    """Where and how to reach Milvus.

    Attributes:
        uri: A local file path (Milvus Lite) or http(s)://host:port of a Milvus server.
        token: "user:password" or an API key for a server; empty for Lite.
        dimension: Vector dimension of the embedding model.
        model_id: Embedding model id; names the collection behind the alias.
        timeout_s: Per-call timeout for Milvus requests.
    """

    uri: str
    dimension: int
    model_id: str
    token: str = ""
    timeout_s: float = 10.0


def collection_name_for(model_id: str) -> str:
    """Collection holding one embedding model's vector space."""
    slug = "".join(c if c.isalnum() else "_" for c in model_id.lower())[:48]
    return f"{MEMORIES_PREFIX}{slug}"


def build_filter(memory_filter: MemoryFilter) -> str:
    """The boolean expression for a MemoryFilter (tenant and user always included)."""
    f = memory_filter
    parts = [f"tenant_id == {quote(f.tenant_id)}"]
    if f.user_id is not None:
        parts.append(f"user_id == {quote(f.user_id)}")
    if f.statuses:
        parts.append(f"status in {sorted(int(s) for s in f.statuses)}")
    if f.types:
        parts.append(f"type in {sorted(int(t) for t in f.types)}")
    if f.tiers:
        parts.append(f"tier in {sorted(int(t) for t in f.tiers)}")
    if f.scopes is not None and not f.scopes:
        parts.append('id == ""')  # no scope at all: nothing (Lite rejects `in []`)
    elif f.scopes is not None:
        parts.append(f"agent_scope in [{', '.join(quote(s) for s in sorted(f.scopes))}]")
    for tag in sorted(f.tags):
        parts.append(f"array_contains(tags, {quote(tag)})")
    if f.session_id:
        parts.append(f"session_id == {quote(f.session_id)}")
    if f.topic_keys:
        parts.append(f"topic_key in [{', '.join(quote(k) for k in sorted(f.topic_keys))}]")
    if f.content_hashes:
        parts.append(f"content_hash in [{', '.join(quote(h) for h in sorted(f.content_hashes))}]")
    if f.occurred_after:
        parts.append(f"occurred_at >= {int(f.occurred_after)}")
    if f.occurred_before:
        parts.append(f"occurred_at < {int(f.occurred_before)}")
    if f.created_after:
        parts.append(f"created_at >= {int(f.created_after)}")
    if f.created_before:
        parts.append(f"created_at < {int(f.created_before)}")
    if f.unexpired_at:
        parts.append(f"(expire_at == 0 or expire_at > {int(f.unexpired_at)})")
    if f.expired_at:
        parts.append(f"(expire_at > 0 and expire_at <= {int(f.expired_at)})")
    if f.tier_unused_before:
        cutoff = int(f.tier_unused_before)
        parts.append(f"(created_at < {cutoff} and last_accessed_at < {cutoff})")
    if f.after_id:
        parts.append(f"id > {quote(f.after_id)}")
    return " and ".join(parts)


def upkeep_filter(upkeep: Upkeep) -> str:
    """The boolean expression for `Upkeep.matches` (the congruence suite holds them together)."""
    u = upkeep
    active, draft, p1 = int(Status.ACTIVE), int(Status.DRAFT), int(Tier.P1)
    expired = f"(expire_at > 0 and expire_at <= {int(u.now)})"
    due = [expired]
    if u.unused_before:
        cutoff = int(u.unused_before)
        due.append(
            f"(tier == {p1} and created_at < {cutoff} and last_accessed_at < {cutoff}"
            f" and (expire_at == 0 or expire_at > {int(u.now)}))"
        )
    if u.changed_since is not None:
        due.append(f"updated_at >= {int(u.changed_since)}")
    branches = [
        f"(status == {draft} and {expired})",
        f"(status == {active} and ({' or '.join(due)}))",
    ]
    if u.purge_before:
        purgeable = ", ".join(str(int(status)) for status in sorted(PURGEABLE))
        branches.append(f"(status in [{purgeable}] and updated_at < {int(u.purge_before)})")
    parts = [f"({' or '.join(branches)})"]
    if u.tenant_id is not None:
        parts.append(f"tenant_id == {quote(u.tenant_id)}")
    if u.scopes is not None and not u.scopes:
        parts.append('id == ""')
    elif u.scopes is not None:
        parts.append(f"agent_scope in [{', '.join(quote(s) for s in sorted(u.scopes))}]")
    return " and ".join(parts)


def _scoped(tenant_id: str, expression: str) -> str:
    """Confines an expression to one tenant.

    The tenant term goes last: Milvus Lite 2.5.1 silently evaluates a primary-key
    `id in [...]` wrongly when another term precedes it, once a collection spans
    several segments (queries miss rows, deletes delete nothing and report
    success; docs/storage-choice.md). Callers put id terms first.
    """
    return f"({expression}) and tenant_id == {quote(tenant_id)}"


def memory_to_row(memory: Memory, vector: Vector) -> dict[str, Any]:
    """A Milvus row for a memory and its vector."""
    row = {name: getattr(memory, name) for name in SCALAR_FIELDS}
    for name in ("type", "tier", "status"):
        row[name] = int(row[name])
    row["tags"] = list(memory.tags)
    row["embedding"] = np.asarray(vector, dtype=np.float32).tolist()
    return row


def row_to_memory(row: dict[str, Any]) -> Memory:
    """The memory stored in a Milvus row (extra fields such as the vector are ignored)."""
    values = {name: row[name] for name in SCALAR_FIELDS}
    values["type"] = MemoryType(values["type"])
    values["tier"] = Tier(values["tier"])
    values["status"] = Status(values["status"])
    values["tags"] = list(values["tags"] or [])
    values["metadata"] = dict(values["metadata"] or {})
    values["importance"] = float(values["importance"])
    values["confidence"] = float(values["confidence"])
    values["expire_explicit"] = bool(values["expire_explicit"])
    return Memory(**values)


@contextlib.contextmanager
def translate_errors(operation: str) -> Iterator[None]:
    """Milvus failures become BackendUnavailableError; the caller may retry."""
    try:
        yield
    except MilvusException as error:
        log.warning("milvus %s failed: %s", operation, error)
        raise BackendUnavailableError(f"vector store {operation} failed") from error


class MilvusVectorStore:
    """The VectorStore port on Milvus. Create with `open()`; close when done."""

    def __init__(
        self,
        config: MilvusConfig,
        client: AsyncMilvusClient,
        collection: str,
        keyword_index: bool = True,
    ) -> None:
        self._config = config
        self._client = client
        self._collection = collection
        self._keyword_index = keyword_index

    @classmethod
    async def open(cls, config: MilvusConfig) -> MilvusVectorStore:
        """Connects to the model's collection, creating it and its indexes on first use."""
        collection = collection_name_for(config.model_id)
        keyword_index = await asyncio.to_thread(ensure_collection, config, collection)
        client = AsyncMilvusClient(uri=config.uri, token=config.token, timeout=config.timeout_s)
        return cls(config, client, collection, keyword_index)

    @property
    def collection(self) -> str:
        """The memories collection (named after the embedding model)."""
        return self._collection

    @property
    def embedded(self) -> bool:
        """Whether this is Milvus Lite (a file), not a server: see `milvus_records._overwrite`."""
        return is_local_uri(self._config.uri)

    @property
    def client(self) -> AsyncMilvusClient:
        """The connection, shared with the history and request stores."""
        return self._client

    async def close(self) -> None:
        """Closes the connection."""
        await self._client.close()

    async def insert(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Stores new memories (each row carries its own tenant: group commits mix them)."""
        if not memories:
            return
        rows = [memory_to_row(m, v) for m, v in zip(memories, vectors, strict=True)]
        with translate_errors("insert"):
            await self._client.insert(self._collection, rows)

    async def replace(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        """Overwrites memories by id (the caller loaded them under their tenant)."""
        if not memories:
            return
        rows = [memory_to_row(m, v) for m, v in zip(memories, vectors, strict=True)]
        with translate_errors("upsert"):
            await self._client.upsert(self._collection, rows)

    async def _query(
        self, tenant_id: str, expression: str, output_fields: list[str], limit: int
    ) -> list[dict[str, Any]]:
        with translate_errors("query"):
            rows: list[dict[str, Any]] = await self._client.query(
                self._collection,
                filter=_scoped(tenant_id, expression),
                output_fields=output_fields,
                limit=limit,
                consistency_level="Strong",
            )
        return rows

    async def get(self, tenant_id: str, ids: Sequence[str]) -> list[Memory]:
        """The tenant's memories with these ids."""
        if not ids:
            return []
        expression = f"id in [{', '.join(quote(i) for i in ids)}]"
        rows = await self._query(tenant_id, expression, SCALAR_FIELDS, len(ids))
        return [row_to_memory(r) for r in rows]

    async def get_vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the tenant's memories, by id."""
        if not ids:
            return {}
        expression = f"id in [{', '.join(quote(i) for i in ids)}]"
        rows = await self._query(tenant_id, expression, ["id", "embedding"], len(ids))
        return {r["id"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}

    async def search(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Cosine nearest neighbours among the filter's memories."""
        return (await self.search_many(memory_filter, np.asarray(vector)[None, :], limit))[0]

    async def search_many(
        self, memory_filter: MemoryFilter, vectors: Vectors, limit: int
    ) -> list[list[tuple[Memory, float]]]:
        """Nearest neighbours for several query vectors in one call, one list each."""
        with translate_errors("search"):
            results = await self._client.search(
                self._collection,
                data=[np.asarray(v, dtype=np.float32).tolist() for v in vectors],
                anns_field="embedding",
                filter=build_filter(memory_filter),
                limit=limit,
                output_fields=SCALAR_FIELDS,
                search_params={"metric_type": "COSINE"},
                consistency_level="Strong",
            )
        return [
            [(row_to_memory(hit["entity"]), float(hit["distance"])) for hit in hits]
            for hits in (results or [[] for _ in vectors])
        ]

    async def keyword_search(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 over the jieba-analysed content (Chinese words, English words, identifiers)."""
        if not self._keyword_index:
            raise BackendUnavailableError("this Milvus has no BM25 (2.5+): no keyword search")
        with translate_errors("keyword search"):
            results = await self._client.search(
                self._collection,
                data=[text],
                anns_field="sparse",
                filter=build_filter(memory_filter),
                limit=limit,
                output_fields=SCALAR_FIELDS,
                search_params={"metric_type": "BM25"},
                consistency_level="Strong",
            )
        hits = results[0] if results else []
        # BM25 is positive on Milvus 2.x servers and Lite 2.5; Lite 3.x reports it negated.
        return [(row_to_memory(hit["entity"]), abs(float(hit["distance"]))) for hit in hits]

    async def find(self, memory_filter: MemoryFilter, limit: int) -> list[Memory]:
        """Memories matching the filter in ascending id order (at most `limit`).

        For a query with a limit Milvus returns the lowest primary keys, so scans
        page with `after_id` on that order.
        """
        rows = await self._query(
            memory_filter.tenant_id,
            build_filter(memory_filter),
            SCALAR_FIELDS,
            min(limit, QUERY_LIMIT),
        )
        return sorted((row_to_memory(r) for r in rows), key=lambda m: m.id)

    async def load_user(
        self, tenant_id: str, user_id: str, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """One user's active and draft memories with their vectors (one query)."""
        return await self.find_with_vectors(MemoryFilter(tenant_id, user_id, statuses=LIVE), limit)

    async def find_with_vectors(
        self, memory_filter: MemoryFilter, limit: int
    ) -> list[tuple[Memory, Vector]]:
        """Like find, with each memory's stored vector."""
        rows = await self._query(
            memory_filter.tenant_id,
            build_filter(memory_filter),
            [*SCALAR_FIELDS, "embedding"],
            min(limit, QUERY_LIMIT),
        )
        pairs = [(row_to_memory(r), np.asarray(r["embedding"], dtype=np.float32)) for r in rows]
        return sorted(pairs, key=lambda pair: pair[0].id)

    async def users_with_upkeep(self, upkeep: Upkeep) -> dict[str, set[str]]:
        """The users holding due memories: Milvus selects the rows, only names come back."""
        found: dict[str, set[str]] = {}
        async for rows in self._pages(upkeep_filter(upkeep), ["tenant_id", "user_id"], "upkeep"):
            for row in rows:
                found.setdefault(row["tenant_id"], set()).add(row["user_id"])
        return found

    async def tenants(self) -> list[str]:
        """Every tenant with stored memories, by scanning ids in order."""
        found: set[str] = set()
        async for rows in self._pages("", ["tenant_id"], "tenant scan"):
            found.update(r["tenant_id"] for r in rows)
        return sorted(found)

    async def _pages(
        self, expression: str, fields: list[str], what: str
    ) -> AsyncIterator[list[dict[str, Any]]]:
        """Every row matching `expression` (any tenant), in pages in id order."""
        after = ""
        while True:
            with translate_errors(what):
                rows = await self._client.query(
                    self._collection,
                    filter=f"id > {quote(after)}" + (f" and {expression}" if expression else ""),
                    output_fields=["id", *fields],
                    limit=SCAN_PAGE,
                    consistency_level="Strong",
                )
            if rows:
                yield rows
            if len(rows) < SCAN_PAGE:
                return
            after = max(r["id"] for r in rows)

    async def count(self, memory_filter: MemoryFilter) -> int:
        """How many memories match the filter (a count query: no rows fetched)."""
        with translate_errors("count"):
            rows = await self._client.query(
                self._collection,
                filter=_scoped(memory_filter.tenant_id, build_filter(memory_filter)),
                output_fields=["count(*)"],
                consistency_level="Strong",
            )
        return int(rows[0]["count(*)"]) if rows else 0

    async def list_ids(self, memory_filter: MemoryFilter, before_id: str, limit: int) -> list[str]:
        """Ids newest first; ids are time-ordered, so sorting them sorts by creation."""
        expression = build_filter(memory_filter)
        if before_id:
            expression += f" and id < {quote(before_id)}"
        rows = await self._query(memory_filter.tenant_id, expression, ["id"], QUERY_LIMIT)
        return sorted((r["id"] for r in rows), reverse=True)[:limit]

    async def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        """Deletes the tenant's memories with these ids."""
        if not ids:
            return
        expression = _scoped(tenant_id, f"id in [{', '.join(quote(i) for i in ids)}]")
        with translate_errors("delete"):
            await self._client.delete(self._collection, filter=expression)


def ensure_collection(config: MilvusConfig, collection: str) -> bool:
    """Creates the memories collection for config's model if missing, and loads it.

    Returns whether the collection has the BM25 field (keyword search in storage).
    An existing collection must hold config's model: a process never writes one
    model's vectors into another model's collection. Uses the sync client: async
    index creation is not implemented by every Milvus Lite version.
    """
    client = MilvusClient(uri=config.uri, token=config.token, timeout=config.timeout_s)
    try:
        if not client.has_collection(collection):
            features = detect(client, config.uri)
            client.create_collection(
                collection,
                schema=_schema(client, config.dimension, features, config.model_id),
                index_params=_index_params(client, features),
                **({"num_partitions": 64} if features.partition_key else {}),
            )
            client.load_collection(collection)
            return features.bm25
        description = client.describe_collection(collection)
        model_id, dimension = vector_space(description)
        # A collection from before the model was recorded is known only by its name.
        if model_id not in ("", config.model_id) or dimension != config.dimension:
            raise StoreModelError(
                f"collection {collection} holds {model_id!r} vectors of "
                f"dimension {dimension}, not {config.model_id!r} ({config.dimension})"
            )
        client.load_collection(collection)
        return any(f["name"] == "sparse" for f in description["fields"])
    finally:
        client.close()


def vector_space(description: dict[str, Any]) -> tuple[str, int]:
    """The model id ("" if unrecorded) and dimension of a described memories collection."""
    dimension = next(
        int(f["params"]["dim"]) for f in description["fields"] if f["name"] == "embedding"
    )
    try:
        meta = json.loads(description.get("description") or "{}")
    except json.JSONDecodeError:
        meta = {}
    model_id = str(meta.get("embedding_model", "")) if isinstance(meta, dict) else ""
    return model_id, dimension


def _schema(client: MilvusClient, dimension: int, features: MilvusFeatures, model_id: str) -> Any:
    # Milvus counts VARCHAR length in UTF-8 bytes: limits are 4x the character limits
    # that validation enforces. No nullable fields or defaults (Lite 2.5.1 crashed on them).
    # The description records the vector space, read back by `active_collection`.
    schema = client.create_schema(
        auto_id=False,
        enable_dynamic_field=False,
        description=json.dumps({"embedding_model": model_id, "dimension": dimension}),
    )
    add = schema.add_field
    add("id", DataType.VARCHAR, is_primary=True, max_length=32)
    add("tenant_id", DataType.VARCHAR, max_length=512, is_partition_key=features.partition_key)
    add("user_id", DataType.VARCHAR, max_length=512)
    add("agent_scope", DataType.VARCHAR, max_length=512)
    add("session_id", DataType.VARCHAR, max_length=512)
    add("type", DataType.INT8)
    add("tier", DataType.INT8)
    add("status", DataType.INT8)
    add("topic_key", DataType.VARCHAR, max_length=1024)
    if features.bm25:
        add(
            "content",
            DataType.VARCHAR,
            max_length=32_768,
            enable_analyzer=True,
            analyzer_params=CONTENT_ANALYZER,
        )
    else:
        add("content", DataType.VARCHAR, max_length=32_768)
    add("content_hash", DataType.VARCHAR, max_length=64)
    add("importance", DataType.FLOAT)
    add("confidence", DataType.FLOAT)
    add("source", DataType.VARCHAR, max_length=256)
    add("tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=32, max_length=256)
    add("metadata", DataType.JSON)
    for name in ("created_at", "occurred_at", "updated_at", "expire_at", "valid_to", "version"):
        add(name, DataType.INT64)
    add("supersedes_id", DataType.VARCHAR, max_length=32)
    add("superseded_by_id", DataType.VARCHAR, max_length=32)
    add("embedding_model", DataType.VARCHAR, max_length=128)
    add("last_accessed_at", DataType.INT64)
    add("access_count", DataType.INT64)
    add("expire_explicit", DataType.BOOL)
    add("embedding", DataType.FLOAT_VECTOR, dim=dimension)
    if features.bm25:
        add("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="content_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["content"],
                output_field_names=["sparse"],
            )
        )
    return schema


def _index_params(client: MilvusClient, features: MilvusFeatures) -> Any:
    params = client.prepare_index_params()
    # FLAT: exact search. HNSW under selective filters recalled poorly on Lite 2.5.1.
    params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    if features.bm25:
        params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    params.add_index("tenant_id", index_type=features.scalar_index)
    params.add_index("user_id", index_type=features.scalar_index)
    return params
