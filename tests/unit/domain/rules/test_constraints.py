"""Core facts that rule things out, and the memories that would break them."""

from __future__ import annotations

import pytest

from recalld_server.domain.rules.constraints import broken_constraints


@pytest.mark.parametrize(
    ("core", "other", "name"),
    [
        ("The user is vegetarian.", "The user had a bacon sandwich for breakfast.", "meat"),
        ("用户吃素。", "用户晚饭点了一份红烧肉。", "meat"),
        ("The user is vegan.", "The user bakes cheese scones every Sunday.", "animal products"),
        ("The user keeps halal.", "The user's favourite pizza is pepperoni.", "pork"),
        (
            "The user is allergic to peanuts.",
            "The user snacks on Snickers every day.",
            "allergy to nut",
        ),
        ("用户对青霉素过敏。", "用户上周吃了阿莫西林，好多了。", "allergy to penicillin"),
        (
            "The user doesn't drink alcohol.",
            "The user opened a bottle of red wine tonight.",
            "alcohol",
        ),
        ("用户滴酒不沾。", "用户每周五都和同学喝啤酒。", "alcohol"),
        (
            "The user is lactose intolerant.",
            "The user drinks a pint of milk every morning.",
            "dairy",
        ),
        ("The user is single.", "The user's wife is a nurse.", "a partner"),
        ("用户是独生女。", "用户的妹妹在上海读书。", "siblings"),
        ("The user lives alone.", "The user's flatmate plays loud music.", "living with others"),
        ("The user can't swim.", "The user swam across the lake last summer.", "swimming"),
        (
            "The user lives in Leeds.",
            "The user's daily commute is on the Paris metro.",
            "living elsewhere",
        ),
        ("用户住在深圳。", "用户每天坐北京地铁上班。", "living elsewhere"),
        ("The user's mother passed away.", "The user calls her mum every Sunday.", "their mother"),
    ],
)
def test_a_memory_that_breaks_a_core_constraint_is_named(core: str, other: str, name: str) -> None:
    assert name in broken_constraints(core, other)


@pytest.mark.parametrize(
    ("core", "other"),
    [
        ("The user is vegetarian.", "The user loves mushroom risotto."),
        ("The user is vegetarian.", "The user avoids bacon at breakfast buffets."),
        ("The user is vegetarian.", "The user tried a plant-based burger."),
        ("The user is allergic to peanuts.", "The user carries an EpiPen."),
        ("The user is allergic to cats.", "The user has a dog."),
        ("The user doesn't drink alcohol.", "The user likes alcohol-free beer."),
        ("The user doesn't drink coffee.", "The user switched to decaf coffee."),
        ("The user is lactose intolerant.", "The user buys oat milk every week."),
        ("The user is single.", "The user went to a friend's wedding."),
        ("The user can't drive.", "The user is taking driving lessons."),
        ("The user has perfect eyesight.", "The user wears sunglasses when it is sunny."),
        ("The user has no pets.", "The user watches cat videos every night."),
        ("The user lives in Leeds.", "The user flew to Paris for a weekend."),
        ("The user's mother passed away.", "The user visits her mum's grave every spring."),
        ("The user likes tea.", "The user drinks beer."),  # no constraint at all
    ],
)
def test_related_or_avoiding_memories_break_nothing(core: str, other: str) -> None:
    assert broken_constraints(core, other) == []
