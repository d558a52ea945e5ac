"""What the rounds' tests share: what the detector finds, and the two checks they make."""

from __future__ import annotations

from recalld_server.domain.sensitive.detection import Detector

DETECTOR = Detector()
RULES_ALONE = Detector(password_model=None)
"""Without the learned scorer: a round's passwords are checked on the rules it added."""
SECRETS = ("api_key", "private_key", "password", "card_number", "passport")
"""The categories a look-alike must not be taken for (phones and e-mails are allowed)."""


def found(text: str) -> list[tuple[str, str]]:
    """(category, value) of every detection in the text."""
    return [(d.category.value, text[d.start : d.end]) for d in DETECTOR.find(text)]


def rules_find(text: str) -> list[tuple[str, str]]:
    """(category, value) of every detection of the rules alone."""
    return [(d.category.value, text[d.start : d.end]) for d in RULES_ALONE.find(text)]


def assert_finds(text: str, category: str, value: str | None) -> None:
    """The value is found as the category (any value of it when `value` is None)."""
    hits = found(text)
    if value is None:
        assert category in [c for c, _ in hits], hits
    else:
        assert (category, value) in hits, hits


def assert_rules_leave(text: str) -> None:
    """The rules alone take nothing in the text for a secret, a card or a passport."""
    assert [c for c, _ in rules_find(text) if c in SECRETS] == [], rules_find(text)


def assert_no_secret(text: str) -> None:
    """Nothing in the text is taken for a secret, a card or a passport."""
    assert [c for c, _ in found(text) if c in SECRETS] == [], found(text)
