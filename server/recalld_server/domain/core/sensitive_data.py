"""The vocabulary of sensitive data: its categories, what may be done, what was found.

The rules that find values and the policy that acts on them are in `domain/sensitive`;
these names are here because results (`WriteResult.sensitive_data`) carry them.
"""

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


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """Sensitive values of one category found in one request field, and what was done."""

    field: str
    category: Category
    action: Action
    count: int
