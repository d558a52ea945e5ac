"""Shared helpers and import planning: splitting, batches, request ids, the zero-loss report."""

from __future__ import annotations

import collections

import pytest
from google.protobuf import json_format

from recalld_server.domain.core.model import MemoryType, Status, Tier
from recalld_server.migrate.import_plan import expand_record, plan_batches, request_id_for
from recalld_server.migrate.import_report import ImportReport
from recalld_server.migrate.importing import run_import
from recalld_server.migrate.records import (
    ParseResult,
    Record,
    Skipped,
    clean_identifier,
    clean_tags,
    parse_time_ms,
    split_content,
    tier_from_name,
    type_from_name,
)


def record(content: str, **fields: object) -> Record:
    return Record(content=content, type=MemoryType.FACT, origin=f"t:{content[:10]}", **fields)  # type: ignore[arg-type]


def test_time_parsing() -> None:
    assert parse_time_ms("2026-01-15 08:30:00") == 1_768_465_800_000
    assert parse_time_ms("2026-01-15T08:30:00Z") == 1_768_465_800_000
    assert parse_time_ms("2026-01-15T16:30:00+08:00") == 1_768_465_800_000
    assert parse_time_ms("2026/01/15") == 1_768_435_200_000
    assert parse_time_ms(1_768_465_800) == 1_768_465_800_000
    assert parse_time_ms("1768465800000") == 1_768_465_800_000
    assert parse_time_ms(1_768_465_800.5) == 1_768_465_800_500
    for bad in (None, "", "soon", True, -5, "99999-01-01", float("nan")):
        assert parse_time_ms(bad) is None, bad


def test_names_and_cleaning() -> None:
    assert type_from_name("Preference") is MemoryType.PREFERENCE
    assert type_from_name("MEMORY_TYPE_TASK") is MemoryType.TASK
    assert type_from_name("决策") is MemoryType.DECISION
    assert type_from_name("vibes") is None
    assert tier_from_name("p0") is Tier.P0
    assert tier_from_name("MEMORY_TIER_P2") is Tier.P2
    assert tier_from_name("P3") is None
    assert clean_identifier("  a\tb\x00c  ", 10) == "a b c"
    assert clean_identifier("x" * 300, 256) == "x" * 256
    tags = clean_tags(["a", " a ", "", "b\n", "c" * 70, *[f"t{i}" for i in range(40)]])
    assert tags[:3] == ("a", "b", "c" * 64)
    assert len(tags) == 32


def test_split_content_prefers_natural_boundaries() -> None:
    assert split_content("short") == ["short"]
    paragraphs = "\n\n".join(f"第{i}段。" + "内容" * 1000 for i in range(5))
    pieces = split_content(paragraphs, 8192)
    assert all(len(p) <= 8192 for p in pieces)
    assert len(pieces) == 2
    assert "\n\n".join(pieces) == paragraphs  # cut at a paragraph break
    assert all(p.startswith("第") for p in pieces)
    words = " ".join(f"word{i}" for i in range(3000))
    pieces = split_content(words, 1000)
    assert all(len(p) <= 1000 for p in pieces)
    assert " ".join(pieces) == words
    blob = "x" * 2500
    assert split_content(blob, 1000) == ["x" * 1000, "x" * 1000, "x" * 500]


def test_expand_record_splits_and_keys_the_pieces() -> None:
    text = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum " * 300 for i in range(6))
    memories = expand_record(record(text, topic_key="notes.big"))
    assert len(memories) == 3
    assert [m.topic_key for m in memories] == ["notes.big", "notes.big#2", "notes.big#3"]
    splits = [json_format.MessageToDict(m.metadata)["split"] for m in memories]
    assert [s["part"] for s in splits] == [1, 2, 3]
    assert len({s["group"] for s in splits}) == 1
    assert all(len(m.content) <= 8192 for m in memories)


def test_plan_batches_respects_size_topics_duplicates_and_users() -> None:
    records = [record(f"memory {i}") for i in range(250)]
    plan = plan_batches(records, user_id="u")
    assert [len(b.parts) for b in plan.batches] == [100, 100, 50]
    assert [b.index for b in plan.batches] == [0, 1, 2]

    chain = [
        record("a", topic_key="k"),
        record("b"),
        record("B "),  # the same as "b" once normalised: a new batch
        record("c", topic_key="k"),  # k is in the previous batch only: same batch
        record("d", topic_key="k"),  # k again: a new batch
    ]
    plan = plan_batches(chain, user_id="u")
    assert [[p.record_index for p in b.parts] for b in plan.batches] == [[0, 1], [2, 3], [4]]

    mixed = [
        record("x", user_id="ann"),
        record("y", user_id="bob"),
        record("z"),
        record("w", user_id="ann"),
    ]
    plan = plan_batches(mixed)
    assert [(b.user_id, [p.record_index for p in b.parts]) for b in plan.batches] == [
        ("ann", [0, 3]),
        ("bob", [1]),
    ]
    assert plan.skipped == {2: "no user_id in the record (pass --user)"}
    with pytest.raises(ValueError):
        plan_batches(records, user_id="u", batch_size=101)


def test_request_ids_are_deterministic_and_distinct() -> None:
    records = [record(f"memory {i}") for i in range(150)]
    first = plan_batches(records, user_id="u").batches
    again = plan_batches(records, user_id="u").batches
    other_user = plan_batches(records, user_id="v").batches
    ids = [request_id_for("digest", b, [p.memory for p in b.parts]) for b in first]
    assert ids == [request_id_for("digest", b, [p.memory for p in b.parts]) for b in again]
    assert len(set(ids)) == 2
    assert all(i.startswith("import-") and len(i) <= 128 for i in ids)
    assert ids[0] != request_id_for(
        "digest", other_user[0], [p.memory for p in other_user[0].parts]
    )
    assert ids[0] != request_id_for("other", first[0], [p.memory for p in first[0].parts])
    fewer = [p.memory for p in first[0].parts][1:]
    assert ids[0] != request_id_for("digest", first[0], fewer)


async def test_dry_run_counts_without_a_server() -> None:
    long_text = "\n".join(f"line {i} " + "z" * 80 for i in range(200))
    parsed = ParseResult(
        records=[record("a"), record(long_text), record("c", end_status=Status.ARCHIVED)],
        skipped=[Skipped("t:9", "empty content")],
    )
    report = await run_import(None, parsed, user_id="u", dry_run=True)
    assert report.ok and report.dry_run
    assert (report.parsed, report.written, len(report.skipped), report.memories) == (4, 3, 1, 5)
    assert report.split_records == 1
    assert "4 parsed = 3 written + 1 skipped: OK" in report.render()


def test_report_balance() -> None:
    report = ImportReport(parsed=3, written=2, skipped=[Skipped("x", "empty content")])
    assert report.ok
    report.outcomes = collections.Counter({"CREATED": 2})
    assert report.to_dict()["outcomes"] == {
        "CREATED": 2,
        "DUPLICATE": 0,
        "SUPERSEDED": 0,
        "CONFLICT": 0,
        "DRAFT": 0,
    }
    report.failed.append(Skipped("y", "not written (the import stopped)"))
    assert not report.ok
    report.failed.clear()
    report.parsed = 4
    assert not report.ok
    assert "check: FAILED" in report.render()
