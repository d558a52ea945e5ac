"""The tenancy layouts and recalld's memory schema, as each variant creates it.

`filter_only`: `tenant_id` plain VARCHAR; `partition_per_tenant`: the same, one partition
`p_<tenant>` per tenant; `partition_key`: `tenant_id` with `is_partition_key=True`. Every
hot-path call filters on tenant and user (`hot_filter`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_data import DIM, NOW_MS
else:  # run as a script: sys.path[0] is this folder
    from storage_data import DIM, NOW_MS


LAYOUTS = ("filter_only", "partition_per_tenant", "partition_key")
# Dense index of the server variants (--server-index): build params, search params.
SERVER_INDEXES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "FLAT": ({}, {}),
    "IVF_FLAT": ({"nlist": 1024}, {"nprobe": 32}),
    "HNSW": ({"M": 16, "efConstruction": 128}, {"ef": 64}),
}
OUTPUT_FIELDS = ["id", "content", "type", "tier", "importance", "created_at"]
# user_load: every scalar field (no vector), as recalld reads a user's working set.
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
]
COLLECTION = "memories"


def build_schema(
    client: Any,
    layout: str,
    tenant_index: bool = False,
    dense_only: bool = False,
    index_type: str = "FLAT",
) -> tuple[Any, Any]:
    """recalld's memory schema; `dense_only` drops what a Milvus 2.3 server lacks.

    Dense-only: no analyzer on `content`, no `sparse` field, no BM25 function and no
    INVERTED index on `user_id` (2.3 has no INVERTED scalar index), on every variant.
    `index_type` is the dense index (`SERVER_INDEXES`; FLAT everywhere but the server).
    """
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field(
        "tenant_id", DataType.VARCHAR, max_length=128, is_partition_key=layout == "partition_key"
    )
    schema.add_field("user_id", DataType.VARCHAR, max_length=128)
    schema.add_field("agent_scope", DataType.VARCHAR, max_length=128)
    schema.add_field("session_id", DataType.VARCHAR, max_length=128)
    schema.add_field("type", DataType.INT8)
    schema.add_field("tier", DataType.INT8)
    schema.add_field("status", DataType.INT8)
    schema.add_field("topic_key", DataType.VARCHAR, max_length=256)
    if dense_only:
        schema.add_field("content", DataType.VARCHAR, max_length=32768)
    else:
        schema.add_field(
            "content",
            DataType.VARCHAR,
            max_length=32768,
            enable_analyzer=True,
            analyzer_params={"tokenizer": "jieba"},
        )
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("importance", DataType.FLOAT)
    schema.add_field("confidence", DataType.FLOAT)
    schema.add_field("source", DataType.VARCHAR, max_length=64)
    schema.add_field(
        "tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=32, max_length=64
    )
    schema.add_field("metadata", DataType.JSON)
    for f in ("created_at", "occurred_at", "updated_at", "expire_at", "valid_to"):
        schema.add_field(f, DataType.INT64)
    schema.add_field("supersedes_id", DataType.VARCHAR, max_length=32)
    schema.add_field("superseded_by_id", DataType.VARCHAR, max_length=32)
    schema.add_field("version", DataType.INT64)
    schema.add_field("embedding_model", DataType.VARCHAR, max_length=64)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIM)
    index_params = client.prepare_index_params()
    build_params = SERVER_INDEXES[index_type][0]
    index_params.add_index(
        field_name="embedding",
        index_type=index_type,
        metric_type="COSINE",
        **({"params": build_params} if build_params else {}),
    )
    if dense_only:
        return schema, index_params
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="content_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["content"],
            output_field_names=["sparse"],
        )
    )
    index_params.add_index(
        field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
    )
    index_params.add_index(field_name="user_id", index_type="INVERTED")
    if tenant_index:
        index_params.add_index(field_name="tenant_id", index_type="INVERTED")
    return schema, index_params


def create_collection(
    client: Any,
    name: str,
    layout: str,
    tenant_index: bool = False,
    dense_only: bool = False,
    index_type: str = "FLAT",
) -> None:
    schema, index_params = build_schema(client, layout, tenant_index, dense_only, index_type)
    client.create_collection(
        collection_name=name,
        schema=schema,
        index_params=index_params,
        consistency_level="Strong",
    )


def hot_filter(tenant: str, user: str) -> str:
    return (
        f'tenant_id == "{tenant}" and user_id == "{user}" and status == 1 '
        f"and (expire_at == 0 or expire_at > {NOW_MS})"
    )
