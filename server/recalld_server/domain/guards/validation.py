"""Request validation: pure checks that name the offending field.

Limits are documented in the proto comments; keep the two in step.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError
from recalld_server.domain.core.ids import looks_like_id
from recalld_server.domain.core.model import UPDATABLE_FIELDS, ForgetTarget, MemoryPatch, NewMemory
from recalld_server.domain.core.recall_model import RecallQuery

MAX_CONTENT_CHARS = 8192
MAX_BATCH = 100
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 8
MAX_KEY_CHARS = 128
MAX_TOPIC_KEY_CHARS = 256
MAX_SOURCE_CHARS = 64
MAX_TOP_K = 100
MAX_FORGET_IDS = 1000
MAX_PAGE_SIZE = 500
MAX_REQUEST_ID_CHARS = 128
MAX_TOKEN_BUDGET = 1_000_000

_IDENT = re.compile(r"^[^\x00-\x1f\x7f]+$")


def check_identifier(
    value: str,
    field: str,
    *,
    required: bool,
    max_chars: int = MAX_KEY_CHARS,
    violations: list[FieldViolation],
) -> None:
    """User ids, scopes, sessions, topic keys: printable, bounded, trimmed."""
    if not value:
        if required:
            violations.append(FieldViolation(field, "is required"))
        return
    if len(value) > max_chars:
        violations.append(FieldViolation(field, f"must be at most {max_chars} characters"))
    elif not _IDENT.match(value) or value != value.strip():
        violations.append(
            FieldViolation(field, "must not contain control characters or surrounding spaces")
        )


def _metadata_depth(value: Any, depth: int = 0) -> int:
    if isinstance(value, Mapping):
        return max([depth + 1, *(_metadata_depth(v, depth + 1) for v in value.values())])
    if isinstance(value, list):
        return max([depth + 1, *(_metadata_depth(v, depth + 1) for v in value)])
    return depth


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Mapping):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    return False


def check_content(content: str, field: str, violations: list[FieldViolation]) -> None:
    """Content must be non-blank and within MAX_CONTENT_CHARS."""
    if not content.strip():
        violations.append(FieldViolation(field, "is required and must not be blank"))
    elif len(content) > MAX_CONTENT_CHARS:
        violations.append(FieldViolation(field, f"must be at most {MAX_CONTENT_CHARS} characters"))


def check_unit_interval(value: float | None, field: str, violations: list[FieldViolation]) -> None:
    """Importance and confidence are probabilities."""
    if value is not None and not (math.isfinite(value) and 0.0 <= value <= 1.0):
        violations.append(FieldViolation(field, "must be between 0 and 1"))


def check_tags(tags: Sequence[str], field: str, violations: list[FieldViolation]) -> None:
    """At most MAX_TAGS non-empty tags of at most MAX_TAG_CHARS."""
    if len(tags) > MAX_TAGS:
        violations.append(FieldViolation(field, f"must have at most {MAX_TAGS} tags"))
        return
    for i, tag in enumerate(tags):
        check_identifier(
            tag, f"{field}[{i}]", required=True, max_chars=MAX_TAG_CHARS, violations=violations
        )


def check_metadata(
    metadata: Mapping[str, Any], field: str, violations: list[FieldViolation]
) -> None:
    """A JSON object, bounded in size and depth, with finite numbers only."""
    if _has_non_finite(metadata):
        violations.append(FieldViolation(field, "numbers must be finite"))
        return
    if _metadata_depth(metadata) > MAX_METADATA_DEPTH:
        violations.append(FieldViolation(field, f"must nest at most {MAX_METADATA_DEPTH} levels"))
        return
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        violations.append(
            FieldViolation(field, f"must be at most {MAX_METADATA_BYTES} bytes as JSON")
        )


def check_new_memory(memory: NewMemory, field: str, violations: list[FieldViolation]) -> None:
    """Every rule a memory to be written must satisfy."""
    check_content(memory.content, f"{field}.content", violations)
    check_identifier(
        memory.agent_scope, f"{field}.agent_scope", required=False, violations=violations
    )
    check_identifier(
        memory.session_id, f"{field}.session_id", required=False, violations=violations
    )
    check_identifier(
        memory.topic_key,
        f"{field}.topic_key",
        required=False,
        max_chars=MAX_TOPIC_KEY_CHARS,
        violations=violations,
    )
    check_identifier(
        memory.source,
        f"{field}.source",
        required=False,
        max_chars=MAX_SOURCE_CHARS,
        violations=violations,
    )
    check_unit_interval(memory.importance, f"{field}.importance", violations)
    check_unit_interval(memory.confidence, f"{field}.confidence", violations)
    check_tags(memory.tags, f"{field}.tags", violations)
    check_metadata(memory.metadata, f"{field}.metadata", violations)
    if memory.occurred_at < 0:
        violations.append(FieldViolation(f"{field}.occurred_at", "must not be before 1970"))
    if memory.expire_at < 0:
        violations.append(FieldViolation(f"{field}.expire_at", "must not be before 1970"))


def validate_write(user_id: str, memories: Sequence[NewMemory], request_id: str) -> None:
    """Raises InvalidArgumentError listing every invalid field of a Write."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=True, violations=violations)
    if not memories:
        violations.append(FieldViolation("memories", "must contain at least one memory"))
    elif len(memories) > MAX_BATCH:
        violations.append(FieldViolation("memories", f"must contain at most {MAX_BATCH} memories"))
    else:
        for i, memory in enumerate(memories):
            check_new_memory(memory, f"memories[{i}]", violations)
    check_identifier(
        request_id,
        "request_id",
        required=False,
        max_chars=MAX_REQUEST_ID_CHARS,
        violations=violations,
    )
    if violations:
        raise InvalidArgumentError(violations)


def validate_recall(query: RecallQuery, dimension: int) -> None:
    """Raises InvalidArgumentError listing every invalid field of a Recall."""
    violations: list[FieldViolation] = []
    check_identifier(query.user_id, "user_id", required=True, violations=violations)
    has_text = bool(query.query.strip())
    has_vector = bool(query.query_vector)
    if has_text == has_vector:
        violations.append(
            FieldViolation("query", "exactly one of query and query_vector is required")
        )
    if len(query.query) > MAX_CONTENT_CHARS:
        violations.append(
            FieldViolation("query", f"must be at most {MAX_CONTENT_CHARS} characters")
        )
    if query.query_vector and len(query.query_vector) != dimension:
        violations.append(
            FieldViolation(
                "query_vector", f"must have {dimension} dimensions, got {len(query.query_vector)}"
            )
        )
    elif query.query_vector and not all(math.isfinite(x) for x in query.query_vector):
        violations.append(FieldViolation("query_vector", "values must be finite"))
    if not 1 <= query.top_k <= MAX_TOP_K:
        violations.append(FieldViolation("top_k", f"must be between 1 and {MAX_TOP_K}"))
    if not 0 <= query.token_budget <= MAX_TOKEN_BUDGET:
        violations.append(
            FieldViolation("token_budget", f"must be between 0 and {MAX_TOKEN_BUDGET}")
        )
    if query.min_score is not None and not (
        math.isfinite(query.min_score) and -1.0 <= query.min_score <= 1.0
    ):
        violations.append(FieldViolation("min_score", "must be between -1 and 1"))
    check_identifier(query.session_id, "session_id", required=False, violations=violations)
    check_identifier(query.agent_scope, "agent_scope", required=False, violations=violations)
    for i, scope in enumerate(sorted(query.extra_agent_scopes)):
        check_identifier(scope, f"extra_agent_scopes[{i}]", required=True, violations=violations)
    check_tags(sorted(query.tags), "tags", violations)
    if (
        query.occurred_after
        and query.occurred_before
        and (query.occurred_after >= query.occurred_before)
    ):
        violations.append(FieldViolation("occurred_before", "must be after occurred_after"))
    if (
        query.created_after
        and query.created_before
        and (query.created_after >= query.created_before)
    ):
        violations.append(FieldViolation("created_before", "must be after created_after"))
    if violations:
        raise InvalidArgumentError(violations)


def check_memory_id(memory_id: str, field: str, violations: list[FieldViolation]) -> None:
    """Ids are required; a malformed one is an argument error, not a lookup."""
    if not memory_id:
        violations.append(FieldViolation(field, "is required"))
    elif not looks_like_id(memory_id):
        violations.append(FieldViolation(field, "is not a recalld memory id"))


def validate_ids(user_id: str, ids: Sequence[str], field: str, max_ids: int) -> None:
    """Raises InvalidArgumentError for a missing user or bad id list."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=True, violations=violations)
    if not ids:
        violations.append(FieldViolation(field, "must contain at least one id"))
    elif len(ids) > max_ids:
        violations.append(FieldViolation(field, f"must contain at most {max_ids} ids"))
    else:
        for i, memory_id in enumerate(ids):
            check_memory_id(memory_id, f"{field}[{i}]", violations)
    if violations:
        raise InvalidArgumentError(violations)


def check_page_size(page_size: int, violations: list[FieldViolation]) -> None:
    """0 (the default) up to MAX_PAGE_SIZE."""
    if not 0 <= page_size <= MAX_PAGE_SIZE:
        violations.append(FieldViolation("page_size", f"must be between 0 and {MAX_PAGE_SIZE}"))


def validate_one_id(user_id: str, memory_id: str, field: str) -> None:
    """A user id and one memory id (Get, History)."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=True, violations=violations)
    check_memory_id(memory_id, field, violations)
    if violations:
        raise InvalidArgumentError(violations)


def validate_listing(user_id: str, page_size: int, *, user_required: bool = True) -> None:
    """A user id (optional for tenant-wide listings) and a page size."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=user_required, violations=violations)
    check_page_size(page_size, violations)
    if violations:
        raise InvalidArgumentError(violations)


def validate_patch(user_id: str, memory_id: str, patch: MemoryPatch) -> None:
    """An Update: the mask names updatable fields, and each named field is valid."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=True, violations=violations)
    check_memory_id(memory_id, "memory.id", violations)
    if not patch.paths:
        violations.append(FieldViolation("update_mask", "must name at least one field"))
    for path in sorted(patch.paths - UPDATABLE_FIELDS):
        violations.append(FieldViolation("update_mask", f"{path!r} cannot be updated"))
    paths = patch.paths
    if "content" in paths:
        check_content(patch.content, "memory.content", violations)
    if "type" in paths and patch.type is None:
        violations.append(FieldViolation("memory.type", "is required"))
    if "importance" in paths:
        check_unit_interval(patch.importance, "memory.importance", violations)
    if "confidence" in paths:
        check_unit_interval(patch.confidence, "memory.confidence", violations)
    if "tags" in paths:
        check_tags(patch.tags, "memory.tags", violations)
    if "metadata" in paths:
        check_metadata(patch.metadata, "memory.metadata", violations)
    for name, limit in (
        ("topic_key", MAX_TOPIC_KEY_CHARS),
        ("source", MAX_SOURCE_CHARS),
        ("agent_scope", MAX_KEY_CHARS),
        ("session_id", MAX_KEY_CHARS),
    ):
        if name in paths:
            check_identifier(
                getattr(patch, name),
                f"memory.{name}",
                required=False,
                max_chars=limit,
                violations=violations,
            )
    if violations:
        raise InvalidArgumentError(violations)


def validate_forget(user_id: str, target: ForgetTarget) -> None:
    """Exactly one target; the user (or, tenant-wide, none); bounded ids; a real selector."""
    chosen = [
        name
        for name, on in (
            ("ids", bool(target.ids)),
            ("topic_key", bool(target.topic_key)),
            ("selector", target.selector is not None),
            ("session_id", bool(target.session_id)),
            ("all_of_user", target.all_of_user),
            ("whole_tenant", target.whole_tenant),
        )
        if on
    ]
    violations: list[FieldViolation] = []
    if len(chosen) != 1:
        violations.append(
            FieldViolation(
                "ids",
                "set exactly one of ids, topic_key, selector, session_id, all_of_user, "
                "whole_tenant",
            )
        )
    if target.whole_tenant:
        if user_id:
            violations.append(FieldViolation("user_id", "must be empty with whole_tenant"))
    else:
        check_identifier(user_id, "user_id", required=True, violations=violations)
    if len(target.ids) > MAX_FORGET_IDS:
        violations.append(FieldViolation("ids", f"must contain at most {MAX_FORGET_IDS} ids"))
    else:
        for i, memory_id in enumerate(target.ids):
            check_memory_id(memory_id, f"ids[{i}]", violations)
    check_identifier(
        target.topic_key,
        "topic_key",
        required=False,
        max_chars=MAX_TOPIC_KEY_CHARS,
        violations=violations,
    )
    check_identifier(target.session_id, "session_id", required=False, violations=violations)
    if target.selector is not None:
        if target.selector.is_empty():
            violations.append(FieldViolation("selector", "must set at least one condition"))
        check_tags(sorted(target.selector.tags), "selector.tags", violations)
    if violations:
        raise InvalidArgumentError(violations)
