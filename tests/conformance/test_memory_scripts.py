"""Runs the language-neutral memory scripts (tests/scripts/memory_scripts.json)
against a live server through the Python client. Node and Go run the same file."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2, session_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.wiring.server import RunningServer

SCRIPTS = json.loads(
    (Path(__file__).parents[1] / "scripts" / "memory_scripts.json").read_text(encoding="utf-8")
)["scripts"]


def _memory(spec: dict[str, Any]) -> memory_pb2.Memory:
    m = memory_pb2.Memory(content=spec.get("content", ""))
    if "type" in spec:
        m.type = memory_pb2.MemoryType.Value(f"MEMORY_TYPE_{spec['type']}")
    if "tier" in spec:
        m.tier = memory_pb2.MemoryTier.Value(f"MEMORY_TIER_{spec['tier']}")
    for name in ("topic_key", "agent_scope", "session_id"):
        if name in spec:
            setattr(m, name, spec[name])
    for name in ("importance", "confidence"):
        if name in spec:
            setattr(m, name, spec[name])
    m.tags.extend(spec.get("tags", []))
    if "expire_at" in spec:
        m.expire_at.FromDatetime(datetime.fromisoformat(spec["expire_at"].replace("Z", "+00:00")))
    return m


def _status(memory: memory_pb2.Memory) -> str:
    return memory_pb2.MemoryStatus.Name(memory.status).removeprefix("MEMORY_STATUS_")


def _outcomes(results: Any) -> list[str]:
    return [
        memory_service_pb2.WriteOutcome.Name(r.outcome).removeprefix("WRITE_OUTCOME_")
        for r in results
    ]


def _message(spec: dict[str, Any]) -> session_service_pb2.Message:
    role = session_service_pb2.MessageRole.Value(f"MESSAGE_ROLE_{spec['role'].upper()}")
    return session_service_pb2.Message(role=role, content=spec["content"])


def _check_summary(summary: str, expect: dict[str, Any]) -> None:
    if "summary_nonempty" in expect:
        assert bool(summary) == expect["summary_nonempty"], summary
    for text in expect.get("summary_contains", []):
        assert text in summary, (text, summary)


class ScriptRun:
    """One run of one script: symbolic names to fresh tenants, users and ids."""

    def __init__(self, address: str, stack: contextlib.AsyncExitStack) -> None:
        self.address = address
        self.stack = stack
        self.run_id = uuid.uuid4().hex[:10]
        self.clients: dict[str, RecalldClient] = {}
        self.ids: dict[str, str] = {}

    async def client(self, tenant: str) -> RecalldClient:
        if tenant not in self.clients:
            self.clients[tenant] = await self.stack.enter_async_context(
                RecalldClient(self.address, tenant=f"{tenant}-{self.run_id}")
            )
        return self.clients[tenant]

    def user(self, step: dict[str, Any]) -> str:
        return f"{step.get('user', 'u1')}-{self.run_id}"

    @staticmethod
    def session(step: dict[str, Any]) -> str:
        """Session names are used as they are: tenants and users are fresh per run."""
        return str(step.get("session", "s1"))

    def matches(self, memory: memory_pb2.Memory, ref: str) -> bool:
        """A saved name names the memory by id; anything else is a content substring."""
        if ref in self.ids:
            return memory.id == self.ids[ref]
        return ref in memory.content

    def id_of(self, name: str) -> str:
        return self.ids[name]

    def name_of(self, memory_id: str) -> str:
        return next((n for n, i in self.ids.items() if i == memory_id), memory_id)

    def save(self, step: dict[str, Any], ids: list[str]) -> None:
        for name, memory_id in zip(step.get("save", []), ids, strict=False):
            self.ids[name] = memory_id

    async def step(self, step: dict[str, Any]) -> None:
        expect = step.get("expect", {})
        try:
            await getattr(self, f"op_{step['op']}")(step, expect)
        except RecalldError as error:
            if "error" not in expect:
                raise
            assert error.code == getattr(grpc.StatusCode, expect["error"]), error
            return
        assert "error" not in expect, f"expected {expect['error']}"

    async def op_write(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        response = await client.write(
            self.user(step),
            [_memory(m) for m in step["memories"]],
            request_id=step.get("request_id", ""),
        )
        results = list(response.results)
        self.save(step, [r.id for r in results])
        if "outcomes" in expect:
            assert _outcomes(results) == expect["outcomes"]
        for key, field in (("related", "related_id"), ("same_as", "id")):
            if key in expect:
                for name, result in zip(expect[key], results, strict=True):
                    if name is not None:
                        assert getattr(result, field) == self.id_of(name), (key, name)

    async def op_recall(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        fields: dict[str, Any] = {}
        if "types" in step:
            fields["types"] = [
                memory_pb2.MemoryType.Value(f"MEMORY_TYPE_{t}") for t in step["types"]
            ]
        for name in ("min_score", "token_budget"):
            if name in step:
                fields[name] = step[name]
        response = await client.recall(
            self.user(step), step["query"], top_k=step.get("top_k", 10), **fields
        )
        ids = [i.memory.id for i in response.items]
        self.save(step, ids)
        named = [self.name_of(i) for i in ids]
        if "first" in expect:
            assert named[:1] == [expect["first"]], named
        for name in expect.get("contains", []):
            assert self.id_of(name) in ids, (name, named)
        for name in expect.get("excludes", []):
            assert self.id_of(name) not in ids, (name, named)
        if "count" in expect:
            assert len(ids) == expect["count"], named

    async def op_get(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        memory = await client.get(self.user(step), self.id_of(step["id"]))
        if "status" in expect:
            assert _status(memory) == expect["status"]
        if "tier" in expect:
            assert memory_pb2.MemoryTier.Name(memory.tier) == f"MEMORY_TIER_{expect['tier']}"
        if "content" in expect:
            assert memory.content == expect["content"]
        if "superseded_by" in expect:
            assert memory.superseded_by_id == self.id_of(expect["superseded_by"])
        if "supersedes" in expect:
            assert memory.supersedes_id == self.id_of(expect["supersedes"])

    async def op_list(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        statuses = [
            memory_pb2.MemoryStatus.Value(f"MEMORY_STATUS_{s}") for s in step.get("statuses", [])
        ]
        ids: list[str] = []
        token = ""
        while True:
            page = await client.list(
                self.user(step), page_size=100, page_token=token, statuses=statuses
            )
            ids.extend(m.id for m in page.memories)
            token = page.next_page_token
            if not token:
                break
        if "count" in expect:
            assert len(ids) == expect["count"], [self.name_of(i) for i in ids]
        for name in expect.get("contains", []):
            assert self.id_of(name) in ids
        for name in expect.get("excludes", []):
            assert self.id_of(name) not in ids

    async def op_update(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        memory = _memory(step["memory"])
        memory.id = self.id_of(step["id"])
        if step.get("etag") == "current":
            memory.etag = (await client.get(self.user(step), memory.id)).etag
        elif step.get("etag") == "stale":
            memory.etag = 'W/"0"'
        updated = await client.update(self.user(step), memory, step["paths"])
        if "content" in expect:
            assert updated.content == expect["content"]
        if "version" in expect:
            assert updated.version == expect["version"]

    async def op_forget(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        target: dict[str, Any] = {}
        if "topic_key" in step:
            target["topic_key"] = step["topic_key"]
        if "session" in step:
            target["session_id"] = self.session(step)
        if step.get("all_of_user"):
            target["all_of_user"] = True
        mode = memory_service_pb2.ForgetMode.Value(f"FORGET_MODE_{step.get('mode', 'SOFT')}")
        forgotten = await client.forget(
            self.user(step),
            [self.id_of(n) for n in step.get("ids", [])],
            mode=mode,
            dry_run=step.get("dry_run", False),
            **target,
        )
        if "count" in expect:
            assert len(forgotten) == expect["count"]

    async def op_restore(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        memories = await client.restore(self.user(step), [self.id_of(n) for n in step["ids"]])
        if "status" in expect:
            assert all(_status(m) == expect["status"] for m in memories)

    async def op_confirm(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        results = await client.confirm(self.user(step), [self.id_of(n) for n in step["ids"]])
        if "outcomes" in expect:
            assert _outcomes(results) == expect["outcomes"]
        if "status" in expect:
            assert all(_status(r.memory) == expect["status"] for r in results)

    async def op_history(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        versions = await client.history(self.user(step), self.id_of(step["id"]))
        if "operations" in expect:
            assert [
                memory_service_pb2.MemoryOperation.Name(v.operation).removeprefix(
                    "MEMORY_OPERATION_"
                )
                for v in versions
            ] == expect["operations"]

    async def op_list_conflicts(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        response = await client.list_conflicts(self.user(step))
        conflicts = list(response.conflicts)
        self.save(step, [c.proposed.id for c in conflicts])
        if "count" in expect:
            assert len(conflicts) == expect["count"]
        if "proposed" in expect:
            assert [c.proposed.id for c in conflicts] == [self.id_of(n) for n in expect["proposed"]]
        if "existing" in expect:
            assert [c.existing.id for c in conflicts] == [self.id_of(n) for n in expect["existing"]]

    async def op_resolve(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        resolution = memory_service_pb2.ConflictResolution.Value(
            f"CONFLICT_RESOLUTION_{step['resolution']}"
        )
        response = await client.resolve_conflict(
            self.user(step), self.id_of(step["id"]), resolution
        )
        if "proposed_status" in expect:
            assert _status(response.proposed) == expect["proposed_status"]
        if "existing_status" in expect:
            assert _status(response.existing) == expect["existing_status"]

    async def op_append(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        response = await client.append_messages(
            self.user(step),
            self.session(step),
            [_message(m) for m in step["messages"]],
            extract=step.get("extract", False),
            request_id=step.get("request_id", ""),
            agent_scope=step.get("agent_scope", ""),
        )
        self.save(step, [r.id for r in response.extracted])
        for key in ("message_count", "window_message_count"):
            if key in expect:
                assert getattr(response.session, key) == expect[key], (key, response.session)
        if "extracted" in expect:
            assert _outcomes(response.extracted) == expect["extracted"]

    async def op_get_context(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        response = await client.get_context(
            self.user(step),
            self.session(step),
            query=step.get("query", ""),
            token_budget=step.get("token_budget", 0),
        )
        self.save(step, [i.memory.id for i in response.memories])
        contents = [m.content for m in response.messages]
        memories = [i.memory for i in response.memories]
        if "max_tokens" in expect:
            assert response.token_estimate <= expect["max_tokens"], response.token_estimate
        if "messages" in expect:
            assert contents == expect["messages"]
        if "message_count" in expect:
            assert len(contents) == expect["message_count"], contents
        if "min_message_count" in expect:
            assert len(contents) >= expect["min_message_count"], contents
        if "max_message_count" in expect:
            assert len(contents) <= expect["max_message_count"], contents
        for text in expect.get("messages_include", []):
            assert text in contents, (text, contents)
        for text in expect.get("messages_exclude", []):
            assert text not in contents, (text, contents)
        if "first_message" in expect:
            assert contents[:1] == [expect["first_message"]], contents
        if "last_message" in expect:
            assert contents[-1:] == [expect["last_message"]], contents
        _check_summary(response.summary, expect)
        if "memory_count" in expect:
            assert len(memories) == expect["memory_count"], [m.content for m in memories]
        if "memories_first" in expect:
            assert memories, "no memories"
            assert self.matches(memories[0], expect["memories_first"]), memories[0].content
        for ref in expect.get("memories_include", []):
            assert any(self.matches(m, ref) for m in memories), (ref, [m.content for m in memories])
        for text in expect.get("context_contains", []):
            assert text in response.context, (text, response.context)
        for text in expect.get("context_not_contains", []):
            assert text not in response.context, (text, response.context)

    async def op_get_session(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        session = await client.get_session(self.user(step), self.session(step))
        for key in ("message_count", "window_message_count"):
            if key in expect:
                assert getattr(session, key) == expect[key], (key, session)
        if "ended" in expect:
            assert session.HasField("ended_at") == expect["ended"], session
        _check_summary(session.summary, expect)

    async def op_end_session(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        response = await client.end_session(self.user(step), self.session(step))
        summary = response.summary_memory
        self.save(step, [summary.id] if response.HasField("summary_memory") else [])
        if "ended" in expect:
            assert response.session.HasField("ended_at") == expect["ended"], response.session
        if "summary_memory_type" in expect:
            assert response.HasField("summary_memory"), "no summary memory"
            assert memory_pb2.MemoryType.Name(summary.type) == (
                f"MEMORY_TYPE_{expect['summary_memory_type']}"
            )
            assert response.session.summary_memory_id == summary.id
        if "summary_memory_session" in expect:
            assert summary.session_id == expect["summary_memory_session"], summary
        _check_summary(response.session.summary, expect)

    async def op_list_sessions(self, step: dict[str, Any], expect: dict[str, Any]) -> None:
        client = await self.client(step.get("tenant", "main"))
        names = [s.session_id async for s in client.list_all_sessions(self.user(step))]
        if "count" in expect:
            assert len(names) == expect["count"], names
        if "sessions" in expect:
            assert sorted(names) == sorted(expect["sessions"])


@pytest.fixture
async def script_stack() -> AsyncIterator[contextlib.AsyncExitStack]:
    async with contextlib.AsyncExitStack() as stack:
        yield stack


@pytest.mark.parametrize("script", SCRIPTS, ids=[s["name"] for s in SCRIPTS])
async def test_memory_script(
    script: dict[str, Any], any_server: RunningServer, script_stack: contextlib.AsyncExitStack
) -> None:
    run = ScriptRun(f"127.0.0.1:{any_server.port}", script_stack)
    for index, step in enumerate(script["steps"]):
        try:
            await run.step(step)
        except AssertionError as error:
            raise AssertionError(f"step {index} ({step['op']}): {error}") from error
