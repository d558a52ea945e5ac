"""SQLite memory tables from the seed posts → records.

Two layouts are recognised by their table and column names (columns are read
by name, so extra or reordered columns do not matter):

`agent_memories` (seed 000), exact columns from the post::

    id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL,
    memory_type TEXT NOT NULL, content TEXT NOT NULL, metadata_json TEXT,
    created_at TEXT DEFAULT (datetime('now')), valid_to TEXT, supersedes_id INTEGER

* memory_type → type ("fact", "event", "summary", "decision", … in English or
  Chinese; anything else → FACT, the original kept in provenance).
* created_at → occurred_at (UTC text); metadata_json (a JSON object) → metadata
  (a non-object or invalid JSON is kept under `legacy_metadata`).
* History: rows linked by supersedes_id form a chain that shares one topic_key
  (`agent_memories/<id of the chain's first row>`), and chains are written
  oldest first, so the server supersedes each older row with its successor.
  A row with valid_to set is "closed" (end_status SUPERSEDED): if nothing
  supersedes it on the server (the post's own example closes rows with an
  UPDATE … LIKE and inserts the replacement without supersedes_id), the import
  archives it after the import. Either way only rows that were current in the
  source (valid_to NULL, not superseded) end up active; nothing is dropped.
* agent_id → provenance metadata; `agent_ids` selects rows, and
  `scope_from_agent` puts agent_id in agent_scope instead of sharing the row.
* The `embedding` column the post's vector pseudo-code mentions (a guess at
  its name; also `embedding_json`, `vector` and any BLOB column) is not
  imported: another model's vectors are not comparable; recalld re-embeds.

`memories` (seed 001), exact columns from the post::

    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id INTEGER,
    category TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    importance INTEGER DEFAULT 3, created_at DATETIME, last_accessed_at DATETIME

* content is `"<key>: <value>"` (the value alone, "TypeScript", means nothing
  without its key, "编程语言偏好").
* key → topic_key (`<category>/<key>` for keys used under several categories,
  so that they do not supersede each other); rows with the same topic are
  written in id order, so the last one is the active one.
* category → type (preference, fact, task, event, … else FACT) and a tag.
* importance 1..5 → (importance - 1) / 4, so 3 (the post's default) is 0.5,
  recalld's default; if the table holds values above 5, the scale is 1..max;
  a table already on 0..1 (some fractional value, none outside) is kept.
* session_id → session_id (as text); the session's title (from `sessions`) goes
  to provenance. With `session_summaries`, each non-empty `sessions.summary`
  becomes a SUMMARY memory of its session.
* `owner` (a guess: the post suggests adding it for multi-agent isolation but
  does not show it) is treated like agent_id above.
* The `messages` table is the raw conversation log, not memories: it is
  counted in a note and not imported.

Column values that are not mapped (and not BLOBs) go to the provenance metadata
under `extra`, so nothing in a row is silently lost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recalld_server.domain.core.model import MemoryType, Status, Tier
from recalld_server.migrate.records import (
    IMPORT_SOURCE,
    MAX_SCOPE_CHARS,
    MAX_TOPIC_KEY_CHARS,
    PROVENANCE_KEY,
    ParseResult,
    Record,
    Skipped,
    clean_identifier,
    clean_tags,
    parse_time_ms,
    type_from_name,
)
from recalld_server.migrate.sqlite_history import Histories, trace_histories
from recalld_server.migrate.sqlite_rows import (
    add_extra,
    agent_scope,
    columns,
    count_rows,
    float_or,
    int_or,
    metadata_from_json,
    read_rows,
    row_id,
    select_agents,
)

AGENT_MEMORIES = "agent_memories"
KV_MEMORIES = "memories"
LAYOUTS = (AGENT_MEMORIES, KV_MEMORIES)

_AGENT_MEMORIES_MAPPED = {
    "id",
    "agent_id",
    "memory_type",
    "content",
    "metadata_json",
    "created_at",
    "valid_to",
    "supersedes_id",
}
_KV_MAPPED = {
    "id",
    "session_id",
    "category",
    "key",
    "value",
    "importance",
    "created_at",
    "last_accessed_at",
    "owner",
}


class LayoutError(ValueError):
    """The database holds none of the known layouts, or lacks a required column."""


def open_readonly(path: Path) -> sqlite3.Connection:
    """Opens a SQLite file read-only (the source is never modified)."""
    if not path.is_file():
        raise LayoutError(f"{path}: no such file")
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    return connection


def detect_layouts(connection: sqlite3.Connection) -> list[str]:
    """The known layouts present: `agent_memories` and/or `memories`."""
    found = []
    if "content" in columns(connection, AGENT_MEMORIES):
        found.append(AGENT_MEMORIES)
    kv_columns = columns(connection, KV_MEMORIES)
    if "key" in kv_columns and "value" in kv_columns:
        found.append(KV_MEMORIES)
    return found


def parse_sqlite(
    path: Path,
    *,
    layout: str = "auto",
    default_tier: Tier | None = Tier.P1,
    agent_ids: Sequence[str] = (),
    scope_from_agent: bool = False,
    session_summaries: bool = False,
) -> ParseResult:
    """Reads every known layout (or the one named) from a SQLite file.

    Args:
        path: The database file (opened read-only).
        layout: "auto", "agent_memories" or "memories".
        default_tier: Tier of every record (the layouts have none).
        agent_ids: Only rows whose agent_id / owner is one of these (empty: all).
        scope_from_agent: Use agent_id / owner as the memory's agent_scope.
        session_summaries: Also import `sessions.summary` (memories layout).

    Raises:
        LayoutError: No known layout, or a required column is missing.
    """
    connection = open_readonly(path)
    try:
        try:
            present = detect_layouts(connection)
        except sqlite3.DatabaseError as error:
            raise LayoutError(f"{path.name}: not a readable SQLite database ({error})") from error
        if layout == "auto":
            chosen = present
        elif layout in present:
            chosen = [layout]
        else:
            chosen = []
        if not chosen:
            tables = [
                str(r[0])
                for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            wanted = "agent_memories or memories" if layout == "auto" else layout
            raise LayoutError(f"{path.name}: no {wanted} table found (tables: {tables})")
        result = ParseResult()
        for name in chosen:
            if name == AGENT_MEMORIES:
                result.extend(
                    parse_agent_memories(
                        connection,
                        default_tier=default_tier,
                        agent_ids=agent_ids,
                        scope_from_agent=scope_from_agent,
                    )
                )
            else:
                result.extend(
                    parse_kv_memories(
                        connection,
                        default_tier=default_tier,
                        agent_ids=agent_ids,
                        scope_from_agent=scope_from_agent,
                        session_summaries=session_summaries,
                    )
                )
        return result
    finally:
        connection.close()


# -- seed 000: agent_memories ---------------------------------------------------


def parse_agent_memories(
    connection: sqlite3.Connection,
    *,
    default_tier: Tier | None = Tier.P1,
    agent_ids: Sequence[str] = (),
    scope_from_agent: bool = False,
) -> ParseResult:
    """Records from an `agent_memories` table (seed 000), history chains oldest first."""
    names = columns(connection, AGENT_MEMORIES)
    if "content" not in names:
        raise LayoutError(f"{AGENT_MEMORIES}: no content column")
    result = ParseResult()
    rows = read_rows(connection, AGENT_MEMORIES)
    rows = select_agents(rows, "agent_id", agent_ids, result, AGENT_MEMORIES)
    histories = trace_histories(rows)
    result.notes.extend(histories.notes(AGENT_MEMORIES))
    for each in histories.order:
        _keep(
            result,
            _agent_memory_record(
                each, histories, default_tier=default_tier, scope_from_agent=scope_from_agent
            ),
        )
    return result


def _agent_memory_record(
    source_id: int, histories: Histories, *, default_tier: Tier | None, scope_from_agent: bool
) -> Record | Skipped:
    """One `agent_memories` row as a record; a chain's rows share its first row's topic."""
    row = histories.rows[source_id]
    origin = f"{AGENT_MEMORIES}#{source_id}"
    content = row.get("content")
    if not isinstance(content, str) or not content.strip():
        return Skipped(origin, "empty content")
    provenance: dict[str, Any] = {"format": "sqlite", "table": AGENT_MEMORIES, "id": source_id}
    raw_type = row.get("memory_type")
    memory_type = type_from_name(str(raw_type)) if raw_type is not None else None
    if raw_type is not None:
        provenance["memory_type"] = raw_type
    for name in ("agent_id", "created_at", "valid_to", "supersedes_id"):
        if row.get(name) is not None:
            provenance[name] = row[name]
    add_extra(provenance, row, _AGENT_MEMORIES_MAPPED)
    metadata = metadata_from_json(row.get("metadata_json"))
    metadata[PROVENANCE_KEY] = provenance
    closed = row.get("valid_to") not in (None, "")
    in_chain = source_id in histories.linked
    return Record(
        content=content,
        type=memory_type or MemoryType.FACT,
        origin=origin,
        tier=default_tier,
        topic_key=f"{AGENT_MEMORIES}/{histories.root[source_id]}" if in_chain else "",
        source=IMPORT_SOURCE,
        metadata=metadata,
        occurred_at_ms=parse_time_ms(row.get("created_at")) or 0,
        agent_scope=agent_scope(row.get("agent_id"), scope_from_agent),
        end_status=Status.SUPERSEDED if closed else None,
    )


# -- seed 001: memories (category/key/value) ----------------------------------


def parse_kv_memories(
    connection: sqlite3.Connection,
    *,
    default_tier: Tier | None = Tier.P1,
    agent_ids: Sequence[str] = (),
    scope_from_agent: bool = False,
    session_summaries: bool = False,
) -> ParseResult:
    """Records from a `memories` table (seed 001) and, optionally, session summaries."""
    names = columns(connection, KV_MEMORIES)
    for required in ("key", "value"):
        if required not in names:
            raise LayoutError(f"{KV_MEMORIES}: no {required} column")
    result = ParseResult()
    sessions = _sessions(connection)
    rows = read_rows(connection, KV_MEMORIES)
    rows = select_agents(rows, "owner", agent_ids, result, KV_MEMORIES)
    to_unit = _importance_scale([float_or(r.get("importance")) for r in rows])
    categories_per_key = _categories_per_key(rows)
    for row in rows:
        _keep(
            result,
            _kv_record(
                row,
                sessions=sessions,
                categories_per_key=categories_per_key,
                to_unit=to_unit,
                default_tier=default_tier,
                scope_from_agent=scope_from_agent,
            ),
        )
    if session_summaries:
        result.extend(_session_summary_records(sessions, default_tier))
    result.notes.extend(_notes_on_what_is_left(connection, sessions, session_summaries))
    return result


def _categories_per_key(rows: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The categories each (cleaned) key is used under."""
    categories_per_key: dict[str, set[str]] = {}
    for row in rows:
        key = clean_identifier(str(row.get("key") or ""), MAX_TOPIC_KEY_CHARS)
        categories_per_key.setdefault(key, set()).add(str(row.get("category") or ""))
    return categories_per_key


def _kv_record(
    row: dict[str, Any],
    *,
    sessions: dict[int, dict[str, Any]],
    categories_per_key: dict[str, set[str]],
    to_unit: Callable[[float], float],
    default_tier: Tier | None,
    scope_from_agent: bool,
) -> Record | Skipped:
    """One `memories` row as a record: "<key>: <value>", the key as its topic."""
    origin = f"{KV_MEMORIES}#{row_id(row)}"
    raw_key = "" if row.get("key") is None else str(row["key"])
    value = "" if row.get("value") is None else str(row["value"])
    if not value.strip():
        return Skipped(origin, "empty content")
    category = "" if row.get("category") is None else str(row["category"])
    key = clean_identifier(raw_key, MAX_TOPIC_KEY_CHARS)
    topic_key = key
    if key and len(categories_per_key.get(key, ())) > 1:
        topic_key = clean_identifier(f"{category}/{key}", MAX_TOPIC_KEY_CHARS)
    importance = float_or(row.get("importance"))
    session_id = row.get("session_id")
    return Record(
        content=f"{raw_key.strip()}: {value}" if raw_key.strip() else value,
        type=type_from_name(category) or MemoryType.FACT,
        origin=origin,
        tier=default_tier,
        topic_key=topic_key,
        importance=None if importance is None else to_unit(importance),
        source=IMPORT_SOURCE,
        tags=clean_tags([category]),
        metadata={PROVENANCE_KEY: _kv_provenance(row, sessions)},
        occurred_at_ms=parse_time_ms(row.get("created_at")) or 0,
        agent_scope=agent_scope(row.get("owner"), scope_from_agent),
        session_id=(
            clean_identifier(str(session_id), MAX_SCOPE_CHARS) if session_id is not None else ""
        ),
    )


def _kv_provenance(row: dict[str, Any], sessions: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Where a `memories` row came from, its session's title included."""
    provenance: dict[str, Any] = {"format": "sqlite", "table": KV_MEMORIES, "id": row_id(row)}
    for name in ("category", "key", "importance", "created_at", "last_accessed_at", "owner"):
        if row.get(name) is not None:
            provenance[name] = row[name]
    session_id = row.get("session_id")
    if session_id is not None:
        provenance["session_id"] = session_id
        number = int_or(session_id, None)
        title = sessions.get(number, {}).get("title") if number is not None else None
        if title:
            provenance["session_title"] = title
    add_extra(provenance, row, _KV_MAPPED)
    return provenance


def _notes_on_what_is_left(
    connection: sqlite3.Connection, sessions: dict[int, dict[str, Any]], session_summaries: bool
) -> list[str]:
    """The notes on tables beside `memories` that hold text but are not imported."""
    notes = []
    messages = count_rows(connection, "messages")
    if messages:
        notes.append(f"messages: {messages} row(s) of raw conversation not imported (not memories)")
    if sessions and not session_summaries:
        with_summary = sum(1 for s in sessions.values() if str(s.get("summary") or "").strip())
        if with_summary:
            notes.append(
                f"sessions: {with_summary} summary(ies) not imported "
                "(pass --session-summaries to import them as SUMMARY memories)"
            )
    return notes


def _importance_scale(values: list[float | None]) -> Callable[[float], float]:
    """Maps the table's importance scale onto 0..1.

    1..5 (the post's scale; 1..max when larger values occur) maps linearly, so
    the post's default 3 becomes recalld's default 0.5. A table already on 0..1
    (every value within it and at least one fractional) is kept as is.
    """
    present = [v for v in values if v is not None]
    if present and all(0.0 <= v <= 1.0 for v in present) and any(v != int(v) for v in present):
        return lambda v: min(1.0, max(0.0, v))
    top = max([5.0, *present])
    return lambda v: min(1.0, max(0.0, (v - 1.0) / (top - 1.0)))


def _sessions(connection: sqlite3.Connection) -> dict[int, dict[str, Any]]:
    if "id" not in columns(connection, "sessions"):
        return {}
    rows = connection.execute("SELECT * FROM sessions ORDER BY id")
    return {int(row["id"]): dict(row) for row in rows if int_or(row["id"], None) is not None}


def _session_summary_records(
    sessions: dict[int, dict[str, Any]], default_tier: Tier | None
) -> ParseResult:
    result = ParseResult()
    for session_id, session in sessions.items():
        summary = str(session.get("summary") or "")
        origin = f"sessions#{session_id}"
        if not summary.strip():
            continue
        title = str(session.get("title") or "").strip()
        provenance: dict[str, Any] = {"format": "sqlite", "table": "sessions", "id": session_id}
        for name in ("title", "created_at", "updated_at", "message_count"):
            if session.get(name) is not None:
                provenance[name] = session[name]
        result.records.append(
            Record(
                content=f"{title}: {summary}" if title else summary,
                type=MemoryType.SUMMARY,
                origin=origin,
                tier=default_tier,
                source=IMPORT_SOURCE,
                metadata={PROVENANCE_KEY: provenance},
                occurred_at_ms=(
                    parse_time_ms(session.get("updated_at"))
                    or parse_time_ms(session.get("created_at"))
                    or 0
                ),
                session_id=str(session_id),
            )
        )
    return result


def _keep(result: ParseResult, parsed: Record | Skipped) -> None:
    """Adds one row's outcome to the records or to the skipped."""
    if isinstance(parsed, Skipped):
        result.skipped.append(parsed)
    else:
        result.records.append(parsed)
