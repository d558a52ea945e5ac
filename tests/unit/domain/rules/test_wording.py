"""The wording rules that keep a near-duplicate merge from losing a fact."""

from __future__ import annotations

import pytest

from recalld_server.domain.rules.lifecycle import LifecyclePolicy, near_duplicate
from recalld_server.domain.rules.wording import differ_in_detail, script


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user likes latte.", "The user dislikes latte."),
        ("The user's sister lives in Boston.", "The user's brother lives in Boston."),
        ("The user prefers window seats on flights.", "The user prefers aisle seats on flights."),
        ("The user drinks coffee.", "The user drinks decaf coffee only."),
        ("The user has a cat.", "The user had a cat."),
        ("The user prefers tea to coffee.", "The user prefers coffee to tea."),
        (
            "The user's annual leave is 25 days a year.",
            "The user has 25 days of annual leave left this year.",
        ),
        ("用户打算明年考研。", "用户去年考过研。"),
        ("用户喜欢喝美式。", "用户不喜欢喝美式。"),
        ("The user works at Google London.", "The user used to work at Google London."),
    ],
)
def test_one_changed_added_or_reordered_detail_is_a_different_fact(a: str, b: str) -> None:
    assert differ_in_detail(a, b)
    assert differ_in_detail(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user is allergic to shellfish.", "User has a shellfish allergy."),
        (
            "The user's favourite film is Spirited Away.",
            "Spirited Away is the user's favourite movie.",
        ),
        ("The user's landlord is Mr. Evans.", "Mr. Evans is the user's landlord."),
        ("The user prefers Americano without sugar.", "The user prefers americano, no sugar."),
        ("Order SO-88231 shipped", "Order SO-88231 has shipped"),
        ("用户的猫叫年糕。", "年糕是用户养的猫的名字。"),
        ("The user has a daughter named Lily", "The user's daughter is called Lily"),
    ],
)
def test_a_rewording_keeps_the_fact(a: str, b: str) -> None:
    assert not differ_in_detail(a, b)
    assert not differ_in_detail(b, a)


def test_script_tells_languages_apart() -> None:
    assert script("用户的妻子是护士。") == "cjk"
    assert script("用户用 TypeScript 开发") == "cjk"
    assert script("The user's wife is a doctor.") == "latin"
    assert script("2024-05-01") == "latin"


def test_near_duplicate_needs_similarity_and_matching_wording() -> None:
    policy = LifecyclePolicy(near_duplicate_similarity=0.88)
    paraphrase = ("The user is afraid of heights.", "User has a fear of heights.")
    assert near_duplicate(paraphrase[0], "", paraphrase[1], "", 0.93, policy)
    assert not near_duplicate(paraphrase[0], "", paraphrase[1], "", 0.87, policy)
    # Across languages the wording cannot vouch for the fact: never merged offline.
    assert not near_duplicate(
        "The user's wife is a doctor.", "", "用户的妻子是护士。", "", 0.99, policy
    )
    assert not near_duplicate(
        "The user likes latte.", "", "The user dislikes latte.", "", 0.99, policy
    )
    assert not near_duplicate(paraphrase[0], "fear", paraphrase[1], "phobia", 0.99, policy)
