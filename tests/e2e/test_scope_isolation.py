"""Agent scopes inside one tenant, attacked by a key limited to another scope.

Every read and every destructive path must apply the caller's scopes: a key for
`bot-a` may neither see nor change `bot-b`'s memories, their history or their
request records, whatever RPC it goes through.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory

KEYS = {
    "keys": [
        {"key": "ops", "tenant": "acme", "role": "writer"},
        {"key": "bot-a", "tenant": "acme", "role": "writer", "scopes": ["bot-a"]},
        {"key": "bot-b", "tenant": "acme", "role": "writer", "scopes": ["bot-b"]},
    ]
}
PAST_S = 1_000_000_000  # 2001: already expired


@pytest.fixture(scope="module")
async def scoped_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    root = tmp_path_factory.mktemp("scopes")
    keys_file = root / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    running = await start_server(
        ServerConfig(port=0, data_dir=root / "data", keys_file=keys_file), embedder=embedder
    )
    yield running
    await running.stop(grace_s=1)


@pytest.fixture
async def clients(
    scoped_server: RunningServer,
) -> AsyncIterator[tuple[RecalldClient, RecalldClient, RecalldClient]]:
    address = f"127.0.0.1:{scoped_server.port}"
    async with (
        RecalldClient(address, api_key="ops") as ops,
        RecalldClient(address, api_key="bot-a") as attacker,
        RecalldClient(address, api_key="bot-b") as victim,
    ):
        yield ops, attacker, victim


def _expired(content: str, scope: str) -> memory_pb2.Memory:
    m = memory(content, memory_pb2.MEMORY_TYPE_STATE, agent_scope=scope)
    m.expire_at.FromSeconds(PAST_S)
    return m


async def _victim_memories(victim: RecalldClient, user_id: str) -> dict[str, str]:
    """bot-b's memories of every kind consolidation looks at, by name -> id."""
    written = await victim.write(
        user_id,
        [
            _expired("bot-b parking spot C3 this week only", "bot-b"),
            memory(
                "The user is allergic to peanuts",
                tier=memory_pb2.MEMORY_TIER_P0,
                agent_scope="bot-b",
            ),
            memory("The user eats a peanut butter sandwich every day", agent_scope="bot-b"),
            memory("The user has a daughter named Lily", agent_scope="bot-b"),
        ],
        request_id="bot-b-first-write",
    )
    twin = await victim.write(
        user_id, [memory("The user likes jazz", agent_scope="bot-b")], request_id="bot-b-second"
    )
    await victim.update(
        user_id,
        memory_pb2.Memory(id=twin.results[0].id, content="The user's daughter is called Lily"),
        ["content"],
    )
    names = ("expired", "core", "other", "first", "twin")
    ids = [r.id for r in written.results] + [twin.results[0].id]
    return dict(zip(names, ids, strict=True))


async def test_consolidate_by_a_scoped_key_neither_reports_nor_changes_other_scopes(
    clients: tuple[RecalldClient, RecalldClient, RecalldClient], user_id: str
) -> None:
    ops, attacker, victim = clients
    theirs = await _victim_memories(victim, user_id)
    own = (await attacker.write(user_id, [_expired("bot-a note, expired", "bot-a")])).results[0]

    dry = await attacker.consolidate(user_id, dry_run=True)
    reported = {
        *dry.expired_ids,
        *dry.demoted_ids,
        *(i for m in dry.merged for i in (m.kept_id, m.merged_id)),
        *(i for c in dry.contradictions for i in (c.core_id, c.other_id)),
    }
    assert reported == {own.id}
    assert dry.access_stats_flushed == 0

    purged = await attacker.consolidate(user_id, purge_expired=True)
    assert list(purged.expired_ids) == [own.id] and list(purged.merged) == []
    for memory_id in theirs.values():
        kept = await ops.get(user_id, memory_id)
        assert kept.status == memory_pb2.MEMORY_STATUS_ACTIVE
        assert kept.agent_scope == "bot-b"
    # The victim's own run still finds its work untouched.
    mine = await victim.consolidate(user_id, dry_run=True)
    assert list(mine.expired_ids) == [theirs["expired"]]
    assert [(m.kept_id, m.merged_id) for m in mine.merged] == [(theirs["first"], theirs["twin"])]
    assert [(c.core_id, c.other_id, c.reason) for c in mine.contradictions] == [
        (theirs["core"], theirs["other"], "allergy to nut")
    ]


async def test_hard_forget_of_a_user_by_a_scoped_key_keeps_other_scopes_audit_trail(
    clients: tuple[RecalldClient, RecalldClient, RecalldClient], user_id: str
) -> None:
    ops, attacker, victim = clients
    theirs = await _victim_memories(victim, user_id)
    own = (await attacker.write(user_id, [memory("bot-a note", agent_scope="bot-a")])).results[0]
    shared = (await ops.write(user_id, [memory("A shared note")])).results[0]

    forgotten = await attacker.forget(
        user_id, mode=memory_service_pb2.FORGET_MODE_HARD, all_of_user=True
    )
    assert set(forgotten) == {own.id, shared.id}
    for memory_id in theirs.values():
        assert (await ops.get(user_id, memory_id)).agent_scope == "bot-b"
        assert await victim.history(user_id, memory_id)
    twin_history = await victim.history(user_id, theirs["twin"])
    assert [v.operation for v in twin_history] == [
        memory_service_pb2.MEMORY_OPERATION_WRITE,
        memory_service_pb2.MEMORY_OPERATION_UPDATE,
    ]
    # A retry of the victim's write is still answered from its request record.
    replay = await victim.write(
        user_id, [memory("The user likes jazz", agent_scope="bot-b")], request_id="bot-b-second"
    )
    assert replay.results[0].id == theirs["twin"]
    with pytest.raises(RecalldError) as caught:
        await ops.get(user_id, own.id)
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


async def test_conflicts_do_not_show_a_memory_moved_to_another_scope(
    clients: tuple[RecalldClient, RecalldClient, RecalldClient], user_id: str
) -> None:
    ops, attacker, _ = clients
    core = (
        await attacker.write(
            user_id,
            [
                memory(
                    "The user is allergic to penicillin",
                    tier=memory_pb2.MEMORY_TIER_P0,
                    topic_key="health.allergy",
                    agent_scope="bot-a",
                )
            ],
        )
    ).results[0]
    parked = await attacker.write(
        user_id,
        [
            memory(
                "The user is no longer allergic to anything",
                topic_key="health.allergy",
                agent_scope="bot-a",
            )
        ],
    )
    assert parked.results[0].outcome == memory_service_pb2.WRITE_OUTCOME_CONFLICT
    listed = await attacker.list_conflicts(user_id)
    assert [c.existing.id for c in listed.conflicts] == [core.id]

    # The core memory moves to bot-b (an unscoped operator may do that)...
    await ops.update(user_id, memory_pb2.Memory(id=core.id, agent_scope="bot-b"), ["agent_scope"])
    listed = await attacker.list_conflicts(user_id)
    [conflict] = listed.conflicts
    assert conflict.proposed.id == parked.results[0].id
    assert not conflict.HasField("existing")  # ...and bot-a no longer sees its content
    assert "penicillin" not in str(listed)


async def test_history_hides_versions_from_scopes_the_caller_may_not_read(
    clients: tuple[RecalldClient, RecalldClient, RecalldClient], user_id: str
) -> None:
    ops, attacker, victim = clients
    secret = (
        await victim.write(
            user_id, [memory("bot-b private: the user's PIN is 4417", agent_scope="bot-b")]
        )
    ).results[0]
    # An operator rewrites it and hands it to bot-a.
    await ops.update(
        user_id,
        memory_pb2.Memory(id=secret.id, content="The user has a bank card", agent_scope="bot-a"),
        ["content", "agent_scope"],
    )
    versions = await attacker.history(user_id, secret.id)
    assert versions and all(v.memory.agent_scope == "bot-a" for v in versions)
    assert "4417" not in str(versions)
    assert len(await ops.history(user_id, secret.id)) == 2
