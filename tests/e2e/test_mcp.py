"""The MCP facade end to end: the official SDK's client, `recalld-mcp`, a real recalld.

Every test runs on both transports: stdio (the SDK's client starts
`python -m recalld_mcp`, as a desktop agent does) and streamable HTTP (one
`recalld-mcp --http` child on loopback). The recalld behind them is real (Milvus
Lite, the bundled model, API keys of two tenants). The HTTP facade here takes the
user from a gateway header (`--user-header`); a second one binds each key to a
user (`--key-users`), as a public deployment would.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.mcp_harness import (
    McpHttpProcess,
    data,
    error,
    http_client,
    run_cli,
    stdio_client_for,
)

pytestmark = pytest.mark.slow

KEYS = {
    "keys": [
        {"key": "acme-writer", "tenant": "acme", "role": "writer"},
        {"key": "acme-reader", "tenant": "acme", "role": "reader"},
        {"key": "acme-slow", "tenant": "acme", "role": "writer", "rate_limit": 0.5},
        {"key": "globex-writer", "tenant": "globex", "role": "writer"},
    ]
}
TOOLS = {
    "remember",
    "recall",
    "update",
    "forget",
    "get_context",
    "append_messages",
    "list_memories",
}
USER_HEADER = "X-Recalld-User"


@pytest.fixture(scope="module")
async def recalld(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    root = tmp_path_factory.mktemp("mcp-recalld")
    keys = root / "keys.json"
    keys.write_text(json.dumps(KEYS))
    running = await start_server(
        ServerConfig(port=0, data_dir=root / "data", keys_file=keys, consolidate_interval_s=0),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


@pytest.fixture(scope="module")
def http_facade(recalld: RunningServer) -> Iterator[McpHttpProcess]:
    process = McpHttpProcess(
        "--address", f"127.0.0.1:{recalld.port}", "--user-header", USER_HEADER
    ).start()
    yield process
    process.stop()


Session = Callable[..., contextlib.AbstractAsyncContextManager[Client]]


@pytest.fixture(params=["stdio", "http"])
def session(request: pytest.FixtureRequest, recalld: RunningServer) -> Session:
    """Opens an MCP session acting with `key` for `user`, on the parametrised transport."""
    address = f"127.0.0.1:{recalld.port}"
    if request.param == "stdio":

        def stdio(key: str, user: str, address: str = address) -> Any:
            return stdio_client_for(
                ["--address", address, "--user", user], {"RECALLD_API_KEY": key}
            )

        return stdio
    facade: McpHttpProcess = request.getfixturevalue("http_facade")

    def http(key: str, user: str, address: str = address) -> Any:
        if address != f"127.0.0.1:{recalld.port}":
            return _http_elsewhere(address, key, user)
        return http_client(facade.url, key, {USER_HEADER: user})

    return http


@contextlib.asynccontextmanager
async def _http_elsewhere(address: str, key: str, user: str) -> AsyncIterator[Client]:
    facade = McpHttpProcess("--address", address, "--user-header", USER_HEADER).start()
    try:
        async with http_client(facade.url, key, {USER_HEADER: user}) as client:
            yield client
    finally:
        facade.stop()


async def test_initialize_and_list_tools_with_their_schemas(session: Session, user_id: str) -> None:
    async with session("acme-writer", user_id) as client:
        assert client.server_info is not None and client.server_info.name == "recalld"
        assert client.instructions and "recall" in client.instructions
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
            assert "user_id" not in tool.input_schema["properties"], "the user is not the model's"
            assert tool.output_schema and tool.output_schema["type"] == "object"
        remember = listed["remember"].input_schema
        assert remember["required"] == ["content"]
        assert remember["properties"]["content"]["maxLength"] == 8192
        assert set(remember["properties"]["type"]["enum"]) == {
            "fact",
            "preference",
            "event",
            "state",
            "decision",
            "task",
        }
        assert listed["recall"].annotations and listed["recall"].annotations.read_only_hint
        assert listed["forget"].annotations and listed["forget"].annotations.destructive_hint
        recall_output = listed["recall"].output_schema or {}
        assert {"items", "context"} <= set(recall_output["properties"])
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["use_memory"]
        templates = (await client.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {
            "recalld://users/{user}/profile",
            "recalld://users/{user}/recent",
        }


async def test_remember_then_recall_then_forget(session: Session, user_id: str) -> None:
    async with session("acme-writer", user_id) as client:
        stored = data(
            await client.call_tool(
                "remember",
                {
                    "content": "The user is allergic to peanuts.",
                    "type": "fact",
                    "tags": ["health"],
                    "importance": 0.9,
                },
            )
        )
        assert stored["outcome"] == "created" and stored["memory"]["tags"] == ["health"]
        again = data(
            await client.call_tool("remember", {"content": "The user is allergic to peanuts."})
        )
        assert again["outcome"] == "duplicate" and again["id"] == stored["id"]
        data(
            await client.call_tool(
                "remember",
                {
                    "content": "The user flew to Lisbon for a conference.",
                    "type": "event",
                    "occurred_at": "2026-03-02T09:00:00Z",
                },
            )
        )
        found = data(await client.call_tool("recall", {"query": "What is the user allergic to?"}))
        assert found["items"][0]["memory"]["id"] == stored["id"]
        assert "peanuts" in found["context"]
        trip = data(
            await client.call_tool(
                "recall",
                {
                    "query": "Where did the user fly for the conference?",
                    "types": ["event"],
                    "occurred_after": "2026-01-01T00:00:00Z",
                    "token_budget": 300,
                },
            )
        )
        assert [i["memory"]["type"] for i in trip["items"]] == ["event"]
        assert trip["items"][0]["memory"]["occurred_at"].startswith("2026-03-02T09:00:00")

        forgotten = data(await client.call_tool("forget", {"ids": [stored["id"]]}))
        assert forgotten == {"forgotten": [stored["id"]], "permanently": False}
        after = data(await client.call_tool("recall", {"query": "What is the user allergic to?"}))
        assert stored["id"] not in [i["memory"]["id"] for i in after["items"]]
        page = data(await client.call_tool("list_memories", {"page_size": 10}))
        assert [m["content"] for m in page["memories"]] == [
            "The user flew to Lisbon for a conference."
        ]


async def test_get_context_after_append_messages(session: Session, user_id: str) -> None:
    async with session("acme-writer", user_id) as client:
        data(await client.call_tool("remember", {"content": "The user's dog is called Miso."}))
        appended = data(
            await client.call_tool(
                "append_messages",
                {
                    "session_id": "chat-1",
                    "messages": [
                        {"role": "user", "content": "Can you suggest a name tag for my dog?"},
                        {"role": "assistant", "content": "Sure, what is the dog's name?"},
                    ],
                },
            )
        )
        assert appended["appended"] == 2 and appended["message_count"] == 2
        context = data(
            await client.call_tool("get_context", {"session_id": "chat-1", "query": "dog's name"})
        )
        assert [m["role"] for m in context["messages"]] == ["user", "assistant"]
        assert "name tag" in context["context"] and "Miso" in context["context"]
        assert context["memories"][0]["memory"]["content"] == "The user's dog is called Miso."


async def test_secrets_are_masked_and_the_agent_is_told(session: Session, user_id: str) -> None:
    async with session("acme-writer", user_id) as client:
        stored = data(
            await client.call_tool(
                "remember",
                {"content": "The user's card is 4111 1111 1111 1111; wifi password is Tr0ub4dor&3"},
            )
        )
        assert stored["memory"]["content"] == (
            "The user's card is [CARD ••••1111]; wifi password is [PASSWORD]"
        )
        assert sorted(
            (f["field"], f["category"], f["action"]) for f in stored["sensitive_data"]
        ) == [
            ("content", "card_number", "masked"),
            ("content", "password", "masked"),
        ]
        appended = data(
            await client.call_tool(
                "append_messages",
                {
                    "session_id": "chat-secrets",
                    "messages": [{"role": "user", "content": "my key is AKIAIOSFODNN7EXAMPLE"}],
                },
            )
        )
        assert [(f["field"], f["category"]) for f in appended["sensitive_data"]] == [
            ("messages[0].content", "api_key")
        ]


async def test_a_stale_etag_is_refused_with_advice_and_a_fresh_one_wins(
    session: Session, user_id: str
) -> None:
    async with session("acme-writer", user_id) as client:
        stored = data(await client.call_tool("remember", {"content": "The user lives in Porto."}))
        etag = stored["memory"]["etag"]
        moved = data(
            await client.call_tool(
                "update", {"id": stored["id"], "etag": etag, "content": "The user lives in Braga."}
            )
        )
        assert moved["content"] == "The user lives in Braga." and moved["etag"] != etag
        stale = error(
            await client.call_tool(
                "update", {"id": stored["id"], "etag": etag, "content": "The user lives in Faro."}
            )
        )
        assert stale["code"] == "ABORTED" and "read it again" in stale["message"]
        nothing = error(await client.call_tool("update", {"id": stored["id"], "etag": etag}))
        assert nothing["code"] == "INVALID_ARGUMENT"
        missing = error(
            await client.call_tool(
                "update", {"id": "01HZZZZZZZZZZZZZZZZZZZZZZZ", "etag": etag, "importance": 1}
            )
        )
        assert missing["code"] == "NOT_FOUND"
        current = data(await client.call_tool("list_memories", {}))["memories"]
        assert [m["content"] for m in current] == ["The user lives in Braga."]


def _dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


async def test_a_recalld_that_is_down_gives_a_retryable_error_not_a_crash(
    session: Session, user_id: str
) -> None:
    async with session("acme-writer", user_id, address=_dead_address()) as client:
        down = error(await client.call_tool("recall", {"query": "anything"}))
        assert down["code"] == "UNAVAILABLE" and "retry" in down["message"].lower()
        failed = error(await client.call_tool("remember", {"content": "The user likes tea."}))
        assert failed["code"] == "UNAVAILABLE"
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS  # still serving


async def test_a_key_of_one_tenant_cannot_reach_another(session: Session, user_id: str) -> None:
    async with session("acme-writer", user_id) as acme:
        secret = data(
            await acme.call_tool("remember", {"content": "The user's PIN hint is 'blue door'."})
        )
    async with session("globex-writer", user_id) as globex:
        assert data(await globex.call_tool("recall", {"query": "PIN hint"}))["items"] == []
        assert data(await globex.call_tool("list_memories", {}))["memories"] == []
        gone = await globex.call_tool("forget", {"ids": [secret["id"]], "permanently": True})
        assert gone.is_error or data(gone)["forgotten"] == []
        changed = error(
            await globex.call_tool(
                "update",
                {"id": secret["id"], "etag": secret["memory"]["etag"], "content": "pwned"},
            )
        )
        assert changed["code"] == "NOT_FOUND"
    async with session("acme-reader", user_id) as reader:
        kept = data(await reader.call_tool("recall", {"query": "PIN hint"}))
        assert [i["memory"]["content"] for i in kept["items"]] == [
            "The user's PIN hint is 'blue door'."
        ]
        refused = error(await reader.call_tool("remember", {"content": "The user likes jazz."}))
        assert refused["code"] == "PERMISSION_DENIED"


async def test_a_tool_argument_naming_another_user_is_refused(
    session: Session, user_id: str
) -> None:
    async with session("acme-writer", "victim-" + user_id) as victim:
        data(await victim.call_tool("remember", {"content": "The user's salary is 91k."}))
    async with session("acme-writer", user_id) as client:
        attempts: list[tuple[str, dict[str, Any]]] = [
            ("recall", {"query": "salary", "user_id": "victim-" + user_id}),
            ("list_memories", {"user_id": "victim-" + user_id}),
            ("remember", {"content": "planted", "user_id": "victim-" + user_id}),
            ("forget", {"ids": ["x"], "user_id": "victim-" + user_id}),
        ]
        for name, arguments in attempts:
            refused = error(await client.call_tool(name, arguments))
            assert refused["code"] == "PERMISSION_DENIED" and "user_id" in refused["message"]
        with pytest.raises(Exception, match="another user"):
            await client.read_resource(f"recalld://users/victim-{user_id}/profile")
        own = await client.read_resource(f"recalld://users/{user_id}/recent")
        assert json.loads(own.contents[0].text)["memories"] == []  # type: ignore[union-attr]
    async with session("acme-writer", "victim-" + user_id) as victim:
        kept = data(await victim.call_tool("list_memories", {}))["memories"]
        assert [m["content"] for m in kept] == ["The user's salary is 91k."]


async def test_a_rate_limited_key_gets_the_retry_delay(session: Session, user_id: str) -> None:
    async with session("acme-slow", user_id) as client:
        results = [await client.call_tool("recall", {"query": "x"}) for _ in range(4)]
        limited = [error(r) for r in results if r.is_error]
        assert limited and all(e["code"] == "RESOURCE_EXHAUSTED" for e in limited)
        assert all(e["retry_after_s"] > 0 for e in limited)
        assert all("Retry after" in e["message"] for e in limited)


MALFORMED: list[tuple[str, Any]] = [
    ("remember", {}),
    ("remember", {"content": ""}),
    ("remember", {"content": 42}),
    ("remember", {"content": None}),
    ("remember", {"content": ["a"]}),
    ("remember", {"content": "x" * 9000}),
    ("remember", {"content": "ok", "type": "secret"}),
    ("remember", {"content": "ok", "importance": 7}),
    ("remember", {"content": "ok", "importance": "high"}),
    ("remember", {"content": "ok", "tags": "one"}),
    ("remember", {"content": "ok", "tags": ["t"] * 33}),
    ("remember", {"content": "ok", "tags": ["x" * 65]}),
    ("remember", {"content": "ok", "occurred_at": "yesterday"}),
    ("remember", {"content": "ok", "topic_key": "k" * 200}),
    ("remember", {"content": "ok", "bogus": 1}),
    ("remember", {"content": "ok", "metadata": {"a": 1}}),
    ("recall", {}),
    ("recall", {"query": ""}),
    ("recall", {"query": "q" * 5000}),
    ("recall", {"query": "x", "top_k": 0}),
    ("recall", {"query": "x", "top_k": 1000}),
    ("recall", {"query": "x", "top_k": "five"}),
    ("recall", {"query": "x", "types": ["bogus"]}),
    ("recall", {"query": "x", "types": "fact"}),
    ("recall", {"query": "x", "occurred_after": "not a date"}),
    ("recall", {"query": "x", "token_budget": -1}),
    ("recall", {"query": "x", "explain": True}),
    ("update", {}),
    ("update", {"id": "x"}),
    ("update", {"id": "", "etag": "e", "content": "c"}),
    ("update", {"id": "x" * 100, "etag": "e", "content": "c"}),
    ("update", {"id": "x", "etag": "e", "content": "c" * 9000}),
    ("update", {"id": "x", "etag": "e", "importance": -1}),
    ("forget", {}),
    ("forget", {"ids": []}),
    ("forget", {"ids": "all"}),
    ("forget", {"ids": [1, 2]}),
    ("forget", {"ids": ["x"] * 101}),
    ("forget", {"all_of_user": True}),
    ("get_context", {}),
    ("get_context", {"session_id": ""}),
    ("get_context", {"session_id": "s" * 200}),
    ("get_context", {"session_id": "s", "token_budget": 10**9}),
    ("append_messages", {"session_id": "s"}),
    ("append_messages", {"session_id": "s", "messages": []}),
    ("append_messages", {"session_id": "s", "messages": [{"role": "god", "content": "x"}]}),
    ("append_messages", {"session_id": "s", "messages": [{"role": "user"}]}),
    ("append_messages", {"session_id": "s", "messages": "hello"}),
    ("list_memories", {"page_size": 0}),
    ("list_memories", {"page_token": "garbage-token"}),
    ("list_memories", {"page_size": "ten"}),
    ("drop_database", {}),
    ("", {}),
    ("recall\u0000", {"query": "x"}),
]


async def test_fifty_malformed_calls_each_get_a_clear_error_and_the_session_survives(
    session: Session, user_id: str
) -> None:
    assert len(MALFORMED) >= 50
    async with session("acme-writer", user_id) as client:
        data(await client.call_tool("remember", {"content": "The user drinks green tea."}))
        for name, arguments in MALFORMED:
            try:
                result = await client.call_tool(name, arguments)
            except Exception as protocol_error:  # a JSON-RPC error is a clear answer too
                assert str(protocol_error), (name, arguments)
                continue
            details = error(result)
            assert details.get("message"), (name, arguments, details)
            assert "Traceback" not in details["message"]
        found = data(await client.call_tool("recall", {"query": "tea"}))
        assert [i["memory"]["content"] for i in found["items"]] == ["The user drinks green tea."]
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS


@pytest.fixture(scope="module")
def bound_facade(
    recalld: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpHttpProcess]:
    users = tmp_path_factory.mktemp("mcp-keys") / "key-users.json"
    users.write_text(
        json.dumps(
            {
                "keys": [
                    {"key": "acme-writer", "user": "bound-alice"},
                    {"key": "globex-writer", "user": "bound-alice"},
                ]
            }
        )
    )
    process = McpHttpProcess(
        "--address", f"127.0.0.1:{recalld.port}", "--key-users", str(users)
    ).start()
    yield process
    process.stop()


async def test_http_binds_each_key_to_its_user_and_refuses_unknown_or_missing_keys(
    bound_facade: McpHttpProcess,
) -> None:
    # A header naming another user changes nothing: the key decides.
    async with http_client(bound_facade.url, "acme-writer", {USER_HEADER: "bound-bob"}) as client:
        data(await client.call_tool("remember", {"content": "Bound Alice plays chess."}))
        mine = data(await client.call_tool("list_memories", {}))["memories"]
        assert [m["content"] for m in mine] == ["Bound Alice plays chess."]
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as raw:
        missing = await raw.post(bound_facade.url, json=body, headers=accept)
        assert (
            missing.status_code == 401 and "bearer" in missing.headers["www-authenticate"].lower()
        )
        unknown = await raw.post(
            bound_facade.url, json=body, headers={**accept, "Authorization": "Bearer acme-reader"}
        )
        assert unknown.status_code == 403
        evil = await raw.post(
            bound_facade.url,
            json=body,
            headers={
                **accept,
                "Authorization": "Bearer acme-writer",
                "Origin": "https://evil.example",
            },
        )
        assert evil.status_code == 403
    assert bound_facade.alive()


async def test_unsafe_or_incomplete_settings_refuse_to_start(tmp_path: Path) -> None:
    no_user = run_cli("--address", "127.0.0.1:1")
    assert no_user.returncode == 2 and "--user" in no_user.stderr
    keyless_public = run_cli(
        "--http", "--host", "0.0.0.0", "--allow-keyless", "--user", "a", "--address", "127.0.0.1:1"
    )
    assert keyless_public.returncode == 2 and "--allow-keyless" in keyless_public.stderr
    unbound_http = run_cli("--http", "--address", "127.0.0.1:1")
    assert unbound_http.returncode == 2 and "--key-users" in unbound_http.stderr
    broken = tmp_path / "users.json"
    broken.write_text('{"keys": [{"key": "k"}]}')
    bad_file = run_cli("--http", "--key-users", str(broken), "--address", "127.0.0.1:1")
    assert bad_file.returncode == 2 and "has no user" in bad_file.stderr
