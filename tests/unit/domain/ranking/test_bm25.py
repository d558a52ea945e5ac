from __future__ import annotations

import pytest

from recalld_server.domain.ranking.bm25 import Bm25Index


def test_rarer_terms_weigh_more_and_repeats_count() -> None:
    index = Bm25Index()
    index.add("a", ["coffee", "americano"])
    index.add("b", ["coffee", "latte"])
    index.add("c", ["tea", "oolong", "oolong"])
    scores = index.scores(["coffee", "americano"])
    assert set(scores) == {"a", "b"}
    assert scores["a"] > scores["b"] > 0
    assert index.scores(["oolong"])["c"] > 0
    assert index.scores(["nothing"]) == {}


def test_remove_and_replace_forget_the_old_terms() -> None:
    index = Bm25Index()
    index.add("a", ["peanut", "allergi"])
    index.add("b", ["peanut"])
    index.add("a", ["shellfish"])  # replaced
    assert set(index.scores(["peanut"])) == {"b"}
    index.remove("b")
    index.remove("missing")
    assert index.scores(["peanut"]) == {}
    assert len(index) == 1
    assert index.scores(["shellfish"])["a"] == pytest.approx(index.scores(["shellfish"])["a"])


def test_empty_index_scores_nothing() -> None:
    assert Bm25Index().scores(["anything"]) == {}
