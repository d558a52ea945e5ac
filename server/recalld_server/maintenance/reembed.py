"""Switching a store's embedding model: re-embed into a new collection, then swap.

The steps, each safe to interrupt:

1. Create `recalld_memories_<new model>` (a leftover of an interrupted run is
   dropped first: nothing reads a collection the pointer does not name).
2. Copy every memory of every tenant, whatever its status (superseded, archived,
   draft and conflict rows too: History, Restore and ResolveConflict need them),
   in primary-key order and in batches, embedding the content with the new
   model. Every field but the vector and `embedding_model` is copied unchanged:
   ids, versions (and so etags), timestamps and access statistics survive.
3. Verify: both collections hold the same number of rows and the same ids.
   On a mismatch nothing is switched.
4. Move the pointer (`active_collection.ActivePointer`): one atomic step after
   which every server that starts serves the new collection with the new model.
5. Drop the old collection, unless asked to keep it: a kept copy is stale from
   the first write after the switch and would keep forgotten users' data.

History and idempotency records hold no model vectors and stay where they are.
The copy needs the store to itself: Milvus Lite allows one process per file
(opening it while a server runs fails), and on a Milvus server writes made to
the old collection while the copy runs would not be carried over, so stop the
servers (or their writers) first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pymilvus import MilvusClient, MilvusException

from recalld_server.domain.ports import Embedder
from recalld_server.storage.active_collection import (
    ActivePointer,
    MemoryCollection,
    describe_memory_collection,
    memory_collections,
)
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_store import (
    QUERY_LIMIT,
    SCALAR_FIELDS,
    MilvusConfig,
    StoreModelError,
    collection_name_for,
    ensure_collection,
)

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]


class VerificationError(RuntimeError):
    """The copy does not match the source; the pointer was not moved."""


@dataclasses.dataclass(slots=True)
class ReembedReport:
    """What a switch did (or, with dry_run, would do)."""

    source: MemoryCollection
    target: MemoryCollection
    source_rows: int = 0
    copied_rows: int = 0
    seconds: float = 0.0
    switched: bool = False
    dropped_source: bool = False
    dropped_leftover: bool = False
    dry_run: bool = False
    already_serving: bool = False

    def render(self) -> str:
        """A human summary, one fact per line."""
        if self.already_serving:
            return f"already serving {self.target.model_id} ({self.target.name}); nothing to do"
        lines = [
            f"from: {self.source.model_id} ({self.source.name}, dim {self.source.dimension})",
            f"to:   {self.target.model_id} ({self.target.name}, dim {self.target.dimension})",
            f"rows: {self.source_rows} in the source",
        ]
        if self.dry_run:
            lines.append("dry run: nothing changed")
            return "\n".join(lines)
        rate = self.copied_rows / self.seconds if self.seconds else 0.0
        lines.append(f"copied: {self.copied_rows} rows in {self.seconds:.1f} s ({rate:.0f}/s)")
        if self.dropped_leftover:
            lines.append("dropped a leftover target collection of an interrupted run first")
        lines.append("verified: same row count and ids in both collections")
        lines.append(f"switched: {self.target.name} now serves")
        lines.append(
            f"old collection {self.source.name}: "
            + ("dropped" if self.dropped_source else "kept (stale from the next write; drop it)")
        )
        return "\n".join(lines)


def _count(client: MilvusClient, collection: str) -> int:
    rows = client.query(
        collection, filter="", output_fields=["count(*)"], consistency_level="Strong"
    )
    return int(rows[0]["count(*)"])


def _ids(client: MilvusClient, collection: str) -> list[str]:
    """Every primary key, ascending (a limited query returns the lowest keys)."""
    found: list[str] = []
    after = ""
    while True:
        rows = client.query(
            collection,
            filter=f"id > {quote(after)}",
            output_fields=["id"],
            limit=QUERY_LIMIT,
            consistency_level="Strong",
        )
        if not rows:
            return found
        batch = sorted(str(r["id"]) for r in rows)
        found.extend(batch)
        after = batch[-1]


def _page(client: MilvusClient, collection: str, after: str, limit: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = client.query(
        collection,
        filter=f"id > {quote(after)}",
        output_fields=SCALAR_FIELDS,
        limit=limit,
        consistency_level="Strong",
    )
    return sorted(rows, key=lambda r: str(r["id"]))


def _target_rows(
    rows: Sequence[dict[str, Any]], vectors: np.ndarray, model_id: str
) -> list[dict[str, Any]]:
    out = []
    for row, vector in zip(rows, vectors, strict=True):
        copy = {name: row[name] for name in SCALAR_FIELDS}
        copy["embedding_model"] = model_id
        copy["embedding"] = np.asarray(vector, dtype=np.float32).tolist()
        out.append(copy)
    return out


async def reembed(
    client: MilvusClient,
    uri: str,
    token: str,
    embedder: Embedder,
    known_models: Sequence[str],
    *,
    batch_size: int = 512,
    keep_source: bool = False,
    dry_run: bool = False,
    on_progress: ProgressFn | None = None,
) -> ReembedReport:
    """Moves the store's memories into `embedder`'s vector space and switches to it.

    Raises:
        StoreModelError: the store has no memories collection to switch from.
        VerificationError: the copy came out different; nothing was switched.
    """
    pointer = ActivePointer(client, uri)
    active = await asyncio.to_thread(pointer.get)
    if active is None:
        existing = await asyncio.to_thread(memory_collections, client, known_models)
        if len(existing) != 1:
            raise StoreModelError(
                "no serving collection to switch from"
                + (f" (several: {', '.join(c.name for c in existing)})" if existing else "")
                + "; start the server once to create or choose one"
            )
        active = existing[0].name
    source = await asyncio.to_thread(describe_memory_collection, client, active, known_models)
    target = MemoryCollection(
        collection_name_for(embedder.model_id), embedder.model_id, embedder.dimension
    )
    report = ReembedReport(source, target, dry_run=dry_run)
    if source.model_id == target.model_id:
        report.already_serving = True
        return report
    report.source_rows = await asyncio.to_thread(_count, client, source.name)
    if dry_run:
        return report

    started = time.monotonic()
    if await asyncio.to_thread(client.has_collection, target.name):
        log.warning("dropping %s, left over by an interrupted switch", target.name)
        await asyncio.to_thread(client.drop_collection, target.name)
        report.dropped_leftover = True
    config = MilvusConfig(
        uri=uri, token=token, dimension=target.dimension, model_id=target.model_id
    )
    await asyncio.to_thread(ensure_collection, config, target.name)

    after = ""
    total = report.source_rows
    if on_progress is not None:
        on_progress(0, total)
    while True:
        rows = await asyncio.to_thread(_page, client, source.name, after, batch_size)
        if not rows:
            break
        vectors = await embedder.embed([str(r["content"]) for r in rows])
        await asyncio.to_thread(
            client.insert, target.name, _target_rows(rows, vectors, target.model_id)
        )
        report.copied_rows += len(rows)
        after = str(rows[-1]["id"])
        if on_progress is not None:
            on_progress(report.copied_rows, max(total, report.copied_rows))

    source_ids, target_ids = await asyncio.gather(
        asyncio.to_thread(_ids, client, source.name),
        asyncio.to_thread(_ids, client, target.name),
    )
    if source_ids != target_ids or report.copied_rows != len(source_ids):
        missing = len(set(source_ids) - set(target_ids))
        extra = len(set(target_ids) - set(source_ids))
        raise VerificationError(
            f"copy differs from the source ({len(source_ids)} source rows, "
            f"{len(target_ids)} copied, {missing} missing, {extra} unexpected); "
            f"still serving {source.name}"
        )
    await asyncio.to_thread(pointer.set, target.name)
    report.switched = True
    if not keep_source:
        try:
            await asyncio.to_thread(client.drop_collection, source.name)
            report.dropped_source = True
        except MilvusException:
            # The switch has happened; the stale copy only wastes space until dropped.
            log.warning("switched, but could not drop %s", source.name, exc_info=True)
    report.seconds = time.monotonic() - started
    return report
