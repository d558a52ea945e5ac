"""The LLM summarizer and extractor against a real OpenAI-compatible HTTP server on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from recalld_server.domain.core.conversation import Message, Role
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.core.text import estimate_tokens
from recalld_server.domain.offline.extractive_summary import ExtractiveSummarizer
from recalld_server.llm.openai_compat import (
    EXTRACTION_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    ChatClient,
    LlmExtractor,
    LlmSummarizer,
)
from tests.services import OpenAICompatibleServer, free_port

KEY = "sk-test-4f9c2e7d1b"
MODEL = "qwen2.5-7b-instruct"


def _message(role: Role, content: str) -> Message:
    return Message(
        role, content, created_at=1_800_000_000_000, token_count=estimate_tokens(content)
    )


TRANSCRIPT = [
    _message(Role.USER, "Hi! My order SO-88231 still hasn't arrived."),
    _message(Role.ASSISTANT, "Sorry about that. I see SO-88231 shipped on 2026-11-28 via DHL."),
    _message(Role.USER, "I live in Berlin, and I prefer email updates at chen@example.com."),
    _message(Role.USER, "顺便说一下，我对花生过敏。"),
]


@pytest.fixture
def llm() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(expected_key=KEY) as server:
        yield server


def _client(server: OpenAICompatibleServer, timeout_s: float = 5.0) -> ChatClient:
    return ChatClient(server.url, MODEL, KEY, timeout_s)


# ---------------------------------------------------------------- the client


async def test_a_request_names_the_model_the_messages_and_the_bearer_key(
    llm: OpenAICompatibleServer,
) -> None:
    llm.responder = lambda request: "pong: " + request["messages"][-1]["content"]
    client = _client(llm)
    assert await client.complete("You answer tersely.", "ping", json_mode=False) == "pong: ping"
    assert await client.complete("Answer JSON.", "ping", json_mode=True) == "pong: ping"

    plain, json_mode = llm.requests
    assert plain.method == "POST" and plain.path == "/v1/chat/completions"
    assert plain.headers["Authorization"] == f"Bearer {KEY}"
    assert plain.headers["Content-Type"] == "application/json"
    assert plain.body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You answer tersely."},
            {"role": "user", "content": "ping"},
        ],
        "temperature": 0,
        "stream": False,
    }
    assert "response_format" not in plain.body
    assert json_mode.body["response_format"] == {"type": "json_object"}


async def test_no_authorization_header_without_a_key() -> None:
    with OpenAICompatibleServer() as server:
        client = ChatClient(server.url + "/", MODEL, None, 5)  # a trailing slash is fine
        assert await client.complete("s", "u", json_mode=False) == "ok"
        (request,) = server.requests
        assert request.path == "/v1/chat/completions"
        assert "Authorization" not in request.headers


async def test_chinese_text_travels_as_utf8(llm: OpenAICompatibleServer) -> None:
    llm.responder = lambda request: "收到：" + request["messages"][1]["content"]
    assert await _client(llm).complete("系统", "我住在杭州", json_mode=False) == "收到：我住在杭州"


async def test_a_wrong_key_is_unavailable_and_the_key_is_never_in_the_message(
    llm: OpenAICompatibleServer,
) -> None:
    wrong = "sk-wrong-0000-secret"
    client = ChatClient(llm.url, MODEL, wrong, 5)
    with pytest.raises(BackendUnavailableError) as caught:
        await client.complete("s", "u", json_mode=False)
    message = str(caught.value)
    assert "HTTP 401" in message and llm.url in message
    # The server echoed the key it got ("Incorrect API key provided: Bearer sk-..."):
    assert wrong not in message and "***" in message
    assert wrong not in repr(caught.value)


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
async def test_a_non_2xx_answer_is_unavailable(llm: OpenAICompatibleServer, status: int) -> None:
    llm.status = status
    with pytest.raises(BackendUnavailableError, match=f"HTTP {status}"):
        await _client(llm).complete("s", "u", json_mode=False)


async def test_a_redirect_is_not_followed(llm: OpenAICompatibleServer) -> None:
    llm.status = 307  # following it would resend the key to wherever it points
    with pytest.raises(BackendUnavailableError, match="HTTP 307"):
        await _client(llm).complete("s", "u", json_mode=False)
    assert len(llm.requests) == 1


async def test_a_slow_server_times_out(llm: OpenAICompatibleServer) -> None:
    llm.delay_s = 5
    started = time.monotonic()
    with pytest.raises(BackendUnavailableError, match=r"within 0\.3 s"):
        await _client(llm, timeout_s=0.3).complete("s", "u", json_mode=False)
    assert time.monotonic() - started < 2


async def test_a_closed_port_is_unavailable() -> None:
    client = ChatClient(f"http://127.0.0.1:{free_port()}/v1", MODEL, KEY, 2)
    with pytest.raises(BackendUnavailableError, match="cannot connect") as caught:
        await client.complete("s", "u", json_mode=False)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>gateway error</html>",
        b'{"id": "x", "object": "chat.completion"}',
        b'{"choices": []}',
        b'{"choices": [{"message": {"role": "assistant", "content": null}}]}',
        b"\xff\xfe not utf-8",
    ],
)
async def test_a_body_that_is_not_a_chat_completion_is_unavailable(
    llm: OpenAICompatibleServer, body: bytes
) -> None:
    llm.raw_body = body
    with pytest.raises(BackendUnavailableError):
        await _client(llm).complete("s", "u", json_mode=False)


async def test_content_parts_are_joined(llm: OpenAICompatibleServer) -> None:
    parts = [{"type": "text", "text": "The user "}, {"type": "text", "text": "likes tea."}]
    llm.raw_body = json.dumps({"choices": [{"message": {"content": parts}}]}).encode()
    assert await _client(llm).complete("s", "u", json_mode=False) == "The user likes tea."


def test_the_client_refuses_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http"):
        ChatClient("127.0.0.1:8080/v1", MODEL, None, 5)


# ------------------------------------------------------------ the summarizer


async def test_the_summarizer_prompt_holds_the_summary_the_messages_and_the_budget(
    llm: OpenAICompatibleServer,
) -> None:
    llm.responder = lambda _request: "The user's order SO-88231 shipped on 2026-11-28."
    summarizer = LlmSummarizer(_client(llm), ExtractiveSummarizer())
    assert summarizer.name == "llm"
    result = await summarizer.fold("user: I am Chen.", TRANSCRIPT, 120)
    assert result == "The user's order SO-88231 shipped on 2026-11-28."

    (request,) = llm.requests
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": SUMMARY_SYSTEM_PROMPT}
    assert "response_format" not in request.body
    prompt = user["content"]
    assert "<summary>\nuser: I am Chen.\n</summary>" in prompt
    assert "user: Hi! My order SO-88231 still hasn't arrived." in prompt
    assert "assistant: Sorry about that." in prompt
    assert "user: 顺便说一下，我对花生过敏。" in prompt
    assert "at most 120 tokens" in prompt


async def test_a_long_summary_is_cut_to_the_budget_at_a_sentence_end(
    llm: OpenAICompatibleServer,
) -> None:
    sentences = [f"Order SO-{88230 + i} shipped on 2026-11-{10 + i:02d}." for i in range(15)]
    llm.responder = lambda _request: "```\n" + " ".join(sentences) + "\n```"
    summarizer = LlmSummarizer(_client(llm), ExtractiveSummarizer())
    assert estimate_tokens(sentences[0]) == 16
    for budget in (6, 12, 40, 90):
        result = await summarizer.fold("", TRANSCRIPT, budget)
        assert 0 < estimate_tokens(result) <= budget, (budget, result)
        assert "```" not in result
        if budget >= 16:  # at least one whole sentence fits: no sentence is cut
            assert result.endswith(".") and result in " ".join(sentences)
        else:
            assert result.endswith("…")


async def test_a_summary_label_and_fences_are_stripped(llm: OpenAICompatibleServer) -> None:
    llm.responder = lambda _request: "```markdown\nSummary: 用户住在杭州，对花生过敏。\n```"
    summarizer = LlmSummarizer(_client(llm), ExtractiveSummarizer())
    assert await summarizer.fold("", TRANSCRIPT, 100) == "用户住在杭州，对花生过敏。"


@pytest.mark.parametrize("failure", ["status", "timeout", "key", "malformed", "empty"])
async def test_the_summarizer_falls_back_when_the_model_cannot_answer(
    llm: OpenAICompatibleServer, failure: str
) -> None:
    client = _client(llm, timeout_s=0.3)
    if failure == "status":
        llm.status = 500
    elif failure == "timeout":
        llm.delay_s = 5
    elif failure == "key":
        client = ChatClient(llm.url, MODEL, "sk-other", 5)
    elif failure == "malformed":
        llm.raw_body = b"{not json"
    else:
        llm.responder = lambda _request: "  \n"
    fallback = ExtractiveSummarizer()
    summarizer = LlmSummarizer(client, fallback)
    result = await summarizer.fold("user: I am Chen.", TRANSCRIPT, 60)
    assert result == await fallback.fold("user: I am Chen.", TRANSCRIPT, 60)
    assert "SO-88231" in result and estimate_tokens(result) <= 60
    assert len(llm.requests) == 1


async def test_nothing_new_costs_no_call(llm: OpenAICompatibleServer) -> None:
    summarizer = LlmSummarizer(_client(llm), ExtractiveSummarizer())
    assert await summarizer.fold("The user lives in Berlin.", [], 50) == "The user lives in Berlin."
    assert await summarizer.fold("The user lives in Berlin.", TRANSCRIPT, 0) == ""
    assert llm.requests == []


# ------------------------------------------------------------- the extractor


def _memories(*items: Any) -> str:
    return json.dumps({"memories": list(items)}, ensure_ascii=False)


async def test_the_extractor_asks_for_json_and_parses_the_memories(
    llm: OpenAICompatibleServer,
) -> None:
    llm.responder = lambda _request: _memories(
        {
            "content": "The user lives in Berlin",
            "type": "fact",
            "topic_key": "home_city",
            "confidence": 0.9,
            "importance": 0.6,
        },
        {
            "content": "用户对花生过敏",
            "type": "FACT",
            "topic_key": "allergy",
            "confidence": 0.95,
            "importance": 0.9,
        },
        {
            "content": "The user prefers email updates at chen@example.com",
            "type": "preference",
            "topic_key": "Communication Style",
        },
    )
    extractor = LlmExtractor(_client(llm))
    assert extractor.name == "llm"
    candidates = await extractor.extract(TRANSCRIPT)

    assert [(c.content, c.type, c.topic_key) for c in candidates] == [
        ("The user lives in Berlin", MemoryType.FACT, "home_city"),
        ("用户对花生过敏", MemoryType.FACT, "allergy"),
        (
            "The user prefers email updates at chen@example.com",
            MemoryType.PREFERENCE,
            "communication_style",
        ),
    ]
    assert [(c.confidence, c.importance) for c in candidates] == [
        (0.9, 0.6),
        (0.95, 0.9),
        (0.8, 0.5),  # the defaults when the model gives none
    ]
    assert all(c.occurred_at == 0 for c in candidates)

    (request,) = llm.requests
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["model"] == MODEL and request.body["temperature"] == 0
    system, user = request.body["messages"]
    assert system["content"] == EXTRACTION_SYSTEM_PROMPT
    assert "home_city" in system["content"] and "allergy" in system["content"]
    assert "user: 顺便说一下，我对花生过敏。" in user["content"]
    assert user["content"].startswith("<messages>\n")


async def test_the_extractor_parses_defensively(llm: OpenAICompatibleServer) -> None:
    valid = [
        {"content": f"The user owns book {i}", "type": "fact", "importance": 0.5} for i in range(30)
    ]
    answer = _memories(
        {"content": "x" * 9000, "type": "fact"},  # cut to 8192 characters
        {"content": "The user likes tea", "type": "opinion"},  # unknown type: skipped
        {"content": "The user summary", "type": "summary"},  # not an extractor's type
        {"content": "   ", "type": "fact"},  # blank: skipped
        {"content": 42, "type": "fact"},  # not text: skipped
        "The user likes coffee",  # not an object: skipped
        {"content": "The user is vegan", "type": 1, "confidence": 1.7, "importance": -2},
        {"content": "The user is vegan", "type": "fact"},  # a repeat: skipped
        {"content": "Maybe the user likes jazz", "type": "preference", "confidence": "0.3"},
        {"content": "The user has a cat", "type": "fact", "confidence": True},
        {"content": "The user is in UTC+8", "type": "fact", "topic_key": "a\x00b"},
        *valid,
    )
    llm.responder = lambda _request: "Here you go:\n```json\n" + answer + "\n```\nDone."
    candidates = await LlmExtractor(_client(llm)).extract(TRANSCRIPT)

    assert len(candidates) == 20
    assert candidates[0].content == "x" * 8192
    vegan = candidates[1]
    assert (vegan.content, vegan.type, vegan.confidence, vegan.importance) == (
        "The user is vegan",
        MemoryType.FACT,
        1.0,
        0.0,
    )
    assert candidates[2].confidence == pytest.approx(0.3)
    assert candidates[3].confidence == 0.8  # a bool is no number
    assert candidates[4].topic_key == ""  # control characters: no topic key
    assert [c.content for c in candidates[5:]] == [f"The user owns book {i}" for i in range(15)]
    assert all(0.0 <= c.confidence <= 1.0 and 0.0 <= c.importance <= 1.0 for c in candidates)


async def test_json_in_prose_without_fences_is_found(llm: OpenAICompatibleServer) -> None:
    llm.responder = lambda _request: (
        'Sure! {"memories": [{"content": "The user lives in Berlin", "type": "fact"}]} Hope so.'
    )
    (candidate,) = await LlmExtractor(_client(llm)).extract(TRANSCRIPT)
    assert candidate.content == "The user lives in Berlin"


async def test_an_empty_list_is_no_memories(llm: OpenAICompatibleServer) -> None:
    llm.responder = lambda _request: '{"memories": []}'
    assert await LlmExtractor(_client(llm)).extract(TRANSCRIPT) == []


@pytest.mark.parametrize(
    "answer",
    [
        "The user lives in Berlin.",
        '{"memories": [{"content": "The user lives in Berlin", "type": "fact"}',
        '{"facts": []}',
        '{"memories": "The user lives in Berlin"}',
        "null",
        "",
    ],
)
async def test_an_answer_without_a_memories_list_is_unavailable(
    llm: OpenAICompatibleServer, answer: str
) -> None:
    llm.responder = lambda _request: answer
    with pytest.raises(BackendUnavailableError):
        await LlmExtractor(_client(llm)).extract(TRANSCRIPT)


@pytest.mark.parametrize("failure", ["500", "401", "timeout", "malformed_body", "closed"])
async def test_the_extractor_raises_when_the_model_cannot_answer(
    llm: OpenAICompatibleServer, failure: str
) -> None:
    client = _client(llm, timeout_s=0.3)
    if failure == "500":
        llm.status = 500
    elif failure == "401":
        client = ChatClient(llm.url, MODEL, "sk-wrong", 5)
    elif failure == "timeout":
        llm.delay_s = 5
    elif failure == "malformed_body":
        llm.raw_body = b'{"choices": [{"message": '
    else:
        client = ChatClient(f"http://127.0.0.1:{free_port()}/v1", MODEL, KEY, 2)
    with pytest.raises(BackendUnavailableError) as caught:
        await LlmExtractor(client).extract(TRANSCRIPT)
    assert KEY not in str(caught.value) and "sk-wrong" not in str(caught.value)


async def test_no_user_message_costs_no_call(llm: OpenAICompatibleServer) -> None:
    extractor = LlmExtractor(_client(llm))
    assistant_only = [_message(Role.ASSISTANT, "I live in the cloud."), _message(Role.USER, " ")]
    assert await extractor.extract(assistant_only) == []
    assert await extractor.extract([]) == []
    assert llm.requests == []
