"""Every RPC that takes a user, driven by keys limited to another agent scope.

The victim is the `bot-b` scope of one user: active, draft, parked-conflict,
expired, superseded and archived memories, their history, a request record and
a session. The attackers are a writer key and a reader key, both limited to
`bot-a`, in the same tenant. Each RPC is aimed at the victim's ids, topics,
tags and session, and each answer must either refuse (NOT_FOUND,
PERMISSION_DENIED) or leave out everything of bot-b's; afterwards the victim's
state, as an unscoped operator sees it, must be exactly what it was.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.services import MilvusServerProcess

TENANT = "scope-attacks"
KEYS = {
    "keys": [
        # A tenant of its own: tenant-wide calls see only this module's data,
        # also on the Milvus server that other modules share.
        {"key": "ops", "tenant": TENANT, "role": "writer"},
        {"key": "bot-a", "tenant": TENANT, "role": "writer", "scopes": ["bot-a"]},
        {"key": "bot-a-reader", "tenant": TENANT, "role": "reader", "scopes": ["bot-a"]},
        {"key": "bot-b", "tenant": TENANT, "role": "writer", "scopes": ["bot-b"]},
    ]
}
PAST_S = 1_000_000_000  # 2001: already expired
SESSION = "bot-b-chat"
# Words that only bot-b's memories and messages contain.
SECRETS = ("sapphire", "Oslo", "Bergen", "penicillin", "Parking", "marathon", "Lisbon", "violin")
ALL_STATUSES = [
    memory_pb2.MEMORY_STATUS_ACTIVE,
    memory_pb2.MEMORY_STATUS_DRAFT,
    memory_pb2.MEMORY_STATUS_CONFLICT,
    memory_pb2.MEMORY_STATUS_SUPERSEDED,
    memory_pb2.MEMORY_STATUS_ARCHIVED,
]
NOT_FOUND = {grpc.StatusCode.NOT_FOUND}
DENIED = {grpc.StatusCode.PERMISSION_DENIED}


@pytest.fixture(scope="module", params=["milvus-lite", "milvus-server"])
async def scoped_server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    embedder: MicroBatchingEmbedder,
) -> AsyncIterator[RunningServer]:
    """The scope rules are enforced partly in each store's filters: run on both."""
    root = tmp_path_factory.mktemp("scope-attacks")
    keys_file = root / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    config = ServerConfig(port=0, data_dir=root / "data", keys_file=keys_file)
    if request.param == "milvus-server":
        milvus: MilvusServerProcess = request.getfixturevalue("milvus_server")
        config = dataclasses.replace(config, milvus_uri=milvus.uri)
    running = await start_server(config, embedder=embedder)
    yield running
    await running.stop(grace_s=1)


@dataclass
class Parties:
    ops: RecalldClient
    victim: RecalldClient
    writer: RecalldClient  # bot-a, writer
    reader: RecalldClient  # bot-a, reader


@pytest.fixture
async def parties(scoped_server: RunningServer) -> AsyncIterator[Parties]:
    address = f"127.0.0.1:{scoped_server.port}"
    async with (
        RecalldClient(address, api_key="ops") as ops,
        RecalldClient(address, api_key="bot-b") as victim,
        RecalldClient(address, api_key="bot-a") as writer,
        RecalldClient(address, api_key="bot-a-reader") as reader,
    ):
        yield Parties(ops, victim, writer, reader)


@dataclass
class Victim:
    ids: dict[str, str]  # what the memory is -> its id
    conflict_id: str


def _b(content: str, memory_type: int = memory_pb2.MEMORY_TYPE_FACT, **fields: Any) -> Any:
    return memory(content, memory_type, agent_scope="bot-b", **fields)


async def _seed_victim(victim: RecalldClient, user_id: str) -> Victim:
    core = _b(
        "The user is allergic to penicillin",
        tier=memory_pb2.MEMORY_TIER_P0,
        topic_key="health.allergy",
        tags=["health"],
    )
    expired = _b("Parking spot C3 this week only", memory_pb2.MEMORY_TYPE_STATE)
    expired.expire_at.FromSeconds(PAST_S)
    first = await victim.write(
        user_id,
        [
            core,
            _b("The vault combination is sapphire", tags=["vault"]),
            _b("The user might run a marathon in spring", confidence=0.3),
            expired,
            _b("The user lives in Oslo", topic_key="home.city"),
            _b("The user plays the violin", tags=["hobby"]),
        ],
        request_id="bot-b-seed",
    )
    ids = dict(
        zip(
            ("core", "vault", "draft", "expired", "old_city", "archived"),
            (r.id for r in first.results),
            strict=True,
        )
    )
    assert first.results[2].outcome == memory_service_pb2.WRITE_OUTCOME_DRAFT
    moved = await victim.write(user_id, [_b("The user lives in Bergen", topic_key="home.city")])
    ids["city"] = moved.results[0].id
    parked = await victim.write(
        user_id, [_b("The user is no longer allergic to penicillin", topic_key="health.allergy")]
    )
    assert parked.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_CONFLICT
    ids["parked"] = parked.results[0].id
    await victim.update(
        user_id,
        memory_pb2.Memory(id=ids["vault"], content="The vault combination is sapphire, changed"),
        ["content"],
    )
    assert await victim.forget(user_id, [ids["archived"]]) == [ids["archived"]]
    await victim.append_messages(
        user_id,
        SESSION,
        [("user", "I am flying to Lisbon on Friday"), ("assistant", "Noted, Lisbon on Friday.")],
        agent_scope="bot-b",
        extract=True,
    )
    conflicts = await victim.list_conflicts(user_id)
    [conflict] = conflicts.conflicts
    return Victim(ids, conflict.proposed.id)


async def _snapshot(ops: RecalldClient, user_id: str) -> dict[str, Any]:
    """What an unscoped operator sees of the user: memories, history, conflicts, sessions."""
    memories = sorted(
        [
            (m.id, m.status, m.content, m.agent_scope, m.tier, m.etag, m.topic_key)
            async for m in ops.list_all(user_id, statuses=ALL_STATUSES)
        ]
    )
    history = {m[0]: len(await ops.history(user_id, m[0])) for m in memories}
    conflicts = sorted(
        (c.proposed.id, c.existing.id) for c in (await ops.list_conflicts(user_id)).conflicts
    )
    session = await ops.get_session(user_id, SESSION)
    return {
        "memories": memories,
        "history": history,
        "conflicts": conflicts,
        "session": (
            session.message_count,
            session.ended_at.seconds,
            session.summary,
            session.summary_memory_id,
            session.agent_scope,
        ),
    }


def _assert_nothing_of_bot_b(answer: object, victim: Victim) -> None:
    text = str(answer)
    for memory_id in (*victim.ids.values(), victim.conflict_id):
        assert memory_id not in text, f"bot-b's id {memory_id} leaked: {text[:500]}"
    for word in SECRETS:
        assert word not in text, f"bot-b's content {word!r} leaked: {text[:500]}"
    assert SESSION not in text


async def _refused(call: Awaitable[object], codes: set[grpc.StatusCode]) -> None:
    with pytest.raises(RecalldError) as caught:
        await call
    assert caught.value.code in codes, caught.value
    _assert_no_leak_in_message(caught.value)


def _assert_no_leak_in_message(error: RecalldError) -> None:
    for word in SECRETS:
        assert word not in str(error)


async def _reads(attacker: RecalldClient, user_id: str, victim: Victim) -> None:
    """Every read and report an attacker can aim at the victim."""
    for memory_id in (*victim.ids.values(), victim.conflict_id):
        await _refused(attacker.get(user_id, memory_id), NOT_FOUND)
        await _refused(attacker.history(user_id, memory_id), NOT_FOUND)
    listed = [m async for m in attacker.list_all(user_id, statuses=ALL_STATUSES)]
    _assert_nothing_of_bot_b(listed, victim)
    for query in ("vault code", "where does the user live", "allergy", "Lisbon trip"):
        recalled = await attacker.recall(user_id, query, agent_scope="bot-a", explain=True)
        _assert_nothing_of_bot_b(recalled, victim)
        shared = await attacker.recall(user_id, query, explain=True)
        _assert_nothing_of_bot_b(shared, victim)
        by_tag = await attacker.recall(user_id, query, tags=["vault"], explain=True)
        _assert_nothing_of_bot_b(by_tag, victim)
        await _refused(attacker.recall(user_id, query, agent_scope="bot-b"), DENIED)
        await _refused(attacker.recall(user_id, query, extra_agent_scopes=["bot-b"]), DENIED)
        by_session = await attacker.recall(user_id, query, session_id=SESSION, explain=True)
        _assert_nothing_of_bot_b(by_session, victim)
    _assert_nothing_of_bot_b(await attacker.get_profile(user_id), victim)
    _assert_nothing_of_bot_b(await attacker.get_profile(user_id, agent_scope="bot-a"), victim)
    await _refused(attacker.get_profile(user_id, agent_scope="bot-b"), DENIED)
    _assert_nothing_of_bot_b(await attacker.list_conflicts(user_id), victim)
    _assert_nothing_of_bot_b(await attacker.list_conflicts(""), victim)  # the whole tenant
    await _refused(attacker.get_session(user_id, SESSION), NOT_FOUND)
    sessions = [s async for s in attacker.list_all_sessions(user_id)]
    _assert_nothing_of_bot_b(sessions, victim)
    # A session the caller may not see is answered as one that does not exist yet.
    context = await attacker.get_context(user_id, SESSION, query="Lisbon")
    assert not context.messages and not context.summary
    _assert_nothing_of_bot_b(context, victim)
    await _refused(
        attacker.get_context(user_id, SESSION, query="Lisbon", agent_scope="bot-b"), DENIED
    )


async def _changes_refused_to_a_reader(reader: RecalldClient, user_id: str, v: Victim) -> None:
    await _refused(reader.write(user_id, [memory("x", agent_scope="bot-a")]), DENIED)
    await _refused(reader.write(user_id, [_b("The user lives in Rome")]), DENIED)
    for memory_id in v.ids.values():
        await _refused(
            reader.update(user_id, memory_pb2.Memory(id=memory_id, content="x"), ["content"]),
            DENIED,
        )
    await _refused(reader.forget(user_id, list(v.ids.values())), DENIED)
    await _refused(reader.forget(user_id, all_of_user=True), DENIED)
    await _refused(reader.restore(user_id, [v.ids["archived"]]), DENIED)
    await _refused(reader.confirm(user_id, [v.ids["draft"]]), DENIED)
    await _refused(
        reader.resolve_conflict(
            user_id, v.conflict_id, memory_service_pb2.CONFLICT_RESOLUTION_ACCEPT_NEW
        ),
        DENIED,
    )
    await _refused(reader.consolidate(user_id, purge_expired=True), DENIED)
    await _refused(reader.append_messages(user_id, SESSION, [("user", "hi")]), DENIED)
    await _refused(reader.end_session(user_id, SESSION), DENIED)


async def _changes_by_a_writer(writer: RecalldClient, user_id: str, v: Victim) -> None:
    """Every destructive path a bot-a writer can aim at bot-b's memories."""
    for memory_id in v.ids.values():
        for field, value in (("content", "owned"), ("agent_scope", "bot-a"), ("tags", ["x"])):
            changed = memory_pb2.Memory(id=memory_id)
            if field == "tags":
                changed.tags.extend(["x"])
            else:
                setattr(changed, field, value)
            await _refused(writer.update(user_id, changed, [field]), NOT_FOUND)
    for mode in (memory_service_pb2.FORGET_MODE_SOFT, memory_service_pb2.FORGET_MODE_HARD):
        for memory_id in v.ids.values():
            await _refused(writer.forget(user_id, [memory_id], mode=mode), NOT_FOUND)
        by_topic = await writer.forget(user_id, topic_key="home.city", mode=mode)
        assert by_topic == []
        by_tags = await writer.forget(
            user_id, selector=memory_service_pb2.MemorySelector(tags=["vault"]), mode=mode
        )
        assert by_tags == []
        by_type = await writer.forget(
            user_id,
            selector=memory_service_pb2.MemorySelector(types=[memory_pb2.MEMORY_TYPE_FACT]),
            mode=mode,
            dry_run=True,
        )
        _assert_nothing_of_bot_b(by_type, v)
        # Targets other than ids select among what the caller may see: nothing here.
        assert await writer.forget(user_id, session_id=SESSION, mode=mode) == []
        await _refused(writer.forget("", whole_tenant=True, mode=mode), DENIED)
    await _refused(writer.restore(user_id, [v.ids["archived"]]), NOT_FOUND)
    await _refused(writer.confirm(user_id, [v.ids["draft"]]), NOT_FOUND)
    # Mixed with ids of its own, the whole call is refused and nothing is applied.
    mine = await writer.write(
        user_id,
        [
            memory("bot-a thinks the user may like chess", confidence=0.3, agent_scope="bot-a"),
            memory("bot-a note to archive", agent_scope="bot-a"),
        ],
    )
    own_draft, own_note = (r.id for r in mine.results)
    await writer.forget(user_id, [own_note])
    await _refused(writer.confirm(user_id, [own_draft, v.ids["draft"]]), NOT_FOUND)
    await _refused(writer.restore(user_id, [own_note, v.ids["archived"]]), NOT_FOUND)
    await _refused(writer.forget(user_id, [own_draft, v.ids["vault"]]), NOT_FOUND)
    assert (await writer.get(user_id, own_draft)).status == memory_pb2.MEMORY_STATUS_DRAFT
    assert (await writer.get(user_id, own_note)).status == memory_pb2.MEMORY_STATUS_ARCHIVED
    hard = memory_service_pb2.FORGET_MODE_HARD
    assert set(await writer.forget(user_id, [own_draft, own_note], mode=hard)) == {
        own_draft,
        own_note,
    }
    for resolution in (
        memory_service_pb2.CONFLICT_RESOLUTION_ACCEPT_NEW,
        memory_service_pb2.CONFLICT_RESOLUTION_KEEP_EXISTING,
        memory_service_pb2.CONFLICT_RESOLUTION_KEEP_BOTH,
    ):
        await _refused(writer.resolve_conflict(user_id, v.conflict_id, resolution), NOT_FOUND)
    _assert_nothing_of_bot_b(await writer.consolidate(user_id, dry_run=True), v)
    _assert_nothing_of_bot_b(await writer.consolidate(user_id, purge_expired=True), v)
    await _refused(writer.consolidate(""), DENIED)  # the whole tenant needs an admin
    await _refused(writer.write(user_id, [_b("The user lives in Rome")]), DENIED)
    await _refused(writer.end_session(user_id, SESSION), NOT_FOUND)
    await _refused(
        writer.append_messages(user_id, SESSION, [("user", "hi")], agent_scope="bot-b"), DENIED
    )
    # Appending under its own scope to bot-b's session is refused, and adds nothing.
    await _refused(
        writer.append_messages(user_id, SESSION, [("user", "hi")], agent_scope="bot-a"),
        {grpc.StatusCode.FAILED_PRECONDITION},
    )
    await _refused(
        writer.append_messages(user_id, SESSION, [("user", "hi")]),
        {grpc.StatusCode.FAILED_PRECONDITION},
    )
    # bot-b's request id, for another Write: refused without a word of the first.
    await _refused(
        writer.write(user_id, [memory("hi", agent_scope="bot-a")], request_id="bot-b-seed"),
        {grpc.StatusCode.ABORTED},
    )
    # Writing bot-b's very words and topics under bot-a makes bot-a's own
    # memories: no duplicate of, conflict with or supersession of bot-b's.
    echo = await writer.write(
        user_id,
        [
            memory("The user lives in Bergen", topic_key="home.city", agent_scope="bot-a"),
            memory(
                "The user is no longer allergic to penicillin",
                topic_key="health.allergy",
                agent_scope="bot-a",
            ),
            memory("The vault combination is sapphire, changed", agent_scope="bot-a"),
        ],
        request_id="bot-a-echo",
    )
    for result in echo.results:
        assert result.outcome == memory_service_pb2.WRITE_OUTCOME_CREATED
        assert result.id not in v.ids.values() and not result.related_id
    await writer.forget(
        user_id, [r.id for r in echo.results], mode=memory_service_pb2.FORGET_MODE_HARD
    )


@pytest.mark.parametrize("attacker_key", ["writer", "reader"])
async def test_a_key_of_another_scope_can_neither_read_nor_change_the_victims_scope(
    parties: Parties, user_id: str, attacker_key: str
) -> None:
    victim = await _seed_victim(parties.victim, user_id)
    own = await parties.writer.write(
        user_id, [memory("bot-a knows the user likes tea", agent_scope="bot-a")]
    )
    before = await _snapshot(parties.ops, user_id)
    attacker = parties.writer if attacker_key == "writer" else parties.reader

    await _reads(attacker, user_id, victim)
    if attacker_key == "writer":
        await _changes_by_a_writer(attacker, user_id, victim)
    else:
        await _changes_refused_to_a_reader(attacker, user_id, victim)
    await _reads(attacker, user_id, victim)  # nothing came loose on the way

    assert await _snapshot(parties.ops, user_id) == before
    # The attacker still sees its own scope: the refusals were about bot-b only.
    assert (await attacker.get(user_id, own.results[0].id)).content.startswith("bot-a")
    # And the victim's own view is whole.
    mine = [m.id async for m in parties.victim.list_all(user_id, statuses=ALL_STATUSES)]
    assert set(victim.ids.values()) <= set(mine)


async def test_a_replayed_request_id_does_not_show_a_memory_moved_to_another_scope(
    parties: Parties, user_id: str
) -> None:
    shared = memory("The user's locker combination is sapphire")
    written = await parties.writer.write(user_id, [shared], request_id="locker")
    [result] = written.results
    # An operator hands the memory to bot-b and rewrites it.
    await parties.ops.update(
        user_id,
        memory_pb2.Memory(
            id=result.id, content="bot-b: the locker moved to Oslo", agent_scope="bot-b"
        ),
        ["content", "agent_scope"],
    )
    # bot-a retries the same write: the replay names the id it wrote, not bot-b's content.
    replay = await parties.writer.write(user_id, [shared], request_id="locker")
    [again] = replay.results
    assert again.id == result.id and again.outcome == result.outcome
    assert "Oslo" not in str(replay) and "sapphire" not in str(replay)
    await _refused(parties.writer.get(user_id, result.id), NOT_FOUND)
    # The operator, who may read bot-b, still gets the memory as it is now.
    seen = await parties.ops.write(user_id, [shared], request_id="locker")
    assert seen.results[0].id == result.id
