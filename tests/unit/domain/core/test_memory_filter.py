"""MemoryFilter.reason: the one in-process meaning of a filter, in the words explain uses."""

from __future__ import annotations

import dataclasses

import pytest

from recalld_server.domain.core.model import DropReason, Memory, MemoryFilter, MemoryType, Status

NOW = 1_800_000_000_000
DAY = 86_400_000

RECALL = MemoryFilter(
    "t",
    "u",
    statuses=frozenset({Status.ACTIVE}),
    types=frozenset({MemoryType.FACT}),
    scopes=frozenset({"", "bot"}),
    tags=frozenset({"work"}),
    occurred_after=NOW - 10 * DAY,
    unexpired_at=NOW,
)
PASSING = Memory(
    id="m1",
    tenant_id="t",
    user_id="u",
    content="The user works at Globex",
    type=MemoryType.FACT,
    tags=["work", "job"],
    occurred_at=NOW - DAY,
    expire_at=NOW + DAY,
)


def _with(**fields: object) -> Memory:
    return dataclasses.replace(PASSING, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("memory", "reason"),
    [
        (PASSING, None),
        (_with(status=Status.SUPERSEDED), DropReason.SUPERSEDED),
        (_with(status=Status.ARCHIVED), DropReason.INACTIVE),
        (_with(status=Status.DRAFT), DropReason.INACTIVE),
        (_with(status=Status.CONFLICT), DropReason.INACTIVE),
        (_with(expire_at=NOW), DropReason.EXPIRED),
        (_with(expire_at=0), None),
        (_with(agent_scope="other-bot"), DropReason.OTHER_SCOPE),
        (_with(agent_scope="bot"), None),
        (_with(type=MemoryType.EVENT), DropReason.FILTERED),
        (_with(tags=["job"]), DropReason.FILTERED),
        (_with(occurred_at=NOW - 11 * DAY), DropReason.FILTERED),
        (_with(user_id="v"), DropReason.FILTERED),
        (_with(tenant_id="t2"), DropReason.FILTERED),
        # The first failing test names the reason, in the order explain gives them.
        (_with(status=Status.SUPERSEDED, expire_at=NOW, agent_scope="x"), DropReason.SUPERSEDED),
        (_with(expire_at=NOW, agent_scope="x", type=MemoryType.EVENT), DropReason.EXPIRED),
        (_with(agent_scope="x", type=MemoryType.EVENT), DropReason.OTHER_SCOPE),
    ],
)
def test_the_reason_is_the_first_condition_the_memory_fails(
    memory: Memory, reason: DropReason | None
) -> None:
    assert RECALL.reason(memory) == reason
    assert RECALL.matches(memory) is (reason is None)


def test_an_empty_filter_admits_every_memory_of_its_tenant() -> None:
    assert MemoryFilter("t", None).reason(_with(status=Status.ARCHIVED, expire_at=1)) is None
    assert MemoryFilter("t", None).reason(_with(tenant_id="t2")) is DropReason.FILTERED


def test_fields_recall_never_sets_still_fail_as_filtered() -> None:
    assert MemoryFilter("t", "u", topic_keys=frozenset({"job"})).reason(PASSING) is (
        DropReason.FILTERED
    )
    assert MemoryFilter("t", "u", after_id="m1").reason(PASSING) is DropReason.FILTERED
    assert MemoryFilter("t", "u", expired_at=NOW).reason(PASSING) is DropReason.FILTERED
