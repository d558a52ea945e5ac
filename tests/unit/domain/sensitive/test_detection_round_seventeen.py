"""The seventeenth round: forms that generalise the twentieth and twenty-first splits' misses.

A word a bank or an alarm company keeps as a secret ("memorable word", "safe word",
"code word") is a password's word, whatever the value's shape; and left alone: talk
about such a word without one, and a description where a value would be. The old and
new values of a changed secret are tested in test_password_changes.py. The values are
made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the memorable word for the building society is parsnip", "parsnip"),
        ("her memorable word: lighthouse", "lighthouse"),
        ("the safe word the alarm company asks for is rhubarb", "rhubarb"),
        ('the code word for collecting Noah from school is "giraffe"', "giraffe"),
    ],
)
def test_finds_a_secret_word(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "we need a memorable word that is easy to spell",
        "the memorable word is required when you log in",
        "the secret word is in the sealed envelope",
        "the memorable information is mother's maiden name",
        "the password is mum's birthday backwards",
    ],
)
def test_leaves_talk_about_a_secret_word_alone(text: str) -> None:
    assert_no_secret(text)
