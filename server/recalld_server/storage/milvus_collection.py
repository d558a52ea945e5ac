"""The memories collection in Milvus: its name, its fields and indexes, the row a Memory is.

One collection per embedding model (`recalld_memories_<model>`; which one serves
is the alias `recalld_memories` on a Milvus server and a settings row on Milvus
Lite, see `active_collection`). The schema, `SCALAR_FIELDS` and the row mapping
live together because they must agree field by field, and the store, the model
switch (`active_collection`) and `recalld reembed` all read them from here.

On a Milvus server `tenant_id` is the collection's partition key, so the tenant
filter also prunes the search to the tenant's partition. Milvus Lite 2.5.1
implements no partitions (CreatePartition/ShowPartitions are UNIMPLEMENTED and
filters on a partition-key field are rejected), so there `tenant_id` is a plain
INVERTED-indexed field and the filter alone separates tenants
(docs/storage-choice.md has the measurements behind this choice).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient

from recalld_server.domain.core.model import Memory, MemoryType, Status, Tier
from recalld_server.domain.core.ports import Vector
from recalld_server.storage.keyword_analyzer import CONTENT_ANALYZER
from recalld_server.storage.milvus_features import MilvusFeatures, detect


class StoreModelError(RuntimeError):
    """The store cannot be served with the requested embedding model as it stands."""


ALIAS = "recalld_memories"
MEMORIES_PREFIX = "recalld_memories_"

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
