"""The categories of sensitive data recalld recognises, and what may be done with each."""

from __future__ import annotations

import dataclasses
import enum


class Category(enum.StrEnum):
    """A kind of sensitive value; the names appear in the API, the flags and the docs."""

    CARD_NUMBER = "card_number"
    NATIONAL_ID = "national_id"
    PASSPORT = "passport"
    IBAN = "iban"
    PHONE = "phone"
    EMAIL = "email"
    API_KEY = "api_key"
    PRIVATE_KEY = "private_key"
    PASSWORD = "password"


class Action(enum.StrEnum):
    """What the server does with a value of a category."""

    MASK = "mask"
    """Replace it with a typed placeholder, e.g. `[CARD ••••1111]`."""
    REJECT = "reject"
    """Refuse the request (INVALID_ARGUMENT naming the field and the category)."""
    ALLOW = "allow"
    """Keep it as written."""


PLACEHOLDER_LABELS: dict[Category, str] = {
    Category.CARD_NUMBER: "CARD",
    Category.NATIONAL_ID: "NATIONAL_ID",
    Category.PASSPORT: "PASSPORT",
    Category.IBAN: "IBAN",
    Category.PHONE: "PHONE",
    Category.EMAIL: "EMAIL",
    Category.API_KEY: "API_KEY",
    Category.PRIVATE_KEY: "PRIVATE_KEY",
    Category.PASSWORD: "PASSWORD",
}
"""The label of each category's placeholder: `[CARD ••••1111]`, `[API_KEY]`."""

SECRETS = frozenset({Category.API_KEY, Category.PRIVATE_KEY, Category.PASSWORD})
IDENTIFIERS = frozenset(
    {Category.CARD_NUMBER, Category.NATIONAL_ID, Category.PASSPORT, Category.IBAN}
)
CONTACT = frozenset({Category.PHONE, Category.EMAIL})

GROUPS: dict[str, frozenset[Category]] = {
    "secrets": SECRETS,
    "identifiers": IDENTIFIERS,
    "contact": CONTACT,
    "all": frozenset(Category),
}
"""Names a policy may use for several categories at once."""

DEFAULT_ACTIONS: dict[Category, Action] = {
    **{category: Action.MASK for category in SECRETS | IDENTIFIERS},
    # A user's own e-mail address or phone number is often the memory itself.
    **{category: Action.ALLOW for category in CONTACT},
}


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """Sensitive values of one category found in one request field, and what was done."""

    field: str
    category: Category
    action: Action
    count: int
