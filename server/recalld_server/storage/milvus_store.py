"""VectorStore over Milvus (Milvus Lite by default, or a Milvus server by URI).

The adapter only: the collection it serves (one per embedding model), its schema
and the row a Memory becomes are `milvus_collection`'s; every read, write and
delete expression starts with `tenant_id == <caller's tenant>` and
`user_id == <user>`, built in one place (`milvus_filters`), because on Milvus
Lite the filter alone separates tenants.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import numpy as np
from pymilvus import AsyncMilvusClient, MilvusException

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import LIVE, Memory, MemoryFilter, Upkeep
from recalld_server.domain.core.ports import Vector, Vectors
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import (
    SCALAR_FIELDS,
    MilvusConfig,
    collection_name_for,
    ensure_collection,
    memory_to_row,
    row_to_memory,
)
from recalld_server.storage.milvus_features import is_local_uri
from recalld_server.storage.milvus_filters import build_filter, tenant_scoped, upkeep_filter
from recalld_server.storage.milvus_packing import use_column_packing

log = logging.getLogger(__name__)

QUERY_LIMIT = 16_384  # Milvus caps offset + limit of one query at this.
SCAN_PAGE = 4096
"""Rows per page of a scan across tenants (background jobs)."""


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
        # The history and request stores share this client, so their rows too.
        use_column_packing(await client._get_connection())
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
                filter=tenant_scoped(tenant_id, expression),
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
                filter=tenant_scoped(memory_filter.tenant_id, build_filter(memory_filter)),
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
        expression = tenant_scoped(tenant_id, f"id in [{', '.join(quote(i) for i in ids)}]")
        with translate_errors("delete"):
            await self._client.delete(self._collection, filter=expression)
