"""Sessions end to end over real gRPC: windows, summaries, extraction, ending, forgetting.

Run on the embedded default (sessions in SQLite beside Milvus Lite) and on the
in-memory backend; Redis-held sessions are in test_sessions_redis.py. The
requests go through the generated stubs, so every field is exercised as a
client in any language would send it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from recalld.v1 import (
    memory_pb2,
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)
from recalld_server.wiring.server import RunningServer

pb = session_service_pb2
USER, ASSISTANT = pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT


class Caller:
    """One tenant's stubs of both services on one channel."""

    def __init__(self, channel: grpc.aio.Channel, tenant: str) -> None:
        self.sessions = session_service_pb2_grpc.SessionServiceStub(channel)
        self.memories = memory_service_pb2_grpc.MemoryServiceStub(channel)
        self.metadata = (("x-recalld-tenant", tenant),)

    async def append(
        self,
        user: str,
        session: str,
        said: Sequence[tuple[int, str]],
        **fields: object,
    ) -> pb.AppendMessagesResponse:
        request = pb.AppendMessagesRequest(
            user_id=user,
            session_id=session,
            messages=[pb.Message(role=role, content=text) for role, text in said],  # type: ignore[arg-type]
            **fields,  # type: ignore[arg-type]
        )
        response: pb.AppendMessagesResponse = await self.sessions.AppendMessages(
            request, metadata=self.metadata, timeout=30
        )
        return response

    async def context(self, user: str, session: str, **fields: object) -> pb.GetContextResponse:
        request = pb.GetContextRequest(user_id=user, session_id=session, **fields)  # type: ignore[arg-type]
        response: pb.GetContextResponse = await self.sessions.GetContext(
            request, metadata=self.metadata, timeout=30
        )
        return response

    async def get(self, user: str, session: str) -> pb.Session:
        response = await self.sessions.GetSession(
            pb.GetSessionRequest(user_id=user, session_id=session),
            metadata=self.metadata,
            timeout=10,
        )
        return response.session

    async def end(self, user: str, session: str) -> pb.EndSessionResponse:
        response: pb.EndSessionResponse = await self.sessions.EndSession(
            pb.EndSessionRequest(user_id=user, session_id=session),
            metadata=self.metadata,
            timeout=30,
        )
        return response

    async def recall(self, user: str, query: str) -> memory_service_pb2.RecallResponse:
        response: memory_service_pb2.RecallResponse = await self.memories.Recall(
            memory_service_pb2.RecallRequest(user_id=user, query=query, top_k=3),
            metadata=self.metadata,
            timeout=30,
        )
        return response

    async def forget(self, user: str, **target: object) -> memory_service_pb2.ForgetResponse:
        response: memory_service_pb2.ForgetResponse = await self.memories.Forget(
            memory_service_pb2.ForgetRequest(user_id=user, **target),  # type: ignore[arg-type]
            metadata=self.metadata,
            timeout=30,
        )
        return response


@pytest.fixture(params=["milvus_lite", "in_memory"])
def server(request: pytest.FixtureRequest) -> RunningServer:
    """The embedded default (SQLite sessions) and the in-memory backend."""
    running: RunningServer = request.getfixturevalue(
        {"milvus_lite": "server", "in_memory": "memory_server"}[request.param]
    )
    return running


@pytest.fixture
async def channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as open_channel:
        yield open_channel


@pytest.fixture
def caller(channel: grpc.aio.Channel, tenant: str) -> Caller:
    return Caller(channel, tenant)


@pytest.fixture
def session_id() -> str:
    return f"chat-{uuid.uuid4().hex[:10]}"


def _error(
    caught: pytest.ExceptionInfo[grpc.aio.AioRpcError],
) -> tuple[grpc.StatusCode, str, list[str]]:
    """The status code, the ErrorInfo reason and the BadRequest fields of a failed call."""
    error = caught.value
    reason, fields = "", []
    trailers: Any = error.trailing_metadata() or ()
    for key, value in trailers:
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(bytes(value))
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    fields = [v.field for v in bad.field_violations]
    return error.code(), reason, fields


async def test_append_creates_the_session_and_numbers_messages(
    caller: Caller, user_id: str, session_id: str
) -> None:
    first = await caller.append(user_id, session_id, [(USER, "Hi, I'm planning a trip")])
    second = await caller.append(
        user_id,
        session_id,
        [(ASSISTANT, "Where to?"), (USER, "Kyoto, in April, for 5 days")],
    )
    assert [m.id for m in first.messages] == ["1"]
    assert [m.id for m in second.messages] == ["2", "3"]
    assert all(m.token_count > 0 for m in second.messages)
    session = await caller.get(user_id, session_id)
    assert session.message_count == 3
    assert session.window_message_count == 3
    assert session.token_count == sum(m.token_count for m in [*first.messages, *second.messages])
    assert session.user_id == user_id and session.session_id == session_id
    assert not session.HasField("ended_at")
    assert session.extraction.state == pb.EXTRACTION_STATE_IDLE


async def test_context_window_fits_the_budget_newest_kept_oldest_first(
    caller: Caller, user_id: str, session_id: str
) -> None:
    said = [
        (USER if i % 2 == 0 else ASSISTANT, f"Message number {i} about the Kyoto trip")
        for i in range(8)
    ]
    await caller.append(user_id, session_id, said)
    roomy = await caller.context(user_id, session_id, token_budget=2000, skip_memories=True)
    assert [m.content for m in roomy.messages] == [text for _, text in said]
    assert roomy.token_estimate <= 2000
    assert roomy.omitted_message_count == 0 and roomy.summary == ""
    assert "<recent_messages>" in roomy.context and "<conversation_summary>" not in roomy.context
    assert roomy.token_account.messages == roomy.token_estimate  # nothing else to hold

    tight = await caller.context(user_id, session_id, token_budget=80, skip_memories=True)
    assert 0 < len(tight.messages) < len(said)
    assert tight.messages[-1].content == said[-1][1]  # the newest is kept
    assert [m.content for m in tight.messages] == [t for _, t in said[-len(tight.messages) :]]
    assert tight.token_estimate <= 80
    assert tight.omitted_message_count == len(said) - len(tight.messages)
    account = tight.token_account
    assert (
        account.messages + account.summary + account.memories + account.profile
        == tight.token_estimate
    )
    # A read never rewrites the session: the window is whole afterwards.
    session = await caller.get(user_id, session_id)
    assert session.window_message_count == len(said) and session.summary == ""


async def test_context_recalls_long_term_memories_for_the_last_user_message(
    caller: Caller, user_id: str, session_id: str
) -> None:
    await caller.memories.Write(
        memory_service_pb2.WriteRequest(
            user_id=user_id,
            memories=[
                memory_pb2.Memory(
                    content="The user is allergic to peanuts", type=memory_pb2.MEMORY_TYPE_FACT
                ),
                memory_pb2.Memory(
                    content="The user's cat is called Miso", type=memory_pb2.MEMORY_TYPE_FACT
                ),
            ],
        ),
        metadata=caller.metadata,
    )
    await caller.append(
        user_id, session_id, [(USER, "Can you suggest a snack? Any allergies I have?")]
    )
    context = await caller.context(user_id, session_id, token_budget=1000)
    assert context.memories[0].memory.content == "The user is allergic to peanuts"
    assert "<relevant_memories>" in context.context and "peanuts" in context.context
    assert context.token_account.memories > 0
    asked = await caller.context(
        user_id, session_id, query="what is my pet's name", token_budget=1000
    )
    assert asked.memories[0].memory.content == "The user's cat is called Miso"
    skipped = await caller.context(
        user_id, session_id, token_budget=1000, skip_memories=True, skip_profile=True
    )
    assert len(skipped.memories) == 0 and "<relevant_memories>" not in skipped.context


async def test_a_session_that_does_not_exist_has_an_empty_window(
    caller: Caller, user_id: str
) -> None:
    context = await caller.context(user_id, "never-started", token_budget=500)
    assert len(context.messages) == 0 and not context.HasField("session")
    assert context.token_estimate == 0 and context.context == ""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.get(user_id, "never-started")
    assert _error(caught)[:2] == (grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND")


async def test_extraction_writes_a_preference_that_recall_then_finds(
    caller: Caller, user_id: str, session_id: str
) -> None:
    response = await caller.append(
        user_id,
        session_id,
        [
            (USER, "From now on I prefer green tea over coffee."),
            (ASSISTANT, "Noted, green tea it is."),
        ],
        extract=True,
    )
    outcomes = [memory_service_pb2.WriteOutcome.Name(r.outcome) for r in response.extracted]
    assert outcomes == ["WRITE_OUTCOME_CREATED"]
    written = response.extracted[0].memory
    assert written.type == memory_pb2.MEMORY_TYPE_PREFERENCE
    assert written.session_id == session_id and "green tea" in written.content
    assert response.session.extraction.state == pb.EXTRACTION_STATE_DONE
    assert [r.id for r in response.session.extraction.last_results] == [written.id]
    recalled = await caller.recall(user_id, "What does the user like to drink?")
    assert recalled.items[0].memory.id == written.id


async def test_hedged_statements_become_drafts(
    caller: Caller, user_id: str, session_id: str
) -> None:
    response = await caller.append(
        user_id, session_id, [(USER, "我可能下个月搬到上海住")], extract=True
    )
    statuses = {r.memory.status for r in response.extracted}
    assert statuses <= {memory_pb2.MEMORY_STATUS_DRAFT}
    assert all(r.outcome == memory_service_pb2.WRITE_OUTCOME_DRAFT for r in response.extracted)


async def test_async_extraction_is_reported_by_the_session(
    caller: Caller, user_id: str, session_id: str
) -> None:
    response = await caller.append(
        user_id,
        session_id,
        [(USER, "我对花生过敏。以后都用中文回复我。")],
        extract=True,
        extract_async=True,
    )
    assert len(response.extracted) == 0
    assert response.session.extraction.requested_through == 1
    for _ in range(100):
        session = await caller.get(user_id, session_id)
        if session.extraction.state == pb.EXTRACTION_STATE_DONE:
            break
        await asyncio.sleep(0.1)
    assert session.extraction.state == pb.EXTRACTION_STATE_DONE
    assert session.extraction.extracted_through == 1
    contents = [r.memory.content for r in session.extraction.last_results]
    assert any("花生" in c for c in contents), contents
    assert all(r.memory.session_id == session_id for r in session.extraction.last_results)


async def test_a_retried_append_is_stored_once_and_a_reused_id_is_refused(
    caller: Caller, user_id: str, session_id: str
) -> None:
    said = [(USER, "Book the 9:40 train to Osaka")]
    first = await caller.append(user_id, session_id, said, request_id="turn-1")
    again = await caller.append(user_id, session_id, said, request_id="turn-1")
    assert [m.id for m in again.messages] == [m.id for m in first.messages] == ["1"]
    assert again.session.message_count == 1
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.append(user_id, session_id, [(USER, "something else")], request_id="turn-1")
    assert _error(caught)[:2] == (grpc.StatusCode.ABORTED, "REQUEST_ID_REUSED")
    assert (await caller.get(user_id, session_id)).message_count == 1


async def test_end_session_keeps_the_summary_as_a_memory_and_closes_it(
    caller: Caller, user_id: str, session_id: str
) -> None:
    await caller.append(
        user_id,
        session_id,
        [
            (USER, "Order SO-88231 arrived damaged, I need a replacement by Friday."),
            (ASSISTANT, "I have filed replacement request RMA-5521 for order SO-88231."),
        ],
    )
    ended = await caller.end(user_id, session_id)
    summary = ended.summary_memory
    assert summary.type == memory_pb2.MEMORY_TYPE_SUMMARY
    assert summary.session_id == session_id and "SO-88231" in summary.content
    assert ended.session.summary_memory_id == summary.id
    assert ended.session.HasField("ended_at") and ended.session.window_message_count == 0
    again = await caller.end(user_id, session_id)
    assert again.summary_memory.id == summary.id
    assert again.session.ended_at == ended.session.ended_at
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.append(user_id, session_id, [(USER, "one more thing")])
    assert _error(caught)[:2] == (grpc.StatusCode.FAILED_PRECONDITION, "INVALID_STATE")
    found = await caller.recall(user_id, "What happened with order SO-88231?")
    assert summary.id in [item.memory.id for item in found.items]


async def test_list_sessions_pages_newest_first(caller: Caller, user_id: str) -> None:
    names = [f"s-{i:02d}" for i in range(7)]
    for name in names:
        await caller.append(user_id, name, [(USER, f"hello from {name}")])
    seen: list[str] = []
    token = ""
    while True:
        page = await caller.sessions.ListSessions(
            pb.ListSessionsRequest(user_id=user_id, page_size=3, page_token=token),
            metadata=caller.metadata,
        )
        seen.extend(s.session_id for s in page.sessions)
        token = page.next_page_token
        if not token:
            break
    assert seen == list(reversed(names))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.sessions.ListSessions(
            pb.ListSessionsRequest(
                user_id=f"{user_id}-other", page_token=page.next_page_token or "eyJjIjoxfQ"
            ),
            metadata=caller.metadata,
        )
    assert _error(caught)[0] == grpc.StatusCode.INVALID_ARGUMENT


async def test_bad_requests_name_every_field(caller: Caller) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.sessions.AppendMessages(
            pb.AppendMessagesRequest(
                messages=[pb.Message(content=""), pb.Message(role=99, content="x" * 40_000)]  # type: ignore[arg-type]
            ),
            metadata=caller.metadata,
        )
    code, reason, fields = _error(caught)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    assert {"user_id", "session_id", "messages[1].role"} <= set(fields)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.append("u", "s", [])
    assert "messages" in _error(caught)[2]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.context("u", "s", token_budget=-1, memory_top_k=1000)
    assert set(_error(caught)[2]) == {"token_budget", "memory_top_k"}


async def test_other_tenants_and_users_cannot_reach_a_session(
    channel: grpc.aio.Channel, user_id: str, session_id: str
) -> None:
    victim = Caller(channel, "victim-corp")
    attacker = Caller(channel, "attacker-corp")
    # Not a secret, so that it is stored as written and its absence below means isolation,
    # not masking.
    await victim.append(
        user_id, session_id, [(USER, "My gym locker is the teal one by the sauna")], extract=True
    )
    for who, as_user in ((attacker, user_id), (victim, f"{user_id}-evil")):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await who.get(as_user, session_id)
        assert _error(caught)[:2] == (grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await who.end(as_user, session_id)
        assert _error(caught)[0] == grpc.StatusCode.NOT_FOUND
        context = await who.context(as_user, session_id, query="gym locker", token_budget=500)
        assert "teal" not in context.context and len(context.messages) == 0
        await who.forget(as_user, session_id=session_id, mode=memory_service_pb2.FORGET_MODE_HARD)
        # Appending under the same names makes the attacker's own session, not the victim's.
        mine = await who.append(as_user, session_id, [(USER, "hello")])
        assert mine.session.message_count == 1
    victims = await victim.get(user_id, session_id)
    assert victims.message_count == 1 and victims.window_message_count == 1


async def test_forgetting_a_session_or_a_user_deletes_the_conversation(
    caller: Caller, user_id: str
) -> None:
    said = {"keep": "I prefer window seats on trains.", "drop": "I live in Hangzhou."}
    for name, text in said.items():
        appended = await caller.append(user_id, name, [(USER, text)], extract=True)
        assert [r.outcome for r in appended.extracted] == [memory_service_pb2.WRITE_OUTCOME_CREATED]
    forgotten = await caller.forget(
        user_id, session_id="drop", mode=memory_service_pb2.FORGET_MODE_HARD
    )
    assert len(forgotten.forgotten_ids) == 1
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.get(user_id, "drop")
    assert _error(caught)[0] == grpc.StatusCode.NOT_FOUND
    assert (await caller.get(user_id, "keep")).message_count == 1

    await caller.forget(user_id, all_of_user=True, mode=memory_service_pb2.FORGET_MODE_HARD)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await caller.get(user_id, "keep")
    assert _error(caught)[0] == grpc.StatusCode.NOT_FOUND
    context = await caller.context(user_id, "keep", query="window seats", token_budget=500)
    assert len(context.messages) == 0 and len(context.memories) == 0
    page = await caller.sessions.ListSessions(
        pb.ListSessionsRequest(user_id=user_id), metadata=caller.metadata
    )
    assert len(page.sessions) == 0
