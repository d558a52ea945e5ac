"""The twentieth round: rules drawn from the twenty-second and twenty-fourth splits' misses.

A password's purpose set off by commas before its value ("the password, for voiding
orders: …", "her PIN, for the card at the credit union, is …"); and left alone: "for
example" between commas. The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The till password, for voiding sales: 774301b", "774301b"),
        ("Her PIN, for the card at the credit union, is 5093", "5093"),
        ("Manager passcode, on the back-office PC: Ledger#Till8", "Ledger#Till8"),
    ],
)  # fmt: skip
def test_finds_the_twentieth_rounds_forms(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "The password, for example, is something you can remember",
        "A password, for instance, is never sent by e-mail",
    ],
)
def test_leaves_the_twentieth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
