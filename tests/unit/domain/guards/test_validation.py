import pytest

from recalld_server.domain.core.errors import InvalidArgumentError
from recalld_server.domain.core.model import MemoryType, NewMemory
from recalld_server.domain.core.recall_model import RecallQuery
from recalld_server.domain.guards.validation import validate_recall, validate_write


def _fields(error: pytest.ExceptionInfo[InvalidArgumentError]) -> set[str]:
    return {v.field for v in error.value.violations}


def test_valid_write_passes() -> None:
    validate_write(
        "u1",
        [NewMemory("hello", MemoryType.FACT, tags=["a"], metadata={"k": [1, 2, {"x": None}]})],
        "req-1",
    )


def test_write_violations_name_fields() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        validate_write(
            "", [NewMemory("", MemoryType.FACT, importance=2.0, metadata={"f": float("nan")})], ""
        )
    assert _fields(caught) == {
        "user_id",
        "memories[0].content",
        "memories[0].importance",
        "memories[0].metadata",
    }


def test_control_characters_and_padding_rejected_in_identifiers() -> None:
    for bad in ["a\nb", " padded", "tab\t"]:
        with pytest.raises(InvalidArgumentError) as caught:
            validate_write(bad, [NewMemory("x", MemoryType.FACT)], "")
        assert _fields(caught) == {"user_id"}


def test_recall_rules() -> None:
    validate_recall(RecallQuery(user_id="u", query="q"), 512)
    validate_recall(RecallQuery(user_id="u", query_vector=[0.0] * 512), 512)
    with pytest.raises(InvalidArgumentError) as caught:
        validate_recall(
            RecallQuery(
                user_id="u", query="q", top_k=0, min_score=2, occurred_after=5, occurred_before=5
            ),
            512,
        )
    assert _fields(caught) == {"top_k", "min_score", "occurred_before"}
