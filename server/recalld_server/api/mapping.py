"""Proto <-> domain translation. Unknown enum values and bad times fail here, by field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from google.protobuf import struct_pb2, timestamp_pb2

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_server.domain.core import model, recall_model
from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError
from recalld_server.domain.core.sensitive_data import Action, Category, Finding
from recalld_server.domain.guards import validation

E = TypeVar("E", model.MemoryType, model.Tier, model.Status, model.ForgetMode, model.Resolution)

MAX_TIMESTAMP_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z, the proto Timestamp limit


def enum_value(
    enum_type: type[E], raw: int, field: str, *, required: bool, violations: list[FieldViolation]
) -> E | None:
    """Maps a proto enum number to the domain enum; 0 (unspecified) is None."""
    if raw == 0:
        if required:
            violations.append(FieldViolation(field, "is required"))
        return None
    try:
        return enum_type(raw)
    except ValueError:
        violations.append(FieldViolation(field, f"unknown value {raw}"))
        return None


def enum_set(
    enum_type: type[E], raws: Iterable[int], field: str, violations: list[FieldViolation]
) -> frozenset[E]:
    """A repeated enum filter; unspecified or unknown values are errors."""
    out: set[E] = set()
    for i, raw in enumerate(raws):
        value = enum_value(enum_type, raw, f"{field}[{i}]", required=True, violations=violations)
        if value is not None:
            out.add(value)
    return frozenset(out)


def timestamp_ms(message: Any, name: str, field: str, violations: list[FieldViolation]) -> int:
    """A Timestamp field in ms since the epoch; unset is 0."""
    if not message.HasField(name):
        return 0
    ts: timestamp_pb2.Timestamp = getattr(message, name)
    if not 0 <= ts.nanos < 1_000_000_000:
        violations.append(FieldViolation(field, "nanos must be in 0..999999999"))
        return 0
    ms = ts.seconds * 1000 + ts.nanos // 1_000_000
    if not 0 <= ms <= MAX_TIMESTAMP_MS:
        violations.append(FieldViolation(field, "must be between 1970 and 9999"))
        return 0
    return ms


def set_timestamp(target: timestamp_pb2.Timestamp, ms: int) -> None:
    """Fills a Timestamp from ms since the epoch."""
    target.seconds, rem = divmod(ms, 1000)
    target.nanos = rem * 1_000_000


def struct_to_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    """Struct -> plain JSON object, numbers as floats.

    Not json_format.MessageToDict: that raises on NaN and infinities, which must
    reach validation (and come back as INVALID_ARGUMENT), not fail the call.
    """
    return {key: _plain(item) for key, item in value.fields.items()}


def _plain(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return struct_to_dict(value.struct_value)
    if kind == "list_value":
        return [_plain(item) for item in value.list_value.values]
    if kind == "number_value":
        return value.number_value
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None  # null_value, or no kind set


def new_memory_from_proto(
    message: memory_pb2.Memory, field: str, violations: list[FieldViolation]
) -> model.NewMemory | None:
    """The writable part of a Memory message; output-only fields are ignored.

    None when its type is missing or unknown (the violation is appended).
    """
    memory_type = enum_value(
        model.MemoryType, message.type, f"{field}.type", required=True, violations=violations
    )
    tier = enum_value(
        model.Tier, message.tier, f"{field}.tier", required=False, violations=violations
    )
    occurred = timestamp_ms(message, "occurred_at", f"{field}.occurred_at", violations)
    expire = timestamp_ms(message, "expire_at", f"{field}.expire_at", violations)
    if memory_type is None:
        return None
    return _new_memory(message, memory_type, tier, occurred, expire)


def _new_memory(
    message: memory_pb2.Memory,
    memory_type: model.MemoryType,
    tier: model.Tier | None,
    occurred: int,
    expire: int,
) -> model.NewMemory:
    return model.NewMemory(
        content=message.content,
        type=memory_type,
        tier=tier,
        agent_scope=message.agent_scope,
        session_id=message.session_id,
        topic_key=message.topic_key,
        importance=message.importance if message.HasField("importance") else None,
        confidence=message.confidence if message.HasField("confidence") else None,
        source=message.source,
        tags=list(message.tags),
        metadata=struct_to_dict(message.metadata),
        occurred_at=occurred,
        expire_at=expire,
    )


def write_from_proto(request: memory_service_pb2.WriteRequest) -> list[model.NewMemory]:
    """The memories of a WriteRequest.

    Raises InvalidArgumentError listing every violation of the request: when an enum
    or a time cannot be read, the domain's rules (content, user_id, sizes…) are
    checked too, so one answer names every problem (a missing type does not hide an
    empty content).
    """
    violations: list[FieldViolation] = []
    out = []
    for i, message in enumerate(request.memories):
        memory = new_memory_from_proto(message, f"memories[{i}]", violations)
        if memory is not None:
            out.append(memory)
    if violations:
        readable = [
            # Any type will do: the domain's rules below do not depend on it.
            _new_memory(message, model.MemoryType.FACT, None, 0, 0)
            for message in request.memories
        ]
        try:
            validation.validate_write(request.user_id, readable, request.request_id)
        except InvalidArgumentError as error:
            violations.extend(error.violations)
        raise InvalidArgumentError(violations)
    return out


def recall_from_proto(request: memory_service_pb2.RecallRequest) -> recall_model.RecallQuery:
    """A RecallQuery; raises InvalidArgumentError on enum/time errors."""
    violations: list[FieldViolation] = []
    types = enum_set(model.MemoryType, request.types, "types", violations)
    tiers = enum_set(model.Tier, request.tiers, "tiers", violations)
    after = timestamp_ms(request, "occurred_after", "occurred_after", violations)
    before = timestamp_ms(request, "occurred_before", "occurred_before", violations)
    created_after = timestamp_ms(request, "created_after", "created_after", violations)
    created_before = timestamp_ms(request, "created_before", "created_before", violations)
    if violations:
        raise InvalidArgumentError(violations)
    return recall_model.RecallQuery(
        user_id=request.user_id,
        query=request.query,
        query_vector=list(request.query_vector) or None,
        top_k=request.top_k or 10,
        token_budget=request.token_budget,
        types=types,
        tiers=tiers,
        tags=frozenset(request.tags),
        session_id=request.session_id,
        agent_scope=request.agent_scope,
        extra_agent_scopes=frozenset(request.extra_agent_scopes),
        occurred_after=after,
        occurred_before=before,
        min_score=request.min_score if request.HasField("min_score") else None,
        explain=request.explain,
        created_after=created_after,
        created_before=created_before,
        skip_profile=request.skip_profile,
    )


def patch_from_proto(request: memory_service_pb2.UpdateRequest) -> model.MemoryPatch:
    """The field-masked change of an UpdateRequest."""
    violations: list[FieldViolation] = []
    message = request.memory
    paths = frozenset(request.update_mask.paths)
    memory_type = tier = None
    if "type" in paths:
        memory_type = enum_value(
            model.MemoryType, message.type, "memory.type", required=True, violations=violations
        )
    if "tier" in paths:
        tier = enum_value(
            model.Tier, message.tier, "memory.tier", required=False, violations=violations
        )
    expire = timestamp_ms(message, "expire_at", "memory.expire_at", violations)
    occurred = timestamp_ms(message, "occurred_at", "memory.occurred_at", violations)
    if violations:
        raise InvalidArgumentError(violations)
    return model.MemoryPatch(
        paths=paths,
        content=message.content,
        type=memory_type,
        tier=tier,
        topic_key=message.topic_key,
        importance=message.importance,
        confidence=message.confidence,
        source=message.source,
        tags=list(message.tags),
        metadata=struct_to_dict(message.metadata),
        expire_at=expire,
        occurred_at=occurred,
        agent_scope=message.agent_scope,
        session_id=message.session_id,
    )


def list_filters_from_proto(
    request: memory_service_pb2.ListRequest,
) -> tuple[frozenset[model.Status], frozenset[model.MemoryType]]:
    """Status and type filters of a ListRequest."""
    violations: list[FieldViolation] = []
    statuses = enum_set(model.Status, request.statuses, "statuses", violations)
    types = enum_set(model.MemoryType, request.types, "types", violations)
    if violations:
        raise InvalidArgumentError(violations)
    return statuses, types


def forget_mode_from_proto(raw: int) -> model.ForgetMode:
    """The forget mode; unspecified means SOFT."""
    violations: list[FieldViolation] = []
    mode = enum_value(model.ForgetMode, raw, "mode", required=False, violations=violations)
    if violations:
        raise InvalidArgumentError(violations)
    return mode or model.ForgetMode.SOFT


def memory_to_proto(
    memory: model.Memory, target: memory_pb2.Memory | None = None
) -> memory_pb2.Memory:
    """A domain memory as a proto Memory (the tenant is never exposed)."""
    out = target if target is not None else memory_pb2.Memory()
    out.id = memory.id
    out.user_id = memory.user_id
    out.agent_scope = memory.agent_scope
    out.session_id = memory.session_id
    out.type = int(memory.type)  # type: ignore[assignment]
    out.tier = int(memory.tier)  # type: ignore[assignment]
    out.status = int(memory.status)  # type: ignore[assignment]
    out.topic_key = memory.topic_key
    out.content = memory.content
    out.importance = memory.importance
    out.confidence = memory.confidence
    out.source = memory.source
    out.tags.extend(memory.tags)
    if memory.metadata:
        out.metadata.update(memory.metadata)
    out.access_count = memory.access_count
    for name in (
        "created_at",
        "occurred_at",
        "updated_at",
        "expire_at",
        "valid_to",
        "last_accessed_at",
    ):
        value = getattr(memory, name)
        if value:
            set_timestamp(getattr(out, name), value)
    out.supersedes_id = memory.supersedes_id
    out.superseded_by_id = memory.superseded_by_id
    out.version = memory.version
    out.etag = memory.etag
    out.embedding_model = memory.embedding_model
    out.content_hash = memory.content_hash
    return out


def write_results_to_proto(results: list[model.WriteResult]) -> memory_service_pb2.WriteResponse:
    """WriteResponse in request order."""
    response = memory_service_pb2.WriteResponse()
    for result in results:
        item = response.results.add()
        item.id = result.memory.id
        item.outcome = int(result.outcome)  # type: ignore[assignment]
        item.related_id = result.related_id
        memory_to_proto(result.memory, item.memory)
        item.sensitive_data.extend(findings_to_proto(result.sensitive_data))
    return response


_CATEGORIES = {
    category: memory_pb2.SensitiveDataCategory.Value(f"SENSITIVE_DATA_CATEGORY_{category.name}")
    for category in Category
}
_ACTIONS = {
    Action.MASK: memory_pb2.SENSITIVE_DATA_ACTION_MASKED,
    Action.ALLOW: memory_pb2.SENSITIVE_DATA_ACTION_ALLOWED,
}


def findings_to_proto(findings: Iterable[Finding]) -> list[memory_pb2.SensitiveDataFinding]:
    """What the sensitive-data policy found and did, without the values."""
    return [
        memory_pb2.SensitiveDataFinding(
            field=finding.field,
            category=_CATEGORIES[finding.category],
            action=_ACTIONS[finding.action],
            count=finding.count,
        )
        for finding in findings
        if finding.action in _ACTIONS  # a refused value never reaches a response
    ]


def recall_result_to_proto(result: recall_model.RecallResult) -> memory_service_pb2.RecallResponse:
    """RecallResponse, best first."""
    response = memory_service_pb2.RecallResponse(
        token_estimate=result.token_estimate,
        degraded_stages=result.degraded_stages,
        context=result.context,
        source=memory_service_pb2.RecallSource.ValueType(result.source),
    )
    for scored in result.items:
        item = response.items.add()
        memory_to_proto(scored.memory, item.memory)
        item.score = scored.score
        item.dense_score = scored.dense_score
        breakdown_to_proto(scored.breakdown, item.breakdown)
    if result.profile is not None:
        profile_to_proto(result.profile, response.profile)
    for candidate in result.candidates:
        out = response.candidates.add(
            memory_id=candidate.memory.id,
            content=candidate.memory.content,
            score=candidate.breakdown.final,
            duplicate_of=candidate.duplicate_of,
            drop_reason=int(candidate.drop_reason or 0),
        )
        breakdown_to_proto(candidate.breakdown, out.breakdown)
    return response


def breakdown_to_proto(
    breakdown: recall_model.ScoreBreakdown, target: memory_service_pb2.ScoreBreakdown
) -> None:
    """Fills a ScoreBreakdown."""
    target.dense = breakdown.dense
    target.keyword = breakdown.keyword
    target.fused = breakdown.fused
    target.decay = breakdown.decay
    target.importance_weight = breakdown.importance_weight
    target.keyword_match = breakdown.keyword_match
    target.use_decay = breakdown.use_decay


def profile_to_proto(profile: recall_model.Profile, target: memory_service_pb2.Profile) -> None:
    """Fills a Profile."""
    target.from_cache = profile.from_cache
    for memory in profile.memories:
        memory_to_proto(memory, target.memories.add())


def forget_target_from_proto(request: memory_service_pb2.ForgetRequest) -> model.ForgetTarget:
    """Which memories a ForgetRequest names."""
    selector = None
    if request.HasField("selector"):
        violations: list[FieldViolation] = []
        message = request.selector
        selector = model.Selector(
            types=enum_set(model.MemoryType, message.types, "selector.types", violations),
            tags=frozenset(message.tags),
            session_id=message.session_id,
            occurred_after=timestamp_ms(
                message, "occurred_after", "selector.occurred_after", violations
            ),
            occurred_before=timestamp_ms(
                message, "occurred_before", "selector.occurred_before", violations
            ),
        )
        if violations:
            raise InvalidArgumentError(violations)
    return model.ForgetTarget(
        ids=list(request.ids),
        topic_key=request.topic_key,
        selector=selector,
        all_of_user=request.all_of_user,
        whole_tenant=request.whole_tenant,
        session_id=request.session_id,
    )


def resolution_from_proto(raw: int) -> model.Resolution | None:
    """The conflict resolution; unspecified is None (the domain rejects it)."""
    violations: list[FieldViolation] = []
    resolution = enum_value(
        model.Resolution, raw, "resolution", required=False, violations=violations
    )
    if violations:
        raise InvalidArgumentError(violations)
    return resolution


def history_to_proto(entries: list[model.HistoryEntry]) -> memory_service_pb2.HistoryResponse:
    """HistoryResponse, oldest first."""
    response = memory_service_pb2.HistoryResponse()
    for entry in entries:
        version = response.versions.add()
        memory_to_proto(entry.memory, version.memory)
        version.operation = int(entry.operation)  # type: ignore[assignment]
        version.changed_fields.extend(entry.changed_fields)
        set_timestamp(version.changed_at, entry.changed_at)
        version.related_id = entry.related_id
    return response


def conflict_to_proto(conflict: model.Conflict, target: memory_service_pb2.Conflict) -> None:
    """Fills a Conflict message."""
    memory_to_proto(conflict.proposed, target.proposed)
    if conflict.existing is not None:
        memory_to_proto(conflict.existing, target.existing)


def report_to_proto(report: model.ConsolidationReport) -> memory_service_pb2.ConsolidateResponse:
    """ConsolidateResponse."""
    response = memory_service_pb2.ConsolidateResponse(
        expired_ids=report.expired_ids,
        demoted_ids=report.demoted_ids,
        purged_ids=report.purged_ids,
        access_stats_flushed=report.access_stats_flushed,
        users_scanned=report.users_scanned,
        memories_scanned=report.memories_scanned,
    )
    for kept, merged, similarity in report.merged:
        response.merged.add(kept_id=kept, merged_id=merged, similarity=similarity)
    for core, other, similarity, reason in report.contradictions:
        response.contradictions.add(
            core_id=core, other_id=other, similarity=similarity, reason=reason
        )
    return response
