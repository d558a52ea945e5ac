"""Which memories collection (and so which embedding model) a store serves.

Each embedding model's vectors live in a collection of their own
(`recalld_memories_<model>`), whose schema description records the model id and
dimension. One pointer names the collection that serves: on a Milvus server the
alias `recalld_memories` (moved with `alter_alias`, atomic on the server); on
Milvus Lite 2.5.1, which implements neither aliases nor renames (UNIMPLEMENTED),
one row of the `recalld_settings` collection (an upsert of one primary key is
atomic there too). A server process binds to the collection the pointer names
when it starts and embeds with that collection's model, so a search never
compares vectors of two models; `recalld reembed` is the only thing that moves
the pointer.

Synchronous client on purpose: this runs at start-up and in the offline reembed
command, before or outside the serving event loop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable

from pymilvus import DataType, MilvusClient, MilvusException

from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import (
    ALIAS,
    MEMORIES_PREFIX,
    StoreModelError,
    collection_name_for,
    vector_space,
)
from recalld_server.storage.milvus_features import is_local_uri

log = logging.getLogger(__name__)

SETTINGS = "recalld_settings"
ACTIVE_KEY = "active_memories_collection"
_PLACEHOLDER = [0.0, 1.0]


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryCollection:
    """A memories collection and the vector space it holds."""

    name: str
    model_id: str
    dimension: int


def describe_memory_collection(
    client: MilvusClient, name: str, known_models: Iterable[str] = ()
) -> MemoryCollection:
    """Reads a memories collection's model and dimension from its schema.

    Collections created before the model was recorded in the description are
    recognised by name among `known_models`.
    """
    model_id, dimension = vector_space(client.describe_collection(name))
    if not model_id:
        model_id = {collection_name_for(m): m for m in known_models}.get(name, "")
    return MemoryCollection(name, model_id, dimension)


def memory_collections(
    client: MilvusClient, known_models: Iterable[str] = ()
) -> list[MemoryCollection]:
    """Every memories collection in the store, whichever model it holds."""
    known = list(known_models)
    return [
        describe_memory_collection(client, name, known)
        for name in sorted(client.list_collections())
        if name.startswith(MEMORIES_PREFIX)
    ]


class ActivePointer:
    """The alias (Milvus server) or settings row (Milvus Lite) naming the serving collection."""

    def __init__(self, client: MilvusClient, uri: str) -> None:
        self._client = client
        self._uses_alias = not is_local_uri(uri)

    def get(self) -> str | None:
        """The serving collection, or None on a store that has never served."""
        if self._uses_alias:
            try:
                return str(self._client.describe_alias(ALIAS)["collection_name"])
            except MilvusException:
                return None
        if not self._client.has_collection(SETTINGS):
            return None
        rows = self._client.query(
            SETTINGS,
            filter=f"key == {quote(ACTIVE_KEY)}",
            output_fields=["value"],
            consistency_level="Strong",
        )
        return str(rows[0]["value"]) if rows else None

    def set(self, collection: str) -> None:
        """Points at `collection` in one atomic step."""
        if self._uses_alias:
            if self.get() is None:
                self._client.create_alias(collection_name=collection, alias=ALIAS)
            else:
                self._client.alter_alias(collection_name=collection, alias=ALIAS)
            return
        self._ensure_settings()
        self._client.upsert(
            SETTINGS,
            [
                {
                    "key": ACTIVE_KEY,
                    "value": collection,
                    "updated_at": int(time.time() * 1000),
                    "placeholder": _PLACEHOLDER,
                }
            ],
        )

    def _ensure_settings(self) -> None:
        if self._client.has_collection(SETTINGS):
            return
        schema = self._client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=128)
        schema.add_field("value", DataType.VARCHAR, max_length=4096)
        schema.add_field("updated_at", DataType.INT64)
        # Milvus requires a vector field in every collection; this one is never searched.
        schema.add_field("placeholder", DataType.FLOAT_VECTOR, dim=2)
        params = self._client.prepare_index_params()
        params.add_index("placeholder", index_type="FLAT", metric_type="L2")
        self._client.create_collection(SETTINGS, schema=schema, index_params=params)


def resolve_serving_model(
    client: MilvusClient, uri: str, requested: str, default: str, known_models: Iterable[str]
) -> tuple[str, bool]:
    """The model a server must embed with for this store, and whether to claim the pointer.

    * The pointer names a collection: its model, which `requested` (if given)
      must match: switching models is `recalld reembed`, never a start-up flag.
    * No pointer but memories collections (a store from before the pointer, or a
      switch interrupted before it ever set one): the requested one if it exists,
      else the only one; several and no choice is an error.
    * A fresh store: the requested model or the default.

    The second value is True when nothing points yet and the caller should point
    at its collection once it exists.
    """
    known = list(known_models)
    active = ActivePointer(client, uri).get()
    if active is not None:
        serving = describe_memory_collection(client, active, known)
        if requested and requested != serving.model_id:
            raise StoreModelError(
                f"the store's memories are embedded with {serving.model_id!r} "
                f"(collection {serving.name}); to move them to {requested!r} stop the "
                f"server and run `recalld reembed --to {requested}` on this store"
            )
        return serving.model_id, False
    existing = memory_collections(client, known)
    if requested:
        return requested, True
    if len(existing) == 1:
        log.info("serving %s (model %s)", existing[0].name, existing[0].model_id)
        return existing[0].model_id, True
    if existing:
        raise StoreModelError(
            "the store holds several memories collections and none is marked as serving: "
            f"{', '.join(f'{c.name} ({c.model_id})' for c in existing)}; "
            "start once with --embedding-model naming the one to serve"
        )
    return default, True
