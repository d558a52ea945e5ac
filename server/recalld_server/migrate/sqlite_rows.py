"""Reading rows of a foreign SQLite table, whose column types nothing enforces.

The seed posts' tables are written by hand-rolled agents: an id may be text, an
importance a float or a word, metadata invalid JSON. Each value is read
defensively here, so the layout parsers can say what maps where and trust
that nothing in a row is silently lost.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from recalld_server.migrate.records import (
    MAX_SCOPE_CHARS,
    PROVENANCE_KEY,
    ParseResult,
    clean_identifier,
)

VECTOR_COLUMNS = frozenset({"embedding", "embedding_json", "vector", "embedding_vector"})
"""Columns holding another model's vectors: never imported (recalld re-embeds)."""


def columns(connection: sqlite3.Connection, table: str) -> list[str]:
    """Column names of a table, in order; empty if there is no such table."""
    return [str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')]


def count_rows(connection: sqlite3.Connection, table: str) -> int:
    """Rows in a table; 0 if there is no such table."""
    if not columns(connection, table):
        return 0
    row = connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()
    return int(row[0])


def read_rows(connection: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    """Every row of a table with its rowid (as `_rowid`), in id order (rowid breaks ties)."""
    rows = [dict(row) for row in connection.execute(f"SELECT rowid AS _rowid, * FROM {table}")]
    rows.sort(key=lambda r: (int_or(r.get("id"), r["_rowid"]), r["_rowid"]))
    return rows


def select_agents(
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


def agent_scope(agent: object, scope_from_agent: bool) -> str:
    """The agent_scope a row's agent gives (empty: the memory is shared)."""
    if not scope_from_agent or agent is None:
        return ""
    return clean_identifier(str(agent), MAX_SCOPE_CHARS)


def metadata_from_json(raw: object) -> dict[str, Any]:
    """A JSON object column as metadata; anything else is kept under `legacy_metadata`."""
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


def add_extra(provenance: dict[str, Any], row: dict[str, Any], mapped: Iterable[str]) -> None:
    """Puts the row's unmapped values (BLOBs and vectors aside) in provenance `extra`."""
    known = set(mapped) | {"_rowid"} | VECTOR_COLUMNS
    extra = {
        name: value
        for name, value in row.items()
        if name not in known and value is not None and not isinstance(value, bytes | bytearray)
    }
    if extra:
        provenance["extra"] = extra


def row_id(row: dict[str, Any]) -> int:
    """The row's id column as an integer, else its rowid."""
    value = int_or(row.get("id"), None)
    return int(row["_rowid"]) if value is None else value


def int_or(value: object, default: int | None) -> int | None:
    """An integer read from a number or text, else `default` (booleans are not numbers)."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return default


def float_or(value: object) -> float | None:
    """A finite number read from a number or text, else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip()) if not isinstance(value, int | float) else float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None
