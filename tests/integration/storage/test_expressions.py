"""The one builder of Milvus string literals, property-tested against Milvus Lite.

For any string, `quote` either refuses it as a client error or produces a literal
that matches exactly that string, never another row and never a storage error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymilvus import DataType, MilvusClient

from recalld_server.domain.core.errors import InvalidArgumentError
from recalld_server.storage.expressions import literal_problem, quote

HOSTILE = st.one_of(
    st.text(max_size=40),
    st.text(alphabet="\"\\'` \t\n[](){}=!<>,;:%_*&|$#@\x00\x7f\u2028\ud800", max_size=12),
    st.sampled_from(['" or key != "', "\\", '\\"', "'", "中文", "emoji😀", "a\\u0041"]),
)
NEIGHBOURS = ["", "a", "plain", '"', "\\", "x" * 40]


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClient]:
    path: Path = tmp_path_factory.mktemp("expressions") / "milvus.db"
    client = MilvusClient(uri=str(path))
    schema = client.create_schema(auto_id=False)
    schema.add_field("key", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=1024)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    params = client.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_collection("t", schema=schema, index_params=params)
    client.insert("t", [{"key": i, "text": t, "v": [0.0, 0.0]} for i, t in enumerate(NEIGHBOURS)])
    yield client
    client.close()


_next_key = iter(range(1_000, 10**9))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=HOSTILE)
@example(value="tab\there")
@example(value="nul\x00")
@example(value="\ud800")
@example(value='" or key != "')
def test_a_literal_matches_exactly_its_string_or_is_refused(lite: MilvusClient, value: str) -> None:
    if literal_problem(value) is not None:
        with pytest.raises(InvalidArgumentError):
            quote(value)
        return
    key = next(_next_key)
    lite.insert("t", [{"key": key, "text": value, "v": [0.0, 0.0]}])
    rows = lite.query(
        "t", filter=f"text == {quote(value)}", output_fields=["key", "text"], limit=100
    )
    assert {r["text"] for r in rows} == {value}
    assert key in {r["key"] for r in rows}
    inside = lite.query(
        "t", filter=f"text in [{quote(value)}, {quote('plain')}]", output_fields=["text"]
    )
    assert {r["text"] for r in inside} <= {value, "plain"}


def test_only_control_characters_and_surrogates_are_refused() -> None:
    assert literal_problem('quotes " and \\ and 中文 😀') is None
    for bad in ("\t", "\n", "\x00", "\x7f", "\ud800"):
        assert literal_problem(f"a{bad}b") is not None
    assert quote('a"b') == json.dumps('a"b', ensure_ascii=False)
