"""Sensitive data never reaches storage: Write, Update, history and duplicates on the masked
text, refusals that store nothing, and per-tenant policy, on Milvus Lite and the in-memory
adapter with the real model."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest

from recalld_server.domain.core.errors import InvalidArgumentError
from recalld_server.domain.core.model import (
    MemoryFilter,
    MemoryPatch,
    MemoryType,
    NewMemory,
    Principal,
    WriteOutcome,
)
from recalld_server.domain.core.ports import HistoryStore, VectorStore
from recalld_server.domain.core.recall_model import RecallQuery
from recalld_server.domain.core.sensitive_data import Action, Category
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.sensitive.policy import policy_from_json
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from tests.integration.domain.in_memory import in_memory_backends
from tests.integration.domain.stores import BACKENDS, open_stores

CARD = "4111 1111 1111 1111"
KEY = "sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789"
OTHER_KEY = "sk-proj-Zz9yXw8VuT7sRq6PoN5mLk4JiH3gFe2DcB1a"
SHOP = Principal("shop")
BANK = Principal("bank")  # refuses card numbers and masks e-mail addresses
POLICY = policy_from_json('{"tenants": {"bank": {"card_number": "reject", "email": "mask"}}}')


@dataclasses.dataclass
class World:
    service: MemoryService
    store: VectorStore
    history: HistoryStore


@pytest.fixture(scope="module", params=BACKENDS)
async def world(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    embedder: MicroBatchingEmbedder,
) -> AsyncIterator[World]:
    store, history, requests = await open_stores(
        request.param, tmp_path_factory.mktemp("sensitive"), embedder
    )
    backends = dataclasses.replace(
        in_memory_backends(embedder), store=store, history=history, requests=requests
    )
    profiles = ProfileService(store, backends.profile_cache, backends.clock)
    memories = UserMemories(backends, profiles.invalidate)
    service = MemoryService(backends, profiles, memories, policy=Policy(sensitive_data=POLICY))
    yield World(service, store, history)
    await store.close()


async def _stored_contents(world: World, principal: Principal, user: str) -> list[str]:
    rows = await world.store.find(MemoryFilter(principal.tenant_id, user), 100)
    return [m.content for m in rows]


async def test_write_stores_history_and_dedupes_the_masked_text(world: World) -> None:
    user = "u-write"
    [first] = await world.service.write(
        SHOP,
        user,
        [
            NewMemory(
                f"The user's card is {CARD}; their OpenAI key is {KEY}",
                MemoryType.FACT,
                metadata={"note": "backup password: Hunter22!x", "count": 3},
            )
        ],
    )
    masked = "The user's card is [CARD ••••1111]; their OpenAI key is [API_KEY]"
    assert first.outcome is WriteOutcome.CREATED
    assert first.memory.content == masked
    assert first.memory.metadata == {"note": "backup password: [PASSWORD]", "count": 3}
    assert {(f.field, f.category, f.action) for f in first.sensitive_data} == {
        ("memories[0].content", Category.CARD_NUMBER, Action.MASK),
        ("memories[0].content", Category.API_KEY, Action.MASK),
        ("memories[0].metadata.note", Category.PASSWORD, Action.MASK),
    }
    [stored] = await world.store.get(SHOP.tenant_id, [first.memory.id])
    assert stored.content == masked and "Hunter22" not in str(stored.metadata)
    versions = await world.service.history(SHOP, user, first.memory.id)
    assert all(CARD not in v.memory.content and KEY not in v.memory.content for v in versions)
    # The same card written another way is the same memory once masked.
    [again] = await world.service.write(
        SHOP,
        user,
        [
            NewMemory(
                f"The user's card is {CARD.replace(' ', '-')}; their OpenAI key is {OTHER_KEY}",
                MemoryType.FACT,
            )
        ],
    )
    assert again.outcome is WriteOutcome.DUPLICATE and again.memory.id == first.memory.id
    # A recall query holding the card finds the memory, and is itself masked first.
    result = await world.service.recall(SHOP, RecallQuery(user_id=user, query=f"card {CARD}"))
    assert result.items and result.items[0].memory.id == first.memory.id


async def test_update_masks_the_new_content(world: World) -> None:
    user = "u-update"
    [written] = await world.service.write(
        SHOP, user, [NewMemory("The user's wifi is called HomeNet", MemoryType.FACT)]
    )
    updated = await world.service.update(
        SHOP,
        user,
        written.memory.id,
        written.memory.etag,
        MemoryPatch(frozenset({"content"}), content="The wifi HomeNet password is Tr0ub4dor&3"),
    )
    assert updated.memory.content == "The wifi HomeNet password is [PASSWORD]"
    assert [(f.category, f.count) for f in updated.sensitive_data] == [(Category.PASSWORD, 1)]
    assert await _stored_contents(world, SHOP, user) == [updated.memory.content]


async def test_a_refused_batch_stores_nothing_and_names_every_field(world: World) -> None:
    user = "u-refused"
    batch = [
        NewMemory("The user likes hiking", MemoryType.PREFERENCE),
        NewMemory(f"Corporate card {CARD}", MemoryType.FACT),
        NewMemory("Backup card 5555-5555-5555-4444", MemoryType.FACT),
    ]
    with pytest.raises(InvalidArgumentError) as refused:
        await world.service.write(BANK, user, batch)
    assert [(v.field, v.reason) for v in refused.value.violations] == [
        ("memories[1].content", "SENSITIVE_DATA"),
        ("memories[2].content", "SENSITIVE_DATA"),
    ]
    assert CARD not in str(refused.value) and "4444" not in str(refused.value)
    assert await _stored_contents(world, BANK, user) == []
    # The same batch is masked for the shop, whose policy is the server's.
    written = await world.service.write(SHOP, user, batch)
    assert [r.memory.content for r in written[1:]] == [
        "Corporate card [CARD ••••1111]",
        "Backup card [CARD ••••4444]",
    ]


async def test_contact_details_follow_each_tenants_policy(world: World) -> None:
    user = "u-contact"
    text = "The user's e-mail is li.wei@example.com and phone +1 415 555 0132"
    [shop] = await world.service.write(SHOP, user, [NewMemory(text, MemoryType.FACT)])
    [bank] = await world.service.write(BANK, user, [NewMemory(text, MemoryType.FACT)])
    assert shop.memory.content == text
    assert {f.action for f in shop.sensitive_data} == {Action.ALLOW}
    assert bank.memory.content == ("The user's e-mail is [EMAIL] and phone +1 415 555 0132")
