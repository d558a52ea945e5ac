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
  UPDATE … LIKE and inserts the replacement without supersedes_id), the runner
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

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
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


def columns(connection: sqlite3.Connection, table: str) -> list[str]:
    """Column names of a table, in order; empty if there is no such table."""
    return [str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')]


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
    rows = [
        dict(row) for row in connection.execute(f"SELECT rowid AS _rowid, * FROM {AGENT_MEMORIES}")
    ]
    rows.sort(key=lambda r: (_int_or(r.get("id"), r["_rowid"]), r["_rowid"]))
    rows = _select_agents(rows, "agent_id", agent_ids, result, AGENT_MEMORIES)
    by_id = {_row_id(r): r for r in rows}
    predecessor = {
        _row_id(r): int(r["supersedes_id"])
        for r in rows
        if _int_or(r.get("supersedes_id"), None) is not None
        and int(r["supersedes_id"]) in by_id
        and int(r["supersedes_id"]) != _row_id(r)
    }
    has_successor = set(predecessor.values())
    dangling = [
        _row_id(r)
        for r in rows
        if _int_or(r.get("supersedes_id"), None) is not None and _row_id(r) not in predecessor
    ]
    if dangling:
        result.notes.append(
            f"{AGENT_MEMORIES}: {len(dangling)} row(s) supersede a row that is not in the "
            "import (first: id "
            f"{dangling[0]}); they start a history of their own"
        )
    root: dict[int, int] = {}
    depth: dict[int, int] = {}
    for row_id in by_id:
        root[row_id], depth[row_id] = _chain_root(row_id, predecessor)
    ordered = _chain_order(list(by_id), root, depth)
    forks = _count_forks(predecessor)
    if forks:
        result.notes.append(
            f"{AGENT_MEMORIES}: {forks} row(s) are superseded by more than one row; "
            "only the newest successor stays active"
        )
    for row_id in ordered:
        row = by_id[row_id]
        origin = f"{AGENT_MEMORIES}#{row_id}"
        content = row.get("content")
        if not isinstance(content, str) or not content.strip():
            result.skipped.append(Skipped(origin, "empty content"))
            continue
        in_chain = row_id in predecessor or row_id in has_successor
        provenance: dict[str, Any] = {"format": "sqlite", "table": AGENT_MEMORIES, "id": row_id}
        raw_type = row.get("memory_type")
        memory_type = type_from_name(str(raw_type)) if raw_type is not None else None
        if raw_type is not None:
            provenance["memory_type"] = raw_type
        for name in ("agent_id", "created_at", "valid_to", "supersedes_id"):
            if row.get(name) is not None:
                provenance[name] = row[name]
        _add_extra(provenance, row, _AGENT_MEMORIES_MAPPED)
        metadata = _metadata_from_json(row.get("metadata_json"))
        metadata[PROVENANCE_KEY] = provenance
        closed = row.get("valid_to") not in (None, "")
        result.records.append(
            Record(
                content=content,
                type=memory_type or MemoryType.FACT,
                origin=origin,
                tier=default_tier,
                topic_key=f"{AGENT_MEMORIES}/{root[row_id]}" if in_chain else "",
                source=IMPORT_SOURCE,
                metadata=metadata,
                occurred_at_ms=parse_time_ms(row.get("created_at")) or 0,
                agent_scope=_scope(row.get("agent_id"), scope_from_agent),
                end_status=Status.SUPERSEDED if closed else None,
            )
        )
    return result


def _chain_root(row_id: int, predecessor: dict[int, int]) -> tuple[int, int]:
    """The first row of a row's history and how far back it is (cycles are cut)."""
    seen = {row_id}
    current = row_id
    steps = 0
    while current in predecessor and predecessor[current] not in seen:
        current = predecessor[current]
        seen.add(current)
        steps += 1
    return current, steps


def _chain_order(ids: list[int], root: dict[int, int], depth: dict[int, int]) -> list[int]:
    """Id order, except that within one history older versions come first.

    The slots a history occupies in id order are kept; its rows are re-dealt
    into them by depth, so a successor is never written before its predecessor.
    """
    slots: dict[int, list[int]] = {}
    for position, row_id in enumerate(ids):
        slots.setdefault(root[row_id], []).append(position)
    ordered = list(ids)
    for positions in slots.values():
        if len(positions) < 2:
            continue
        members = sorted((ids[p] for p in positions), key=lambda i: (depth[i], i))
        for position, member in zip(positions, members, strict=True):
            ordered[position] = member
    return ordered


def _count_forks(predecessor: dict[int, int]) -> int:
    counts: dict[int, int] = {}
    for parent in predecessor.values():
        counts[parent] = counts.get(parent, 0) + 1
    return sum(1 for n in counts.values() if n > 1)


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
    rows = [
        dict(row) for row in connection.execute(f"SELECT rowid AS _rowid, * FROM {KV_MEMORIES}")
    ]
    rows.sort(key=lambda r: (_int_or(r.get("id"), r["_rowid"]), r["_rowid"]))
    rows = _select_agents(rows, "owner", agent_ids, result, KV_MEMORIES)
    to_unit = _importance_scale([_float_or(r.get("importance")) for r in rows])
    categories_per_key: dict[str, set[str]] = {}
    for row in rows:
        key = clean_identifier(str(row.get("key") or ""), MAX_TOPIC_KEY_CHARS)
        categories_per_key.setdefault(key, set()).add(str(row.get("category") or ""))
    for row in rows:
        row_id = _row_id(row)
        origin = f"{KV_MEMORIES}#{row_id}"
        raw_key = "" if row.get("key") is None else str(row["key"])
        value = "" if row.get("value") is None else str(row["value"])
        if not value.strip():
            result.skipped.append(Skipped(origin, "empty content"))
            continue
        category = "" if row.get("category") is None else str(row["category"])
        key = clean_identifier(raw_key, MAX_TOPIC_KEY_CHARS)
        topic_key = key
        if key and len(categories_per_key.get(key, ())) > 1:
            topic_key = clean_identifier(f"{category}/{key}", MAX_TOPIC_KEY_CHARS)
        provenance: dict[str, Any] = {"format": "sqlite", "table": KV_MEMORIES, "id": row_id}
        for name in ("category", "key", "importance", "created_at", "last_accessed_at", "owner"):
            if row.get(name) is not None:
                provenance[name] = row[name]
        session_id = row.get("session_id")
        if session_id is not None:
            provenance["session_id"] = session_id
            number = _int_or(session_id, None)
            title = sessions.get(number, {}).get("title") if number is not None else None
            if title:
                provenance["session_title"] = title
        _add_extra(provenance, row, _KV_MAPPED)
        importance = _float_or(row.get("importance"))
        result.records.append(
            Record(
                content=f"{raw_key.strip()}: {value}" if raw_key.strip() else value,
                type=type_from_name(category) or MemoryType.FACT,
                origin=origin,
                tier=default_tier,
                topic_key=topic_key,
                importance=None if importance is None else to_unit(importance),
                source=IMPORT_SOURCE,
                tags=clean_tags([category]),
                metadata={PROVENANCE_KEY: provenance},
                occurred_at_ms=parse_time_ms(row.get("created_at")) or 0,
                agent_scope=_scope(row.get("owner"), scope_from_agent),
                session_id=(
                    clean_identifier(str(session_id), MAX_SCOPE_CHARS)
                    if session_id is not None
                    else ""
                ),
            )
        )
    if session_summaries:
        result.extend(_session_summary_records(sessions, default_tier))
    messages = _count(connection, "messages")
    if messages:
        result.notes.append(
            f"messages: {messages} row(s) of raw conversation not imported (not memories)"
        )
    if sessions and not session_summaries:
        with_summary = sum(1 for s in sessions.values() if str(s.get("summary") or "").strip())
        if with_summary:
            result.notes.append(
                f"sessions: {with_summary} summary(ies) not imported "
                "(pass --session-summaries to import them as SUMMARY memories)"
            )
    return result


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
    return {int(row["id"]): dict(row) for row in rows if _int_or(row["id"], None) is not None}


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


# -- helpers -------------------------------------------------------------------


def _select_agents(
    rows: list[dict[str, Any]],
    column: str,
    agent_ids: Sequence[str],
    result: ParseResult,
    table: str,
) -> list[dict[str, Any]]:
    """Keeps the rows of the wanted agents; notes how many agents a table mixes."""
    present = sorted({str(r[column]) for r in rows if r.get(column) is not None})
    if agent_ids:
        wanted = set(agent_ids)
        kept = [r for r in rows if str(r.get(column)) in wanted]
        result.notes.append(
            f"{table}: {len(kept)} of {len(rows)} row(s) belong to {column} in {sorted(wanted)}; "
            "the others are not part of this import"
        )
        return kept
    if len(present) > 1:
        result.notes.append(
            f"{table}: rows of {len(present)} {column} values imported into one user "
            f"({', '.join(present[:5])}{', …' if len(present) > 5 else ''}); "
            "use --agent-id to pick one"
        )
    return rows


def _scope(agent: object, scope_from_agent: bool) -> str:
    if not scope_from_agent or agent is None:
        return ""
    return clean_identifier(str(agent), MAX_SCOPE_CHARS)


def _metadata_from_json(raw: object) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return {"legacy_metadata": raw}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"legacy_metadata": raw}
    if isinstance(value, dict) and PROVENANCE_KEY not in value:
        return value
    return {"legacy_metadata": value}


VECTOR_COLUMNS = frozenset({"embedding", "embedding_json", "vector", "embedding_vector"})
"""Columns holding another model's vectors: never imported (recalld re-embeds)."""


def _add_extra(provenance: dict[str, Any], row: dict[str, Any], mapped: Iterable[str]) -> None:
    known = set(mapped) | {"_rowid"} | VECTOR_COLUMNS
    extra = {
        name: value
        for name, value in row.items()
        if name not in known and value is not None and not isinstance(value, bytes | bytearray)
    }
    if extra:
        provenance["extra"] = extra


def _row_id(row: dict[str, Any]) -> int:
    value = _int_or(row.get("id"), None)
    return int(row["_rowid"]) if value is None else value


def _int_or(value: object, default: int | None) -> int | None:
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def _float_or(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip()) if not isinstance(value, int | float) else float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _count(connection: sqlite3.Connection, table: str) -> int:
    if not columns(connection, table):
        return 0
    row = connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
    return int(row[0])
