"""The recall pipeline end to end: hybrid retrieval, profile, explain, budgets."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory


@pytest.fixture
def server(any_server: RunningServer) -> RunningServer:
    """Every test here runs on each backend (tests/conftest.py BACKENDS)."""
    return any_server


ORDERS = ["SO-88231", "SO-88232", "SO-88233", "SO-88234", "SO-88235"]


async def test_hybrid_finds_exact_identifiers_that_dense_search_blurs(
    client: RecalldClient, user_id: str, embedder: MicroBatchingEmbedder
) -> None:
    written = await client.write(
        user_id,
        [memory(f"订单 {order} 已发货", memory_pb2.MEMORY_TYPE_EVENT) for order in ORDERS]
        + [memory("The user prefers express delivery"), memory("用户的收货地址在杭州")],
    )
    ids = {order: r.id for order, r in zip(ORDERS, written.results, strict=False)}
    hybrid_right = dense_right = 0
    for order in ORDERS:
        hybrid = await client.recall(user_id, f"订单 {order} 的状态", top_k=3)
        hybrid_right += hybrid.items[0].memory.id == ids[order]
        assert hybrid.items[0].breakdown.keyword > 0
        vector = (await embedder.embed([f"订单 {order} 的状态"]))[0]
        dense = await client.recall(user_id, query_vector=[float(x) for x in vector], top_k=3)
        dense_right += dense.items[0].memory.id == ids[order]
    assert hybrid_right == len(ORDERS)
    assert dense_right < len(ORDERS), "dense-only should blur near-identical identifiers"


async def test_profile_is_returned_cached_and_invalidated_on_change(
    client: RecalldClient, user_id: str
) -> None:
    await client.write(
        user_id,
        [
            memory(
                "The user's name is Chen Jing",
                tier=memory_pb2.MEMORY_TIER_P0,
                topic_key="profile.name",
            ),
            memory(
                "The user prefers green tea", memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="drink"
            ),
            memory("The user visited Xi'an last spring", memory_pb2.MEMORY_TYPE_EVENT),
        ],
    )
    first = await client.get_profile(user_id)
    assert [m.topic_key for m in first.profile.memories] == ["profile.name", "drink"]
    assert not first.profile.from_cache
    second = await client.get_profile(user_id)
    assert second.profile.from_cache and list(second.profile.memories) == list(
        first.profile.memories
    )

    await client.write(
        user_id,
        [
            memory(
                "The user now prefers black coffee",
                memory_pb2.MEMORY_TYPE_PREFERENCE,
                topic_key="drink",
            )
        ],
    )
    after = await client.get_profile(user_id)
    assert not after.profile.from_cache, "the write invalidated the cached profile"
    drink = [m for m in after.profile.memories if m.topic_key == "drink"]
    assert [m.content for m in drink] == ["The user now prefers black coffee"]

    recalled = await client.recall(user_id, "What should I serve the user to drink?")
    assert [m.topic_key for m in recalled.profile.memories] == ["profile.name", "drink"]
    assert "<user_profile>" in recalled.context and "black coffee" in recalled.context
    assert "<relevant_memories>" in recalled.context
    skipped = await client.recall(user_id, "drink", skip_profile=True)
    assert list(skipped.profile.memories) == [] and "Chen Jing" not in skipped.context
    assert "<user_profile>" not in skipped.context  # no empty block either


async def test_explain_lists_every_candidate_and_why_it_was_dropped(
    client: RecalldClient, user_id: str
) -> None:
    old = (
        (
            await client.write(
                user_id, [memory("The user's laptop is a ThinkPad X1", topic_key="laptop")]
            )
        )
        .results[0]
        .id
    )
    new = (
        (
            await client.write(
                user_id, [memory("The user's laptop is now a MacBook Air", topic_key="laptop")]
            )
        )
        .results[0]
        .id
    )
    expired = memory("The user's laptop is in repair this week", memory_pb2.MEMORY_TYPE_STATE)
    expired.expire_at.FromSeconds(1_000_000_000)
    expired_id = (await client.write(user_id, [expired])).results[0].id
    scoped = (
        (
            await client.write(
                user_id, [memory("Laptop warranty handled by the IT bot", agent_scope="it-bot")]
            )
        )
        .results[0]
        .id
    )
    archived = (
        (await client.write(user_id, [memory("The user's old laptop bag is black")])).results[0].id
    )
    await client.forget(user_id, [archived])
    unrelated = (await client.write(user_id, [memory("用户喜欢吃辣")])).results[0].id

    response = await client.recall(
        user_id, "Which laptop does the user have?", top_k=5, explain=True, min_score=0.3
    )
    reasons = {c.memory_id: c.drop_reason for c in response.candidates}
    assert [i.memory.id for i in response.items][:1] == [new]
    assert reasons[new] == memory_service_pb2.DROP_REASON_UNSPECIFIED
    assert reasons[old] == memory_service_pb2.DROP_REASON_SUPERSEDED
    assert reasons[expired_id] == memory_service_pb2.DROP_REASON_EXPIRED
    assert reasons[scoped] == memory_service_pb2.DROP_REASON_OTHER_SCOPE
    assert reasons[archived] == memory_service_pb2.DROP_REASON_INACTIVE
    assert reasons[unrelated] == memory_service_pb2.DROP_REASON_BELOW_THRESHOLD
    budgeted = await client.recall(
        user_id, "laptop", explain=True, min_score=-1, token_budget=45, skip_profile=True
    )
    over = [
        c
        for c in budgeted.candidates
        if c.drop_reason == memory_service_pb2.DROP_REASON_OVER_BUDGET
    ]
    assert over, "a tight budget leaves candidates out and says so"
    assert budgeted.token_estimate <= 45
    assert budgeted.items, "the frame is charged once, so one memory fits"
    plain = await client.recall(user_id, "laptop")
    assert list(plain.candidates) == []


async def test_duplicates_in_results_are_dropped(client: RecalldClient, user_id: str) -> None:
    # Different topics keep the write path from merging them; recall still shows one.
    a = (
        (
            await client.write(
                user_id, [memory("Standup at 9:30 every weekday", topic_key="team.standup")]
            )
        )
        .results[0]
        .id
    )
    b = (
        await client.write(
            user_id, [memory("Standup at 9:30 every weekday!", topic_key="meetings.standup")]
        )
    ).results[0]
    assert b.outcome == memory_service_pb2.WRITE_OUTCOME_CREATED
    response = await client.recall(user_id, "When is standup?", explain=True, min_score=-1)
    returned = [i.memory.id for i in response.items]
    assert len(set(returned) & {a, b.id}) == 1
    dropped = [
        c for c in response.candidates if c.drop_reason == memory_service_pb2.DROP_REASON_DUPLICATE
    ]
    assert dropped and dropped[0].duplicate_of in returned


async def test_scores_carry_a_breakdown_and_recency_never_buries_relevance(
    client: RecalldClient, user_id: str
) -> None:
    old_event = memory("The user ran the Beijing marathon", memory_pb2.MEMORY_TYPE_EVENT)
    old_event.occurred_at.FromSeconds(1_600_000_000)  # 2020
    new_fact = memory(
        "The user trains for marathons every weekend", memory_pb2.MEMORY_TYPE_FACT, importance=1.0
    )
    outcomes = [r.outcome for r in (await client.write(user_id, [old_event, new_fact])).results]
    assert outcomes == [memory_service_pb2.WRITE_OUTCOME_CREATED] * 2
    response = await client.recall(user_id, "marathon", min_score=-1)
    by_type = {i.memory.type: i for i in response.items}
    event, fact = by_type[memory_pb2.MEMORY_TYPE_EVENT], by_type[memory_pb2.MEMORY_TYPE_FACT]
    # Recency halves every 30 days but decides a tenth of the ranking at most: a
    # years-old event keeps 90% of its weight, a new fact all of it.
    assert event.breakdown.decay == pytest.approx(0.9, abs=1e-3)
    assert fact.breakdown.decay == pytest.approx(1.0, abs=1e-3)
    assert fact.breakdown.importance_weight == pytest.approx(1.25)
    assert 0 < event.breakdown.keyword_match <= 1
    # Decay by use counts from when a memory was written (or last recalled), not from
    # when it happened: the 2020 event was written seconds ago.
    assert event.breakdown.use_decay == pytest.approx(1.0, abs=1e-4)
    for item in response.items:
        b = item.breakdown
        assert item.score == pytest.approx(
            b.fused * b.decay * b.use_decay * b.importance_weight, rel=1e-5
        )
    assert response.items[0].memory.type == memory_pb2.MEMORY_TYPE_FACT


async def test_get_profile_checks_scope(client: RecalldClient, user_id: str) -> None:
    with pytest.raises(RecalldError) as caught:
        await client.get_profile("")
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT


async def test_time_range_filters_on_occurred_and_created(
    client: RecalldClient, user_id: str
) -> None:
    old = memory("The user moved to Chengdu", memory_pb2.MEMORY_TYPE_EVENT)
    old.occurred_at.FromSeconds(1_500_000_000)  # 2017
    old_id = (await client.write(user_id, [old])).results[0].id
    new_id = (
        (
            await client.write(
                user_id, [memory("The user moved to Xiamen", memory_pb2.MEMORY_TYPE_EVENT)]
            )
        )
        .results[0]
        .id
    )
    recent_only = memory_service_pb2.RecallRequest().occurred_after
    recent_only.FromSeconds(1_600_000_000)
    hits = await client.recall(
        user_id, "Where did the user move?", min_score=-1, occurred_after=recent_only
    )
    assert [i.memory.id for i in hits.items] == [new_id]
    stored_later = memory_service_pb2.RecallRequest().created_after
    stored_later.FromSeconds(4_000_000_000)  # nothing was stored after 2096
    none = await client.recall(
        user_id, "Where did the user move?", min_score=-1, created_after=stored_later
    )
    assert list(none.items) == []
    both = await client.recall(user_id, "Where did the user move?", min_score=-1)
    assert {i.memory.id for i in both.items} == {old_id, new_id}


@pytest.mark.parametrize(
    ("mode", "sequential"), [("hybrid", True), ("keyword", False), ("dense", False)]
)
async def test_benchmark_switches_give_the_same_answers(
    tmp_path: Path, embedder: MicroBatchingEmbedder, mode: str, sequential: bool
) -> None:
    running = await start_server(
        ServerConfig(
            port=0,
            data_dir=tmp_path,
            recall_mode=mode,
            recall_sequential=sequential,
            consolidate_interval_s=0,
        ),
        embedder=embedder,
    )
    try:
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant="switches") as c:
            ids = [
                r.id
                for r in (
                    await c.write(
                        "u",
                        [
                            memory("订单 SO-77120 已签收", memory_pb2.MEMORY_TYPE_EVENT),
                            memory("The user prefers window seats on long flights"),
                        ],
                    )
                ).results
            ]
            by_id = await c.recall("u", "SO-77120", top_k=1)
            assert [i.memory.id for i in by_id.items] == [ids[0]]
            assert (by_id.items[0].breakdown.dense == 0) == (mode == "keyword")
            assert (by_id.items[0].breakdown.keyword == 0) == (mode == "dense")
            if mode != "keyword":
                seats = await c.recall("u", "Where does the user like to sit on a plane?", top_k=1)
                assert [i.memory.id for i in seats.items] == [ids[1]]
    finally:
        await running.stop(grace_s=1)


async def test_recall_says_which_path_served(
    server: RunningServer, client: RecalldClient, user_id: str
) -> None:
    await client.write(user_id, [memory("The user's cat is called Miso")])
    plain = await client.recall(user_id, "What is the cat's name?")
    explained = await client.recall(user_id, "What is the cat's name?", explain=True)
    holds_users = server.memories.working_set.policy.budget_bytes > 0
    assert plain.source == (
        memory_service_pb2.RECALL_SOURCE_WORKING_SET
        if holds_users
        else memory_service_pb2.RECALL_SOURCE_STORAGE
    )
    # explain also shows superseded and archived memories, which only storage keeps
    assert explained.source == memory_service_pb2.RECALL_SOURCE_STORAGE
    assert [i.memory.id for i in plain.items] == [i.memory.id for i in explained.items]
