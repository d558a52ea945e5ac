"""`recalld import` / `recalld export` against a real server: counts, history, round trips.

Most tests call the runner against the in-process session server; the last one
runs the real `recalld` console command against a `recalld serve` child process.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient
from recalld_server.migrate.exporting import ExportReport, export_memories, list_all
from recalld_server.migrate.import_report import ImportReport
from recalld_server.migrate.importing import run_import
from recalld_server.migrate.jsonl import expiry_to_send, parse_jsonl
from recalld_server.migrate.memory_md import parse_memory_md
from recalld_server.migrate.records import ParseResult
from recalld_server.migrate.sqlite_layouts import parse_sqlite
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.unit.migrate.test_memory_md import CHINESE, ENGLISH
from tests.unit.migrate.test_sqlite_layouts import make_agent_memories, make_kv

ACTIVE = memory_pb2.MEMORY_STATUS_ACTIVE
SUPERSEDED = memory_pb2.MEMORY_STATUS_SUPERSEDED
ARCHIVED = memory_pb2.MEMORY_STATUS_ARCHIVED


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def import_into(
    client: RecalldClient, parsed: ParseResult, user_id: str = "", digest: str = "test"
) -> ImportReport:
    report = await run_import(client, parsed, user_id=user_id, source_digest=digest)
    assert report.ok, report.render()
    return report


async def export(client: RecalldClient, users: list[str]) -> tuple[list[str], ExportReport]:
    lines: list[str] = []
    report = await export_memories(client, users, lines.append)
    assert not report.error, report.error
    return lines, report


def metadata(m: memory_pb2.Memory) -> dict[str, Any]:
    return json_format.MessageToDict(m.metadata)


def by_status(memories: list[memory_pb2.Memory]) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for m in memories:
        out.setdefault(m.status, set()).add(m.content)
    return out


def comparable(lines: list[str]) -> list[tuple[Any, ...]]:
    """What must survive export -> import -> export (ids and server times may change)."""
    now_ms = int(time.time() * 1000)
    out = []
    for line in lines:
        data = json.loads(line)
        parsed = json_format.ParseDict(data, memory_pb2.Memory())
        out.append(
            (
                data["user_id"],
                data["content"],
                data["type"],
                data.get("tier"),
                data.get("status"),
                data.get("topic_key", ""),
                tuple(data.get("tags", [])),
                json.dumps(data.get("metadata", {}), sort_keys=True, ensure_ascii=False),
                data.get("occurred_at"),
                data.get("importance"),
                data.get("confidence"),
                data.get("source", ""),
                data.get("agent_scope", ""),
                data.get("session_id", ""),
                expiry_to_send(parsed, now_ms),  # explicit expiries only
            )
        )
    return sorted(out)


async def test_memory_md_import_maps_tiers_and_types(client: RecalldClient, user_id: str) -> None:
    parsed = parse_memory_md(CHINESE, source_name="MEMORY.md")
    english = parse_memory_md(ENGLISH, source_name="notes.md")
    parsed.extend(english)
    report = await import_into(client, parsed, user_id)
    assert report.parsed == 13 + 11
    assert report.written == 11 + 10
    assert sorted(s.reason for s in report.skipped) == [
        "empty content",
        "front matter",
        "html comment",
    ]
    assert sum(report.outcomes.values()) == report.memories == 21
    stored = await list_all(client, user_id)
    assert all(m.status == ACTIVE for m in stored)
    assert all(m.source == "import" for m in stored)
    found = {m.content: m for m in stored}
    weekend = found["永远不要在周末发通知"]
    assert (weekend.tier, weekend.type) == (
        memory_pb2.MEMORY_TIER_P0,
        memory_pb2.MEMORY_TYPE_DECISION,
    )
    coffee = found["Prefers americano, no sugar"]
    assert (coffee.tier, coffee.type) == (
        memory_pb2.MEMORY_TIER_P0,
        memory_pb2.MEMORY_TYPE_PREFERENCE,
    )
    assert metadata(coffee)["migrated_from"]["file"] == "notes.md"
    decision = found["2026-01-15: 数据库选型最终确定为 PostgreSQL"]
    assert decision.occurred_at.ToMilliseconds() == 1_768_435_200_000
    assert decision.tier == memory_pb2.MEMORY_TIER_P1
    assert found["Deploy on Kubernetes"].tier == memory_pb2.MEMORY_TIER_P2


async def test_agent_memories_history_leaves_only_current_rows_active(
    client: RecalldClient, user_id: str, tmp_path: Path
) -> None:
    parsed = parse_sqlite(make_agent_memories(tmp_path / "a.db"))
    report = await import_into(client, parsed, user_id)
    assert (report.parsed, report.written, len(report.skipped)) == (8, 7, 1)
    assert report.outcomes["SUPERSEDED"] == 2  # 1 -> 2 -> 4
    assert report.archived_not_superseded == 1  # row 5, closed without a successor
    statuses = by_status(await list_all(client, user_id))
    assert statuses[ACTIVE] == {
        "UI 风格：暗色",
        "数据库选型最终确定为 PostgreSQL 16",
        "第一周：完成了记忆层",
        "未知类型的一条",
    }
    assert statuses[SUPERSEDED] == {"先用 MySQL 跑着", "还是上 PostgreSQL"}
    assert statuses[ARCHIVED] == {"周报改成周五发"}
    hits = await client.recall(user_id, "数据库用的是什么", top_k=5)
    assert "先用 MySQL 跑着" not in {h.memory.content for h in hits.items}


async def test_kv_memories_keys_supersede_and_importance_scales(
    client: RecalldClient, user_id: str, tmp_path: Path
) -> None:
    parsed = parse_sqlite(make_kv(tmp_path / "kv.db"), session_summaries=True)
    report = await import_into(client, parsed, user_id)
    assert (report.parsed, report.written, len(report.skipped)) == (8, 7, 1)
    stored = {m.content: m for m in await list_all(client, user_id)}
    old, new = stored["编程语言偏好: TypeScript"], stored["编程语言偏好: Go"]
    assert (old.status, new.status) == (SUPERSEDED, ACTIVE)
    assert old.superseded_by_id == new.id
    assert new.topic_key == "编程语言偏好"
    assert old.importance == pytest.approx(1.0)
    assert new.importance == pytest.approx(0.25)
    assert list(new.tags) == ["preference"]
    assert stored["截止日期: 3 月底"].status == ACTIVE  # task/截止日期 and event/截止日期 differ
    assert stored["截止日期: 延期到 4 月"].status == ACTIVE
    summary = stored["第一次对话: 聊了前端转 AI"]
    assert (summary.type, summary.session_id) == (memory_pb2.MEMORY_TYPE_SUMMARY, "1")


async def test_export_import_export_round_trip(
    server: RunningServer, client: RecalldClient
) -> None:
    alice, bob = fresh("alice"), fresh("bob")
    past = memory_pb2.Memory()
    past.occurred_at.FromMilliseconds(1_700_000_000_123)
    core = memory(
        "Alice is allergic to peanuts",
        memory_pb2.MEMORY_TYPE_FACT,
        tier=memory_pb2.MEMORY_TIER_P0,
        topic_key="health.allergy",
        tags=["health", "饮食"],
        importance=0.9,
        source="chat",
        session_id="s-1",
        occurred_at=past.occurred_at,
    )
    core.metadata.update({"confidence_note": "said twice", "n": 3, "list": [1, "x", None]})
    await client.write(alice, [core])
    await client.write(
        alice,
        [memory("Team standup is at 9:30", memory_pb2.MEMORY_TYPE_EVENT, topic_key="standup")],
    )
    await client.write(
        alice,
        [memory("Team standup moved to 10:00", memory_pb2.MEMORY_TYPE_EVENT, topic_key="standup")],
    )
    archived = (await client.write(alice, [memory("Alice used to live in Lyon")])).results[0].id
    await client.forget(alice, [archived])
    draft = await client.write(alice, [memory("Alice might own a cat named Miso", confidence=0.3)])
    assert draft.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_DRAFT
    conflict = await client.write(
        alice,
        [memory("Alice is no longer allergic to anything", topic_key="health.allergy")],
    )
    assert conflict.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_CONFLICT
    expiring = memory("Alice's parking permit is valid this month", tier=memory_pb2.MEMORY_TIER_P2)
    expiring.expire_at.FromMilliseconds(4_102_444_800_321)  # 2100, explicit
    await client.write(alice, [expiring])
    await client.write(
        alice,
        [memory("爱丽丝喜欢在周末爬山", memory_pb2.MEMORY_TYPE_PREFERENCE, agent_scope="coach")],
    )
    await client.write(bob, [memory("Bob prefers tea", memory_pb2.MEMORY_TYPE_PREFERENCE)])

    first, first_report = await export(client, [alice, bob])
    assert first_report.per_user == {alice: 8, bob: 1}
    statuses = {json.loads(line)["status"] for line in first}
    assert statuses == {
        "MEMORY_STATUS_ACTIVE",
        "MEMORY_STATUS_SUPERSEDED",
        "MEMORY_STATUS_ARCHIVED",
        "MEMORY_STATUS_DRAFT",
        "MEMORY_STATUS_CONFLICT",
    }

    async with RecalldClient(f"127.0.0.1:{server.port}", tenant=fresh("tenant")) as target:
        report = await import_into(target, parse_jsonl(first, source_name="export.jsonl"))
        assert (report.parsed, report.written) == (9, 9)
        assert report.outcomes["SUPERSEDED"] == 1
        assert report.outcomes["DRAFT"] == 1
        assert report.outcomes["CONFLICT"] == 1
        assert report.archived_in_source == 1
        second, _ = await export(target, [alice, bob])
    assert comparable(second) == comparable(first)
    assert len(first) == len(second) == 9


async def test_records_the_server_rejects_are_skipped_with_its_reason(
    client: RecalldClient, user_id: str
) -> None:
    lines = [
        json.dumps({"content": "fine one", "type": "fact"}),
        json.dumps({"content": "too many tags", "tags": [f"t{i}" for i in range(40)]}),
        json.dumps({"content": "fine two", "type": "event"}),
        json.dumps({"content": "huge metadata", "metadata": {"blob": "x" * 20_000}}),
        json.dumps({"content": "fine three", "importance": 0.2}),
    ]
    report = await run_import(client, parse_jsonl(lines), user_id=user_id)
    assert report.ok, report.render()
    assert (report.parsed, report.written, len(report.skipped)) == (5, 3, 2)
    reasons = {s.origin: s.reason for s in report.skipped}
    assert "rejected by server: tags" in reasons["memories.jsonl:2"]
    assert "rejected by server: metadata" in reasons["memories.jsonl:4"]
    contents = {m.content for m in await list_all(client, user_id)}
    assert contents == {"fine one", "fine two", "fine three"}


async def test_long_content_is_split_and_reruns_store_nothing_twice(
    client: RecalldClient, user_id: str
) -> None:
    long_paragraph = " ".join(
        f"Sentence {i} about subject {i * 7919 % 1000} in project {i % 37}." for i in range(700)
    )
    text = f"## P2 Notes\n\n- short note about the release train\n\n{long_paragraph}\n"
    assert len(long_paragraph) > 2 * 8192
    parsed = parse_memory_md(text)
    report = await import_into(client, parsed, user_id, digest="long")
    assert (report.parsed, report.written, report.split_records) == (2, 2, 1)
    assert report.memories == 5
    stored = await list_all(client, user_id)
    pieces = sorted(
        (m for m in stored if "split" in m.metadata), key=lambda m: metadata(m)["split"]["part"]
    )
    assert [metadata(m)["split"]["of"] for m in pieces] == [4, 4, 4, 4]
    assert " ".join(m.content for m in pieces) == long_paragraph
    assert all(m.tier == memory_pb2.MEMORY_TIER_P2 for m in stored)

    again = await import_into(client, parse_memory_md(text), user_id, digest="long")
    assert again.written == 2
    assert len(await list_all(client, user_id)) == 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_console_commands_against_a_server_process(tmp_path: Path) -> None:
    recalld = shutil.which("recalld")
    assert recalld, "the recalld console script is not installed"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [recalld, *args], capture_output=True, text=True, timeout=120, check=False
        )

    source = tmp_path / "MEMORY.md"
    source.write_text(CHINESE, encoding="utf-8")
    server = ServerProcess(tmp_path / "data").start()
    try:
        common = ["--address", server.address, "--no-progress"]
        dry = run("import", str(source), "--user", "alice", "--dry-run", *common)
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert "13 parsed = 11 written + 2 skipped: OK" in dry.stdout

        missing_user = run("import", str(source), *common)
        assert missing_user.returncode == 2
        assert "--user is required" in missing_user.stderr

        report_path = tmp_path / "report.json"
        imported = run(
            "import", str(source), "--user", "alice", "--tenant", "cli-a",
            "--report-json", str(report_path), *common,
        )  # fmt: skip
        assert imported.returncode == 0, imported.stdout + imported.stderr
        report = json.loads(report_path.read_text(encoding="utf-8"))
        assert (report["ok"], report["parsed"], report["written"], report["skipped"]) == (
            True, 13, 11, 2,
        )  # fmt: skip
        assert sum(report["outcomes"].values()) == 11

        first = tmp_path / "a.jsonl"
        exported = run("export", "--user", "alice", "--tenant", "cli-a", "-o", str(first), *common)
        assert exported.returncode == 0, exported.stderr
        assert "exported memories: 11" in exported.stderr
        assert not Path(f"{first}.partial").exists()

        again = run("import", str(first), "--tenant", "cli-b", *common)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "11 parsed = 11 written + 0 skipped: OK" in again.stdout
        second = tmp_path / "b.jsonl"
        exported = run("export", "--user", "alice", "--tenant", "cli-b", "-o", str(second), *common)
        assert exported.returncode == 0, exported.stderr
        assert comparable(second.read_text("utf-8").splitlines()) == comparable(
            first.read_text("utf-8").splitlines()
        )
    finally:
        server.terminate()

    dead = run(
        "import", str(source), "--user", "alice", "--address", f"127.0.0.1:{free_port()}",
        "--timeout", "3", "--no-progress",
    )  # fmt: skip
    assert dead.returncode == 1
    assert "check: FAILED" in dead.stdout
    assert "UNAVAILABLE" in dead.stdout
