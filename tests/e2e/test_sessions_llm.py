"""Sessions with summaries and extraction by a language model, over real HTTP.

The model is a real HTTP server on loopback that speaks the OpenAI
chat-completions protocol (tests/services.py OpenAICompatibleServer); what it
answers is scripted per test, which is the one thing a test cannot get from a
real model.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld.v1 import session_service_pb2 as pb
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.test_sessions import ASSISTANT, USER, Caller
from tests.services import OpenAICompatibleServer

KEY = "sk-test-recalld"


def _answer(request: dict[str, Any]) -> str:
    """Extraction asks for JSON; a summary request gets a fixed sentence."""
    if request.get("response_format", {}).get("type") == "json_object":
        return json.dumps(
            {
                "memories": [
                    {
                        "content": "The user prefers jasmine tea in the afternoon",
                        "type": "PREFERENCE",
                        "topic_key": "drink",
                        "confidence": 0.9,
                        "importance": 0.6,
                    },
                    {"content": "ignored: unknown type", "type": "GOSSIP"},
                ]
            }
        )
    return "The user reported order SO-77120 lost; a refund was promised."


@pytest.fixture
def model() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer(_answer, expected_key=KEY)
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def llm_recalld(
    tmp_path: Path, embedder: MicroBatchingEmbedder, model: OpenAICompatibleServer
) -> AsyncIterator[RunningServer]:
    config = ServerConfig(
        port=0,
        data_dir=tmp_path / "data",
        llm_base_url=model.url,
        llm_model="local-test-model",
        llm_api_key=KEY,
        llm_timeout_s=5,
        session_window_messages=4,
        consolidate_interval_s=0,
    )
    running = await start_server(config, embedder=embedder)
    yield running
    await running.stop(grace_s=1)


@pytest.fixture
async def caller(llm_recalld: RunningServer, tenant: str) -> AsyncIterator[Caller]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{llm_recalld.port}") as channel:
        yield Caller(channel, tenant)


async def test_the_model_extracts_and_the_write_rules_judge(
    caller: Caller, model: OpenAICompatibleServer
) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    response = await caller.append(
        user, "s1", [(USER, "In the afternoon I always have jasmine tea")], extract=True
    )
    assert [r.memory.content for r in response.extracted] == [
        "The user prefers jasmine tea in the afternoon"
    ]
    [result] = response.extracted
    assert result.outcome == memory_service_pb2.WRITE_OUTCOME_CREATED
    assert result.memory.type == memory_pb2.MEMORY_TYPE_PREFERENCE
    assert result.memory.topic_key == "drink" and result.memory.session_id == "s1"
    [sent] = [r for r in model.requests if r.body.get("response_format")]
    assert sent.body["model"] == "local-test-model"
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert any("jasmine tea" in m["content"] for m in sent.body["messages"])
    again = await caller.append(user, "s1", [(USER, "jasmine tea, afternoons")], extract=True)
    assert [r.outcome for r in again.extracted] == [memory_service_pb2.WRITE_OUTCOME_DUPLICATE]


async def test_the_model_writes_the_summary_of_an_ended_session(
    caller: Caller, model: OpenAICompatibleServer
) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    said = [(USER, "My order SO-77120 never arrived."), (ASSISTANT, "I will refund it.")] * 4
    appended = await caller.append(user, "s1", said)
    assert appended.session.summary == _answer({})  # the window of 4 overflowed
    ended = await caller.end(user, "s1")
    assert ended.summary_memory.content == _answer({})
    assert ended.summary_memory.type == memory_pb2.MEMORY_TYPE_SUMMARY
    summaries = [r for r in model.requests if not r.body.get("response_format")]
    assert len(summaries) == 2 and all(r.body["model"] == "local-test-model" for r in summaries)


async def test_a_failing_model_falls_back_offline_and_extraction_waits(
    caller: Caller, model: OpenAICompatibleServer
) -> None:
    model.status = 500
    user = f"user-{uuid.uuid4().hex[:8]}"
    said = [(USER, f"Ticket TCK-{4400 + i} is about the broken hinge.") for i in range(6)]
    appended = await caller.append(user, "s1", said, extract=True)
    # The fold still happened, by the offline summarizer: identifiers kept.
    assert "TCK-4400" in appended.session.summary
    assert len(appended.extracted) == 0
    extraction = appended.session.extraction
    assert extraction.state == pb.EXTRACTION_STATE_RETRYING and "500" in extraction.last_error
    assert KEY not in extraction.last_error
    ended = await caller.end(user, "s1")
    assert "TCK-4400" in ended.summary_memory.content
