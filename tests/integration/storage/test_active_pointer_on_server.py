"""The serving pointer as a Milvus alias, against a real Milvus server.

Milvus Lite 2.5.1 implements no aliases, so this needs a server: it runs when
RECALLD_TEST_MILVUS_URI names one (e.g. the PyPI `milvus` package's 2.3
standalone, see benchmarks/README.md) and is skipped otherwise. recalld's own
memories schema needs BM25 (Milvus 2.5+), so the collections here are plain
ones carrying the same schema description.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest
from pymilvus import DataType, MilvusClient

from recalld_server.storage.active_collection import (
    ActivePointer,
    describe_memory_collection,
    resolve_serving_model,
)
from recalld_server.storage.milvus_collection import ALIAS, MEMORIES_PREFIX, StoreModelError

URI = os.environ.get("RECALLD_TEST_MILVUS_URI", "")
pytestmark = pytest.mark.skipif(not URI, reason="set RECALLD_TEST_MILVUS_URI to a Milvus server")


@pytest.fixture
def client() -> Iterator[MilvusClient]:
    milvus = MilvusClient(uri=URI)
    yield milvus
    for name in milvus.list_collections():
        if name.startswith(MEMORIES_PREFIX + "pointer_test"):
            for alias in milvus.list_aliases(collection_name=name).get("aliases", []):
                milvus.drop_alias(alias)
            milvus.drop_collection(name)
    milvus.close()


def _collection(client: MilvusClient, model_id: str, dimension: int) -> str:
    name = f"{MEMORIES_PREFIX}pointer_test_{uuid.uuid4().hex[:8]}"
    schema = client.create_schema(
        auto_id=False,
        description=json.dumps({"embedding_model": model_id, "dimension": dimension}),
    )
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dimension)
    params = client.prepare_index_params()
    params.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=params)
    return name


def test_alias_is_created_then_moved_atomically(client: MilvusClient) -> None:
    if ALIAS in client.list_aliases().get("aliases", []):
        pytest.skip(f"the server already has an alias {ALIAS}; use a scratch server")
    old = _collection(client, "model-a", 8)
    new = _collection(client, "model-b", 4)
    pointer = ActivePointer(client, URI)
    assert pointer.get() is None
    pointer.set(old)  # create_alias
    assert pointer.get() == old
    assert resolve_serving_model(client, URI, "", "model-a", ["model-a", "model-b"]) == (
        "model-a",
        False,
    )
    pointer.set(new)  # alter_alias: one step, no moment without a serving collection
    assert pointer.get() == new
    assert describe_memory_collection(client, new).model_id == "model-b"
    with pytest.raises(StoreModelError, match="recalld reembed --to model-a"):
        resolve_serving_model(client, URI, "model-a", "model-a", ["model-a", "model-b"])
