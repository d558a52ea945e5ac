"""Sensitive data over real gRPC, on Milvus Lite with sessions in a real redis-server.

From the attacker's side: after secrets, card and ID numbers went in through Write,
Update and AppendMessages (with extraction), none of those values is anywhere the
server keeps or emits anything: the Milvus Lite files, every Redis key, the spans it
exported, its log records, its responses and its errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig, sensitive_data_policy
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.services import RedisProcess

CARD = "6222 0212 3456 7890 128"
NATIONAL_ID = "11010519491231002X"
KEY = "sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789"
PASSWORD = "Tr0ub4dor&3"
PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEA7Vq3zX9bTq2LmR8pW4sKc1dY6nH0gJ5tUoFiAxEv"
SECRETS = (CARD, CARD.replace(" ", ""), NATIONAL_ID, KEY, PASSWORD, PRIVATE_KEY_BODY)


@pytest.fixture(scope="module")
async def sensitive_recalld(
    tmp_path_factory: pytest.TempPathFactory,
    redis_server: RedisProcess,
    embedder: MicroBatchingEmbedder,
) -> AsyncIterator[tuple[RunningServer, Path]]:
    root = tmp_path_factory.mktemp("sensitive-recalld")
    policy_file = root / "policy.json"
    policy_file.write_text('{"tenants": {"strict-bank": {"secrets": "reject"}}}')
    config = ServerConfig(
        port=0,
        data_dir=root / "data",
        redis_url=f"redis://127.0.0.1:{redis_server.port}/0",
        consolidate_interval_s=0,
        sensitive_data=sensitive_data_policy("", policy_file),
    )
    running = await start_server(
        config, embedder=embedder, environ={"RECALLD_OTEL_TRACES_FILE": str(root / "spans.jsonl")}
    )
    yield running, root
    await running.stop(grace_s=1)


async def test_no_value_survives_anywhere_the_server_keeps_or_emits_things(
    sensitive_recalld: tuple[RunningServer, Path],
    redis_server: RedisProcess,
    tenant: str,
    user_id: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    running, root = sensitive_recalld
    caplog.set_level(logging.DEBUG)
    async with RecalldClient(f"127.0.0.1:{running.port}", tenant=tenant) as client:
        written = await client.write(
            user_id,
            [
                memory(f"The user's UnionPay card is {CARD}, ID number {NATIONAL_ID}"),
                memory(
                    "Deploy notes",
                    metadata={"key": f"OPENAI_API_KEY={KEY}", "owner": "li.wei@example.com"},
                ),
            ],
            request_id=f"{user_id}-w1",
        )
        first, second = written.results
        assert first.memory.content == (
            "The user's UnionPay card is [CARD ••••0128], ID number [NATIONAL_ID]"
        )
        assert [(f.field, f.category, f.action, f.count) for f in first.sensitive_data] == [
            (
                "memories[0].content",
                memory_pb2.SENSITIVE_DATA_CATEGORY_CARD_NUMBER,
                memory_pb2.SENSITIVE_DATA_ACTION_MASKED,
                1,
            ),
            (
                "memories[0].content",
                memory_pb2.SENSITIVE_DATA_CATEGORY_NATIONAL_ID,
                memory_pb2.SENSITIVE_DATA_ACTION_MASKED,
                1,
            ),
        ]
        assert dict(second.memory.metadata) == {
            "key": "OPENAI_API_KEY=[API_KEY]",
            "owner": "li.wei@example.com",
        }
        assert {(f.field, f.action) for f in second.sensitive_data} == {
            ("memories[1].metadata.key", memory_pb2.SENSITIVE_DATA_ACTION_MASKED),
            ("memories[1].metadata.owner", memory_pb2.SENSITIVE_DATA_ACTION_ALLOWED),
        }
        # A retry with the same request id replays the answer, findings included.
        replay = await client.write(
            user_id,
            [
                memory(f"The user's UnionPay card is {CARD}, ID number {NATIONAL_ID}"),
                memory(
                    "Deploy notes",
                    metadata={"key": f"OPENAI_API_KEY={KEY}", "owner": "li.wei@example.com"},
                ),
            ],
            request_id=f"{user_id}-w1",
        )
        assert [r.id for r in replay.results] == [first.id, second.id]
        assert list(replay.results[0].sensitive_data) == list(first.sensitive_data)

        updated = await client.update(
            user_id,
            memory_pb2.Memory(id=second.id, content=f"The staging password is {PASSWORD}"),
            ["content"],
        )
        assert updated.content == "The staging password is [PASSWORD]"

        appended = await client.append_messages(
            user_id,
            "s-secrets",
            [
                (
                    "user",
                    f"I prefer aisle seats. My password is {PASSWORD} and my ID is {NATIONAL_ID}",
                ),
                (
                    "user",
                    "here is the deploy key\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
                    f"{PRIVATE_KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----",
                ),
            ],
            extract=True,
        )
        assert [m.content for m in appended.messages] == [
            "I prefer aisle seats. My password is [PASSWORD] and my ID is [NATIONAL_ID]",
            "here is the deploy key\n[PRIVATE_KEY]",
        ]
        assert {f.category for f in appended.sensitive_data} == {
            memory_pb2.SENSITIVE_DATA_CATEGORY_PASSWORD,
            memory_pb2.SENSITIVE_DATA_CATEGORY_NATIONAL_ID,
            memory_pb2.SENSITIVE_DATA_CATEGORY_PRIVATE_KEY,
        }
        context = await client.get_context(user_id, "s-secrets", query=f"password {PASSWORD}")
        recalled = await client.recall(user_id, f"which card is {CARD}?")
        assert recalled.items[0].memory.id == first.id
        emitted = [str(context), str(recalled), str(appended), str(written), str(updated)]
        for version in await client.history(user_id, first.id):
            emitted.append(str(version))
    running.tracer_provider.force_flush()

    # Read by another process, as an attacker with the disk would: a read in this
    # process would close a descriptor of the file Milvus Lite holds a POSIX lock on,
    # which drops the lock (fcntl locks belong to the process, not the descriptor).
    files = [str(path) for path in (root / "data").rglob("*") if path.is_file()]
    cat = await asyncio.create_subprocess_exec("cat", *files, stdout=asyncio.subprocess.PIPE)
    stored, _ = await cat.communicate()
    assert cat.returncode == 0
    stored += await _every_redis_value(redis_server.port)
    spans = (root / "spans.jsonl").read_text() if (root / "spans.jsonl").exists() else ""
    logs = "\n".join(r.getMessage() + str(r.args) + str(r.exc_info) for r in caplog.records)
    # The search is not vacuous: what was written is there in plain text.
    assert "[CARD ••••0128]".encode() in stored and b"aisle seats" in stored
    for secret in SECRETS:
        assert secret.encode() not in stored, secret
        assert secret not in spans and secret not in logs, secret
        assert all(secret not in text for text in emitted), secret


async def _every_redis_value(port: int) -> bytes:
    """Every key, member, field and value in the Redis, whatever its type."""
    raw = redis_asyncio.Redis(port=port)
    pieces: list[bytes | str] = []
    try:
        for key in await raw.keys("*"):
            kind = _bytes(await raw.type(key))
            if kind == b"string":
                pieces.append(await raw.get(key) or b"")
            elif kind == b"hash":
                for field, value in (await raw.hgetall(key)).items():
                    pieces += [field, value]
            elif kind == b"list":
                pieces += await raw.lrange(key, 0, -1)
            elif kind == b"zset":
                pieces += [str(member) for member in await raw.zrange(key, 0, -1)]
            elif kind == b"stream":
                for _, fields in await raw.xrange(key) or []:
                    for field, value in (fields or {}).items():
                        pieces += [field, value]
            elif kind == b"set":
                pieces += list(await raw.smembers(key))
    finally:
        await raw.aclose()
    return b"".join(_bytes(piece) for piece in pieces)


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


async def test_a_tenant_that_refuses_secrets_gets_invalid_argument_without_the_value(
    sensitive_recalld: tuple[RunningServer, Path], user_id: str
) -> None:
    running, _ = sensitive_recalld
    async with RecalldClient(f"127.0.0.1:{running.port}", tenant="strict-bank") as client:
        with pytest.raises(RecalldError) as refused:
            await client.write(
                user_id,
                [memory("The user likes tea"), memory(f"My key is {KEY}")],
            )
        assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [(v.field, v.reason) for v in refused.value.field_violations] == [
            ("memories[1].content", "SENSITIVE_DATA")
        ]
        assert KEY not in str(refused.value) and KEY not in refused.value.message
        assert (await client.list(user_id)).memories == []
        with pytest.raises(RecalldError) as refused_append:
            await client.append_messages(user_id, "s1", [("user", f"password: {PASSWORD}")])
        assert refused_append.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in refused_append.value.field_violations] == ["messages[0].content"]
        # Card numbers are still masked for this tenant (only secrets are refused).
        written = await client.write(user_id, [memory(f"Card {CARD}")])
        assert written.results[0].memory.content == "Card [CARD ••••0128]"
