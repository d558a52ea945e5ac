"""The categories of sensitive data grouped for policies, their defaults and placeholders."""

from __future__ import annotations

from recalld_server.domain.core.sensitive_data import Action, Category

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
