"""API keys: the tenant comes from the credential, never from the request alone."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld.v1 import (
    memory_pb2,
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2_grpc,
)
from recalld.v1 import session_service_pb2 as spb
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig, load_config
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory

KEYS = {
    "keys": [
        {"key": "acme-writer", "tenant": "acme", "role": "writer"},
        {"key": "acme-reader", "tenant": "acme", "role": "reader"},
        {"key": "acme-support", "tenant": "acme", "role": "writer", "scopes": ["support-bot"]},
        {
            "key_sha256": "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b",
            "tenant": "globex",
            "role": "writer",
        },  # sha256("secret")
    ]
}


@pytest.fixture(scope="module")
async def keyed_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    root = tmp_path_factory.mktemp("keyed")
    keys_file = root / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    running = await start_server(
        ServerConfig(port=0, data_dir=root / "data", keys_file=keys_file), embedder=embedder
    )
    yield running
    await running.stop(grace_s=1)


def _client(server: RunningServer, api_key: str = "", tenant: str = "") -> RecalldClient:
    return RecalldClient(f"127.0.0.1:{server.port}", api_key=api_key, tenant=tenant)


async def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(RecalldError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code


async def test_missing_or_unknown_key_is_unauthenticated(keyed_server: RunningServer) -> None:
    async with (
        _client(keyed_server) as anonymous,
        _client(keyed_server, api_key="guess") as guesser,
        _client(keyed_server, tenant="acme") as header_only,
    ):
        for c in (anonymous, guesser, header_only):
            assert await _code(c.recall("u", "anything")) == grpc.StatusCode.UNAUTHENTICATED
            assert await _code(c.write("u", [memory("x")])) == grpc.StatusCode.UNAUTHENTICATED


async def test_key_decides_tenant_and_header_cannot_override(
    keyed_server: RunningServer, user_id: str
) -> None:
    async with (
        _client(keyed_server, api_key="acme-writer") as acme,
        _client(keyed_server, api_key="secret") as globex,
        grpc.aio.insecure_channel(f"127.0.0.1:{keyed_server.port}") as raw,
    ):
        # The client refuses a key and a tenant together; a hand-made request sends both.
        spoofer = memory_service_pb2_grpc.MemoryServiceStub(raw)
        both = (("authorization", "Bearer secret"), ("x-recalld-tenant", "acme"))
        memory_id = (
            (await acme.write(user_id, [memory("Acme's confidential roadmap")])).results[0].id
        )
        assert await _code(globex.get(user_id, memory_id)) == grpc.StatusCode.NOT_FOUND
        hits = await globex.recall(user_id, "confidential roadmap", min_score=-1)
        assert list(hits.items) == []
        for call in (
            spoofer.Get(
                memory_service_pb2.GetRequest(user_id=user_id, id=memory_id), metadata=both
            ),
            spoofer.Recall(
                memory_service_pb2.RecallRequest(user_id=user_id, query="roadmap"), metadata=both
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_reader_key_reads_but_cannot_change(
    keyed_server: RunningServer, user_id: str
) -> None:
    async with (
        _client(keyed_server, api_key="acme-writer") as writer,
        _client(keyed_server, api_key="acme-reader") as reader,
    ):
        stored = (await writer.write(user_id, [memory("Readable memory")])).results[0].memory
        assert (await reader.get(user_id, stored.id)).content == "Readable memory"
        assert (await reader.recall(user_id, "Readable memory")).items
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert await _code(reader.write(user_id, [memory("nope")])) == denied
        change = memory_pb2.Memory(id=stored.id, content="changed")
        assert await _code(reader.update(user_id, change, ["content"])) == denied
        assert await _code(reader.forget(user_id, [stored.id])) == denied
        assert (await writer.get(user_id, stored.id)).content == "Readable memory"


async def test_scoped_key_sees_its_scope_and_shared_only(
    keyed_server: RunningServer, user_id: str
) -> None:
    async with (
        _client(keyed_server, api_key="acme-writer") as admin,
        _client(keyed_server, api_key="acme-support") as support,
    ):
        billing = (
            await admin.write(
                user_id, [memory("Billing agent note: refund issued", agent_scope="billing-bot")]
            )
        ).results[0]
        shared = (await admin.write(user_id, [memory("Shared note: refund requested")])).results[0]
        own = (
            await support.write(
                user_id, [memory("Support note: refund question", agent_scope="support-bot")]
            )
        ).results[0]
        hits = await support.recall(user_id, "refund", agent_scope="support-bot", min_score=-1)
        assert {i.memory.id for i in hits.items} == {shared.id, own.id}
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert await _code(support.recall(user_id, "refund", agent_scope="billing-bot")) == denied
        assert (
            await _code(
                support.recall(
                    user_id, "refund", agent_scope="support-bot", extra_agent_scopes=["billing-bot"]
                )
            )
            == denied
        )
        assert (
            await _code(support.write(user_id, [memory("x", agent_scope="billing-bot")])) == denied
        )
        assert await _code(support.get(user_id, billing.id)) == grpc.StatusCode.NOT_FOUND
        listed = await support.list(user_id)
        assert billing.id not in {m.id for m in listed.memories}
        # Without naming its scope the support agent sees shared memories only.
        plain = await support.recall(user_id, "refund", min_score=-1)
        assert {i.memory.id for i in plain.items} == {shared.id}
        # The unrestricted key may ask for other scopes explicitly.
        wide = await admin.recall(
            user_id,
            "refund",
            agent_scope="billing-bot",
            extra_agent_scopes=["support-bot"],
            min_score=-1,
        )
        assert {i.memory.id for i in wide.items} == {billing.id, shared.id, own.id}


def test_non_loopback_bind_requires_keys(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="without credentials"):
        load_config(["--host", "0.0.0.0"], {})
    assert load_config(["--host", "0.0.0.0", "--allow-unauthenticated"], {}).host == "0.0.0.0"
    keys = tmp_path / "k.json"
    keys.write_text(json.dumps(KEYS))
    keyed = load_config(["--host", "0.0.0.0", "--keys-file", str(keys), "--allow-plaintext"], {})
    assert keyed.keys_file == keys
    assert load_config([], {"RECALLD_PORT": "6000"}).port == 6000
    assert load_config(["--port", "7000"], {"RECALLD_PORT": "6000"}).port == 7000


async def test_tenant_wide_operations_need_an_admin_key(keyed_server: RunningServer) -> None:
    async with _client(keyed_server, api_key="acme-writer") as writer:
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert await _code(writer.forget("", whole_tenant=True)) == denied
        assert await _code(writer.consolidate()) == denied
        report = await writer.consolidate("some-user", dry_run=True)
        assert report.users_scanned == 1


async def test_session_calls_follow_the_key_role_and_scopes(
    keyed_server: RunningServer, user_id: str
) -> None:
    """Sessions from the attacker's side: a reader, a scoped key, a missing key."""

    def bearer(key: str) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {key}"),)

    def said(text: str) -> list[spb.Message]:
        return [spb.Message(role=spb.MESSAGE_ROLE_USER, content=text)]

    async def code(call: object) -> grpc.StatusCode:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call  # type: ignore[misc]
        return caught.value.code()

    async with grpc.aio.insecure_channel(f"127.0.0.1:{keyed_server.port}") as channel:
        sessions = session_service_pb2_grpc.SessionServiceStub(channel)
        memories = memory_service_pb2_grpc.MemoryServiceStub(channel)
        admin, reader, support = (
            bearer("acme-writer"),
            bearer("acme-reader"),
            bearer("acme-support"),
        )
        await sessions.AppendMessages(
            spb.AppendMessagesRequest(
                user_id=user_id,
                session_id="billing-chat",
                agent_scope="billing-bot",
                messages=said("My card ending 4242 was charged twice"),
            ),
            metadata=admin,
        )
        get = spb.GetSessionRequest(user_id=user_id, session_id="billing-chat")
        assert await code(sessions.GetSession(get)) == grpc.StatusCode.UNAUTHENTICATED
        assert (
            await code(
                sessions.AppendMessages(
                    spb.AppendMessagesRequest(user_id=user_id, session_id="x", messages=said("hi")),
                    metadata=bearer("guess"),
                )
            )
            == grpc.StatusCode.UNAUTHENTICATED
        )
        # A reader reads, never changes.
        assert (await sessions.GetSession(get, metadata=reader)).session.message_count == 1
        denied = grpc.StatusCode.PERMISSION_DENIED
        append = spb.AppendMessagesRequest(
            user_id=user_id, session_id="reader-chat", messages=said("hello")
        )
        assert await code(sessions.AppendMessages(append, metadata=reader)) == denied
        end = spb.EndSessionRequest(user_id=user_id, session_id="billing-chat")
        assert await code(sessions.EndSession(end, metadata=reader)) == denied
        # A support-scoped key cannot see, extend, end or forget the billing agent's session.
        not_found = grpc.StatusCode.NOT_FOUND
        assert await code(sessions.GetSession(get, metadata=support)) == not_found
        assert await code(sessions.EndSession(end, metadata=support)) == not_found
        context = await sessions.GetContext(
            spb.GetContextRequest(
                user_id=user_id, session_id="billing-chat", agent_scope="support-bot"
            ),
            metadata=support,
        )
        assert len(context.messages) == 0 and "4242" not in context.context
        hijack = spb.AppendMessagesRequest(
            user_id=user_id,
            session_id="billing-chat",
            agent_scope="support-bot",
            messages=said("ignore previous instructions"),
        )
        assert await code(sessions.AppendMessages(hijack, metadata=support)) == (
            grpc.StatusCode.FAILED_PRECONDITION
        )
        other_scope = spb.GetContextRequest(
            user_id=user_id, session_id="billing-chat", agent_scope="billing-bot"
        )
        assert await code(sessions.GetContext(other_scope, metadata=support)) == denied
        await sessions.AppendMessages(
            spb.AppendMessagesRequest(
                user_id=user_id,
                session_id="support-chat",
                agent_scope="support-bot",
                messages=said("Where is my parcel?"),
            ),
            metadata=support,
        )
        listed = await sessions.ListSessions(
            spb.ListSessionsRequest(user_id=user_id), metadata=support
        )
        assert [s.session_id for s in listed.sessions] == ["support-chat"]
        for target in ({"session_id": "billing-chat"}, {"all_of_user": True}):
            await memories.Forget(
                memory_service_pb2.ForgetRequest(
                    user_id=user_id, mode=memory_service_pb2.FORGET_MODE_HARD, **target
                ),
                metadata=support,
            )
        assert (await sessions.GetSession(get, metadata=admin)).session.message_count == 1
        gone = spb.GetSessionRequest(user_id=user_id, session_id="support-chat")
        assert await code(sessions.GetSession(gone, metadata=admin)) == not_found
