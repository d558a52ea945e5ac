"""The labelled sets that calibration reads, shipped inside the package.

`recalld calibrate` must work from an installed wheel, away from the source
tree, so the sets live here as package data (`data/`, described in
`data/README.md`): the precision set (`memories.json`, `queries.json`:
questions with their relevant memories, split train/test), its labelled pairs
(`pairs.json`: duplicate/distinct and contradiction/compatible, split
train/test) and the older near-duplicate pairs (`near_duplicates.json`, no
split). The benchmarks read them from here too, so there is one copy.
"""

from __future__ import annotations

import datetime
import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

PRESENT = datetime.datetime(2026, 6, 28, tzinfo=datetime.UTC)
"""The precision set's "now" (data/README.md: late June 2026; the newest memory is 2026-06-22).

Recall weighs memories by age, so every score is taken at this moment: the
memories are as old at any run as the set says they are (against the wall clock
every memory grew older with the calendar and recency stopped ranking anything).
"""


def data_dir() -> Traversable:
    """The directory of the shipped labelled sets."""
    return resources.files("recalld_server.calibration") / "data"


def _load(name: str) -> Any:
    return json.loads((data_dir() / name).read_text(encoding="utf-8"))


def load_precision() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """The users' memories (user -> memories, in file order) and the labelled questions."""
    users = _load("memories.json")["users"]
    queries: list[dict[str, Any]] = _load("queries.json")["queries"]
    return {u["user"]: u["memories"] for u in users}, queries


def load_pairs() -> dict[str, list[dict[str, Any]]]:
    """pairs.json's two lists, by name.

    `duplicates` holds {a, b, label, lang, split}, `contradictions` {core, other,
    label, lang, split}.
    """
    doc = _load("pairs.json")
    return {"duplicates": doc["duplicates"], "contradictions": doc["contradictions"]}


def load_near_duplicates() -> list[dict[str, Any]]:
    """near_duplicates.json's pairs ({a, b, duplicate, kind}); the set has no split."""
    pairs: list[dict[str, Any]] = _load("near_duplicates.json")["pairs"]
    return pairs


def day_ms(day: str, shift: datetime.timedelta = datetime.timedelta(0)) -> int:
    """Epoch milliseconds of a `YYYY-MM-DD` day (UTC midnight), moved by `shift`."""
    moment = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC) + shift
    return int(moment.timestamp() * 1000)


def present_ms() -> int:
    """PRESENT in epoch milliseconds."""
    return int(PRESENT.timestamp() * 1000)
