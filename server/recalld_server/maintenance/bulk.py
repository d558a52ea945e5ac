"""A store's memories with their vectors, out to a file and back in, without re-embedding.

`recalld export --with-vectors` writes one header line, then every memory of the
serving collection as a row: every stored field (ids, statuses, versions,
timestamps and access statistics as they are) and the vector, as little-endian
float32 in base64. `recalld import --with-vectors` writes such a file into a
store whose serving collection holds the same model and dimension (or into an
empty store, which it creates for that model), in large batches and without
the embedding model: loading is bound by the store, not by embedding.

An import is idempotent and resumable: a row whose id the store holds is left
as it is, so a second run, or a run after an interruption, writes only what is
missing. Rows are inserted, never upserted: on Milvus Lite an upsert or delete
costs in proportion to the collection (storage_choice/lite_write_costs.py), an
insert does not.

History and idempotency records are not carried (`recalld export` without
vectors reproduces history through the API). Milvus Lite allows one process per
store, so its server is stopped meanwhile; on a Milvus server, stop the servers
too, or load only users they have not served: a running replica's working set
does not see rows written behind it.
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from pymilvus import MilvusClient

from recalld_server.storage.active_collection import (
    ActivePointer,
    MemoryCollection,
    describe_memory_collection,
    memory_collections,
)
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import (
    SCALAR_FIELDS,
    MilvusConfig,
    collection_name_for,
    ensure_collection,
)
from recalld_server.storage.milvus_store import QUERY_LIMIT

HEADER_KEY = "recalld_vectors"
FORMAT_VERSION = 1
ProgressFn = Callable[[int, int], None]


class BulkFileError(ValueError):
    """The file is not a vectors export, or a line of it is malformed (named)."""


class BulkModelError(ValueError):
    """The file's vectors belong to another model or dimension than the store's."""


@dataclasses.dataclass(frozen=True, slots=True)
class BulkHeader:
    """What a vectors export holds: whose vectors, how wide, how many rows."""

    model_id: str
    dimension: int
    rows: int

    def to_line(self) -> str:
        """The header as the file's first line."""
        return json.dumps(
            {
                HEADER_KEY: FORMAT_VERSION,
                "model_id": self.model_id,
                "dimension": self.dimension,
                "rows": self.rows,
            }
        )

    @classmethod
    def from_line(cls, line: str) -> BulkHeader:
        """Reads a first line; BulkFileError when it is not a vectors export's header."""
        try:
            fields = json.loads(line)
        except json.JSONDecodeError:
            fields = None
        if not isinstance(fields, dict) or fields.get(HEADER_KEY) != FORMAT_VERSION:
            raise BulkFileError(
                "line 1 is not the header of a vectors export (`recalld export --with-vectors`)"
            )
        model_id, dimension, rows = (
            fields.get("model_id"),
            fields.get("dimension"),
            fields.get("rows"),
        )
        if not isinstance(model_id, str) or not model_id:
            raise BulkFileError("line 1: the header names no model_id")
        if not isinstance(dimension, int) or dimension < 1:
            raise BulkFileError("line 1: the header's dimension is not a positive whole number")
        return cls(model_id, dimension, rows if isinstance(rows, int) and rows >= 0 else 0)


def row_to_line(row: dict[str, Any]) -> str:
    """A stored row as one line: its fields, and the vector as base64 float32."""
    fields = {name: row[name] for name in SCALAR_FIELDS}
    fields["tags"] = list(fields["tags"] or [])
    vector = np.asarray(row["embedding"], dtype="<f4")
    fields["embedding"] = base64.b64encode(vector.tobytes()).decode("ascii")
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


_TEXT_FIELDS = {
    "id", "tenant_id", "user_id", "agent_scope", "session_id", "topic_key", "content",
    "content_hash", "source", "embedding_model", "supersedes_id", "superseded_by_id",
}  # fmt: skip
_NUMBER_FIELDS = {"importance", "confidence"}
_BOOL_FIELDS = {"expire_explicit"}


def line_to_row(line: str, number: int, header: BulkHeader) -> dict[str, Any]:
    """A line back into a row to insert; BulkFileError names the line and what is wrong."""
    try:
        fields = json.loads(line)
    except json.JSONDecodeError as error:
        raise BulkFileError(f"line {number}: not JSON ({error.msg})") from None
    if not isinstance(fields, dict):
        raise BulkFileError(f"line {number}: not a JSON object")
    missing = [name for name in (*SCALAR_FIELDS, "embedding") if name not in fields]
    if missing:
        raise BulkFileError(f"line {number}: missing {', '.join(missing)}")
    for name, well_typed in _FIELD_CHECKS:
        if not well_typed(fields[name]):
            raise BulkFileError(f"line {number}: {name} has the wrong type")
    if not fields["id"]:
        raise BulkFileError(f"line {number}: the id is empty")
    if fields["embedding_model"] not in ("", header.model_id):
        raise BulkFileError(
            f"line {number}: a {fields['embedding_model']!r} vector in a {header.model_id!r} file"
        )
    try:
        raw = base64.b64decode(fields["embedding"], validate=True)
    except (ValueError, TypeError):
        raise BulkFileError(f"line {number}: the embedding is not base64") from None
    if len(raw) != 4 * header.dimension:
        raise BulkFileError(
            f"line {number}: the embedding has {len(raw) // 4} values, not {header.dimension}"
        )
    vector = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(vector).all():
        raise BulkFileError(f"line {number}: the embedding holds NaN or infinity")
    row = {name: fields[name] for name in SCALAR_FIELDS}
    row["embedding"] = vector.tolist()  # "<f4" is float32 as read: Python floats, no copy
    return row


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _tags(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, str) for t in value)


def _mapping(value: Any) -> bool:
    return isinstance(value, dict)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # times, enums, counters


def _check_for(name: str) -> Callable[[Any], bool]:
    if name in _TEXT_FIELDS:
        return _text
    if name in _NUMBER_FIELDS:
        return _number
    if name in _BOOL_FIELDS:
        return _flag
    return {"tags": _tags, "metadata": _mapping}.get(name, _whole)


# One check per field, chosen once: a file of a million lines checks 28 million values.
_FIELD_CHECKS = tuple((name, _check_for(name)) for name in SCALAR_FIELDS)


def serving_collection(
    client: MilvusClient, uri: str, known_models: Iterable[str]
) -> MemoryCollection | None:
    """The collection the store serves (its pointer's, else its only one), or None."""
    known = list(known_models)
    active = ActivePointer(client, uri).get()
    if active is None:
        existing = memory_collections(client, known)
        if not existing:
            return None
        if len(existing) > 1:
            raise BulkModelError(
                f"the store holds several collections ({', '.join(c.name for c in existing)}) "
                "and none serves; start the server once to choose one"
            )
        active = existing[0].name
    return describe_memory_collection(client, active, known)


def export_rows(
    client: MilvusClient,
    collection: MemoryCollection,
    write: Callable[[str], Any],
    *,
    batch_size: int = 1_000,
    on_progress: ProgressFn | None = None,
) -> int:
    """Writes the header and every row of `collection`, in id order; returns the rows."""
    total = stored_rows(client, collection.name)
    write(BulkHeader(collection.model_id, collection.dimension, total).to_line() + "\n")
    done, after = 0, ""
    while True:
        # Ids first, then their rows: a page of vectors asked by range took Milvus
        # Lite up to 7 ms a row, by id 0.55 ms.
        page = client.query(
            collection.name,
            filter=f"id > {quote(after)}",
            output_fields=["id"],
            limit=min(batch_size, QUERY_LIMIT),
            consistency_level="Strong",
        )
        if not page:
            break
        ids = sorted(str(row["id"]) for row in page)
        rows = client.query(
            collection.name,
            filter=f"id in [{', '.join(quote(i) for i in ids)}]",
            output_fields=[*SCALAR_FIELDS, "embedding"],
            consistency_level="Strong",
        )
        rows.sort(key=lambda r: str(r["id"]))
        write("".join(row_to_line(row) + "\n" for row in rows))
        done += len(rows)
        after = ids[-1]
        if on_progress is not None:
            on_progress(done, max(total, done))
    if on_progress is not None:
        on_progress(done, done)
    return done


@dataclasses.dataclass(slots=True)
class BulkImportReport:
    """What an import did."""

    header: BulkHeader
    collection: str = ""
    created_collection: bool = False
    read: int = 0
    inserted: int = 0
    present: int = 0
    seconds: float = 0.0

    def render(self) -> str:
        """A human summary, one fact per line."""
        rate = self.inserted / self.seconds if self.seconds else 0.0
        return "\n".join(
            [
                f"model: {self.header.model_id} (dim {self.header.dimension}) into "
                f"{self.collection}" + (" (created)" if self.created_collection else ""),
                f"rows: {self.read} read, {self.inserted} inserted, {self.present} already "
                "there (left as they are)",
                f"time: {self.seconds:.1f} s ({rate:.0f} rows/s inserted)",
            ]
        )


def target_collection(
    client: MilvusClient, uri: str, token: str, header: BulkHeader, known_models: Iterable[str]
) -> tuple[MemoryCollection, bool]:
    """The serving collection, checked against the file's model; created on an empty store."""
    known = [*known_models, header.model_id]
    serving = serving_collection(client, uri, known)
    if serving is not None:
        if serving.model_id not in ("", header.model_id) or serving.dimension != header.dimension:
            raise BulkModelError(
                f"the store serves {serving.model_id!r} vectors of dimension "
                f"{serving.dimension}; the file holds {header.model_id!r} ({header.dimension}): "
                "import into a store of that model, or `recalld reembed` one side first"
            )
        return serving, False
    name = collection_name_for(header.model_id)
    ensure_collection(
        MilvusConfig(uri=uri, token=token, dimension=header.dimension, model_id=header.model_id),
        name,
    )
    ActivePointer(client, uri).set(name)
    return MemoryCollection(name, header.model_id, header.dimension), True


def import_rows(
    client: MilvusClient,
    collection: MemoryCollection,
    header: BulkHeader,
    lines: Iterator[tuple[int, str]],
    report: BulkImportReport,
    *,
    batch_size: int = 2_000,
    writers: int = 4,
    on_progress: ProgressFn | None = None,
    check_present: bool = True,
) -> None:
    """Inserts the rows the store lacks, `writers` batches at a time; counts into `report`.

    `check_present=False` skips looking up each batch's ids in the store: only for a
    collection this run created, which holds nothing but what the run wrote (the file's
    repeated ids are still caught, by `seen`). A run that is stopped and started again
    finds the collection there and looks them up.

    `lines` yields (line number, text) after the header. A malformed line stops the
    import with BulkFileError once the batches before it are written: a corrected
    file resumes after them. An id seen earlier in the file is counted as already
    there (two batches in flight at once must not both insert it: Milvus keeps
    both rows of a repeated primary key).
    """
    seen: set[str] = set()
    pending: collections.deque[concurrent.futures.Future[tuple[int, int]]] = collections.deque()

    def settle(in_flight: int) -> None:
        while len(pending) > in_flight:
            inserted, present = pending.popleft().result()
            report.inserted += inserted
            report.present += present
            if on_progress is not None:
                done = report.inserted + report.present
                on_progress(done, max(header.rows, done))

    with concurrent.futures.ThreadPoolExecutor(writers, thread_name_prefix="bulk-insert") as pool:
        batch: list[dict[str, Any]] = []
        try:
            for number, line in lines:
                if not line.strip():
                    continue
                row = line_to_row(line, number, header)
                report.read += 1
                if row["id"] in seen:
                    report.present += 1
                    continue
                seen.add(row["id"])
                batch.append(row)
                if len(batch) >= batch_size:
                    pending.append(
                        pool.submit(_insert_missing, client, collection.name, batch, check_present)
                    )
                    batch = []
                    settle(writers)
            if batch:
                pending.append(
                    pool.submit(_insert_missing, client, collection.name, batch, check_present)
                )
        finally:
            settle(0)  # what was handed to the writers lands, even after a bad line


def _insert_missing(
    client: MilvusClient, collection: str, batch: list[dict[str, Any]], check_present: bool
) -> tuple[int, int]:
    """Inserts the batch's rows whose ids the store lacks: (inserted, already there)."""
    present: set[str] = set()
    for start in range(0, len(batch) if check_present else 0, QUERY_LIMIT):
        ids = [str(row["id"]) for row in batch[start : start + QUERY_LIMIT]]
        found = client.query(
            collection,
            filter=f"id in [{', '.join(quote(i) for i in ids)}]",
            output_fields=["id"],
            consistency_level="Strong",
        )
        present.update(str(row["id"]) for row in found)
    missing = [row for row in batch if str(row["id"]) not in present]
    if missing:
        client.insert(collection, missing)
    return len(missing), len(batch) - len(missing)


def stored_rows(client: MilvusClient, collection: str) -> int:
    """How many rows the collection holds."""
    rows = client.query(
        collection, filter="", output_fields=["count(*)"], consistency_level="Strong"
    )
    return int(rows[0]["count(*)"])
