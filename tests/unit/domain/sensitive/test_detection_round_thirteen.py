"""The thirteenth round: rules drawn from the sixteenth split's misses and false alarms.

SQL's IDENTIFIED BY, a default password changed later (改成), a lock's code after a
comma or its combination without a verb, a protected archive's password, a Wi-Fi key
named with where the network is, a login told in prose ("my email plus …"), a password
asked about and then told, a keypad code answered after "remind me", a JWK's "d" in
prose, a card paying for an order, and numbers after words that only end like a label
("Madrid:", "said:", "paid:"); and left alone: "using password: YES", HTML attributes,
"see 1Password", "--password via", purchase-order, receipt and loyalty numbers, an
order's own number. The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, found

JWK_D = "90H7KcxFXIAH3s40bgxLsoBlmye3PPCVFPiNhTxcLsH"


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("mysql> CREATE USER 'bk'@'%' IDENTIFIED BY 'Books-Keep-2026';", "password",
         "Books-Keep-2026"),
        ("ALTER USER 'app'@'localhost' IDENTIFIED WITH mysql_native_password BY 'Xy7#pp21';",
         "password", "Xy7#pp21"),
        ("Grafana 默认 admin password 我改成 Grafa-Lake-90 了", "password", "Grafa-Lake-90"),
        ("key safe by the tenants' back door, code 2803", "password", "2803"),
        ("office safe: 31-07-55 (left, right, left)", "password", "31-07-55"),
        ("bike lock combination 0626", "password", "0626"),
        ("the zip with the references is protected: Refs_Flat3_2026", "password",
         "Refs_Flat3_2026"),
        ("WLAN-Schlüssel in der Ferienwohnung: Gartenhaus!2026", "password", "Gartenhaus!2026"),
        ("the ParentPay login is my email plus lunchmoney-Eli7", "password", "lunchmoney-Eli7"),
        ("the router login page wants admin and Tplink-Grandpa-3", "password", "Tplink-Grandpa-3"),
        ("Mum asked what her Yahoo password is. It's marigold1948", "password", "marigold1948"),
        ("Q: remind me of the storage gate code\nA (from your notes): *2961#", "password",
         "*2961#"),
        (f"the JWK for the portal, d value only: {JWK_D}", "private_key", JWK_D),
        ("Kasimira's card for the fleece order: 4437 2198 8971 6925", "card_number",
         "4437 2198 8971 6925"),
        ("already paid: 4539 1488 0343 6467", "card_number", "4539 1488 0343 6467"),
        ("she said: 13912345678", "phone", "13912345678"),
        ("el móvil de la agencia en Madrid: +34671009091", "phone", "+34671009091"),
        ("From the booking confirmation: +971 50 854 1243", "phone", "+971 50 854 1243"),
    ],
)  # fmt: skip
def test_finds_the_thirteenth_rounds_forms(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "java.sql.SQLException: Access denied for user 'clinic'@'10.0.3.7' (using password: YES)",
        '<input type="password" name="pw" autocomplete="current-password">',
        "password: see 1Password → 'Clinic portal'",
        "WARNING! Using --password via the CLI is insecure. Use --password-stdin.",
        "the locker number is 9902",
        "remind me of the promo code\nA: 2024",
        "the zip is password protected: yes",
        "the login is my email and the usual one",
        "order number: 4437 2198 8971 6925 for the fleece",
    ],
)
def test_leaves_the_thirteenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


@pytest.mark.parametrize(
    "text",
    [
        "PO number 4500128871 from the café",
        "receipt no. 0045-8831-2290",
        "Flying Blue number 2094 883 117 for the miles",
        "hotel confirmation 83920174, check-in after 3pm",
    ],
)
def test_numbers_named_as_something_else_are_not_phones(text: str) -> None:
    assert found(text) == []
