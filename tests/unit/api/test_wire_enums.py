"""Domain enums double as wire numbers (and storage codes): every member must mean the
same thing on the wire, so a renumbering on either side fails here."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_server.domain.core import model, recall_model

PAIRS: list[tuple[type[enum.IntEnum], Any, str]] = [
    (model.MemoryType, memory_pb2.MemoryType, "MEMORY_TYPE_"),
    (model.Tier, memory_pb2.MemoryTier, "MEMORY_TIER_"),
    (model.Status, memory_pb2.MemoryStatus, "MEMORY_STATUS_"),
    (model.WriteOutcome, memory_service_pb2.WriteOutcome, "WRITE_OUTCOME_"),
    (model.ForgetMode, memory_service_pb2.ForgetMode, "FORGET_MODE_"),
    (model.DropReason, memory_service_pb2.DropReason, "DROP_REASON_"),
    (recall_model.RecallSource, memory_service_pb2.RecallSource, "RECALL_SOURCE_"),
    (model.Operation, memory_service_pb2.MemoryOperation, "MEMORY_OPERATION_"),
    (model.Resolution, memory_service_pb2.ConflictResolution, "CONFLICT_RESOLUTION_"),
]


@pytest.mark.parametrize(("domain", "wire", "prefix"), PAIRS, ids=[p[2] for p in PAIRS])
def test_every_domain_member_has_the_same_number_on_the_wire(
    domain: type[enum.IntEnum], wire: Any, prefix: str
) -> None:
    for member in domain:
        assert wire.Value(prefix + member.name) == member.value, member
    names = wire.keys()  # an EnumTypeWrapper, not a dict: `in wire` would not iterate names
    wire_members = {name for name in names if not name.endswith("_UNSPECIFIED")}
    assert wire_members == {prefix + m.name for m in domain}
