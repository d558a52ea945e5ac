"""Reading a vectors export's lines: every malformed line is named, never loaded."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from recalld_server.maintenance.bulk import (
    BulkFileError,
    BulkHeader,
    line_to_row,
    row_to_line,
)
from recalld_server.storage.milvus_collection import SCALAR_FIELDS

HEADER = BulkHeader("usem3", 4, 1)


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "01J0000000000000000000000A",
        "tenant_id": "t",
        "user_id": "u",
        "agent_scope": "",
        "session_id": "",
        "type": 1,
        "tier": 1,
        "status": 1,
        "topic_key": "",
        "content": "likes tea",
        "content_hash": "abc",
        "importance": 0.5,
        "confidence": 1.0,
        "source": "",
        "tags": ["drinks"],
        "metadata": {"k": 1},
        "created_at": 1,
        "occurred_at": 1,
        "updated_at": 1,
        "expire_at": 0,
        "valid_to": 0,
        "supersedes_id": "",
        "superseded_by_id": "",
        "version": 1,
        "embedding_model": "usem3",
        "last_accessed_at": 0,
        "access_count": 0,
        "expire_explicit": False,
        "embedding": [0.5, -0.25, 0.125, 1.0],
    }
    row.update(changes)
    return row


def test_a_row_survives_the_round_trip_exactly() -> None:
    row = _row()
    back = line_to_row(row_to_line(row), 2, HEADER)
    assert back == row
    assert set(back) == {*SCALAR_FIELDS, "embedding"}


def test_the_header_round_trips_and_a_plain_line_is_not_one() -> None:
    assert BulkHeader.from_line(HEADER.to_line()) == HEADER
    for line in ('{"content": "x"}', "not json", '{"recalld_vectors": 1, "dimension": 4}'):
        with pytest.raises(BulkFileError, match="line 1"):
            BulkHeader.from_line(line)


def _line(**changes: Any) -> str:
    fields = json.loads(row_to_line(_row()))
    fields.update(changes)
    return json.dumps(fields)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{oops", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"id": "x"}), "missing tenant_id"),
        (_line(status="active"), "status has the wrong type"),
        (_line(importance=True), "importance has the wrong type"),
        (_line(tags="drinks"), "tags has the wrong type"),
        (_line(metadata=[1]), "metadata has the wrong type"),
        (_line(id=""), "the id is empty"),
        (_line(embedding_model="other"), "a 'other' vector"),
        (_line(embedding="***"), "not base64"),
        (
            _line(embedding=base64.b64encode(np.zeros(3, "<f4").tobytes()).decode()),
            "has 3 values, not 4",
        ),
        (
            _line(
                embedding=base64.b64encode(np.array([1, np.nan, 0, 0], "<f4").tobytes()).decode()
            ),
            "NaN or infinity",
        ),
    ],
)
def test_malformed_lines_are_named(line: str, problem: str) -> None:
    with pytest.raises(BulkFileError, match=f"line 7: .*{problem}"):
        line_to_row(line, 7, HEADER)
