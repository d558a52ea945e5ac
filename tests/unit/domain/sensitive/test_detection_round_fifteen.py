"""The fifteenth round: rules drawn from the eighteenth split's misses and false alarms.

A PIN or a lettered code right after a lock's colon, a lock box named alone, a disarm
code, French alarm codes, "passwrd", an answer after "oh yes —", a plain user before a
password with a symbol, a Wi-Fi network and its key as a pair, a Wi-Fi key after where
the network is or after "is", British and French mobiles without a word for a phone;
and left alone: one-time passwords (动态密码) and trip PINs, a Wi-Fi network's name when
the password comes later, account, company and 户号 numbers, an HMRC receipt. The
values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, found


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Disney+ profile lock for the kids' profile: 6648", "password", "6648"),
        ("Lisbon flat, street door: 2413A", "password", "2413A"),
        ("key safe by the back door, for the dog sitter: C9071", "password", "C9071"),
        ("Porto Airbnb lockbox 0617, the box is left of the door", "password", "0617"),
        ("alarm panel 的 disarm code 5839，进门三十秒内要按", "password", "5839"),
        ("le code de l'alarme chez ses parents : 4B7719", "password", "4B7719"),
        ("VPN: username kpascoe, passwrd Anchor&Chain_61", "password", "Anchor&Chain_61"),
        ("user: what's the router admin password?\nassistant: You changed it in January.\n"
         "user: oh yes — Ruby-Kettle-2207", "password", "Ruby-Kettle-2207"),
        ("user: which passport did Mum travel on?\nassistant: The Irish one.\n"
         "user: yes — YC9847776", "passport", "YC9847776"),
        ("thermostat app: kenver / WarmHouse-55!", "password", "WarmHouse-55!"),
        ("new office Wi-Fi: Halyard-Guest / sailsUp2026", "password", "sailsUp2026"),
        ("Wi-Fi at Mum and Dad's: morwenna1951 (yes, really)", "password", "morwenna1951"),
        ("guest Wi-Fi is visitors-welcome-88, fine to give to anyone", "password",
         "visitors-welcome-88"),
        ("the plumber: Dunstan, 07823 537922", "phone", "07823 537922"),
        ("le numéro du plombier à Rennes : 06 28 03 33 86", "phone", "06 28 03 33 86"),
    ],
)  # fmt: skip
def test_finds_the_fifteenth_rounds_forms(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "【招商银行】动态密码 271840，转账 ¥3,000.00",
        "Uber 的 trip PIN 2281，给 driver 看就行",
        "Uber: your ride PIN is 3308, share it with the driver only",
        "home Wi-Fi is BT-Hub-7Q2X and the password is on the router",
        "the lock box at the cottage's place is by the shed",
        "tax return submitted, HMRC submission receipt IRmark 9sA7erscoZzETZTCgTMriska5LdgCszzwgc",
        "Sizes: small / Medium2",
    ],
)
def test_leaves_the_fifteenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


@pytest.mark.parametrize(
    "text",
    [
        "company number 15882093 at Companies House",
        "the council tax account number is 6004817723, it's on the bill",
        "水电燃气户号 3301882093，交费用的",
    ],
)
def test_account_and_company_numbers_are_not_phones(text: str) -> None:
    assert found(text) == []


def test_published_test_cards_stay_masked() -> None:
    # "test number" names what the card is for, not another kind of number.
    assert_finds("Visa test number 4111 1111 1111 1111 from the gateway docs", "card_number", None)
