"""The sixteenth round: rules drawn from the nineteenth split's misses and false alarms.

A PIN described and then given ("is the year she was born, 1983", "就是她的生日
930416"), a password in brackets after its word, a lock's code in Chinese word order,
a PIN right after what it opens, a duress code, a combination after 口令, keys pressed
after a PIN, a login value whose clause names a ticket, private keys after "the user";
and left alone: a password's dates and ages, htpasswd's apr1 hashes, "will be sent",
a WireGuard peer's public key, Tailscale node keys, customer numbers. The values are
made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, found

ETH_KEY = "0x9958f48f76585baf4da8ca3475d647f10d3690f938501d71ed6935c52df1339b"


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Summary: User said her banking PIN is the year she was born, 1983, keep it private.",
         "password", "1983"),
        ("the PIN for his debit card is his house number twice, 1717", "password", "1717"),
        ("用户说银行卡取款密码就是她的生日 930416", "password", "930416"),
        ("Summary: User shared their Steam password (Gnarly-Gecko-55) for the purchase history.",
         "password", "Gnarly-Gecko-55"),
        ("safe 的 code 是 281947，护照在里面", "password", "281947"),
        ("garage 8831 then the star key; side-gate padlock 0720", "password", "0720"),
        ("alarm company note: customer duress code 4411, normal disarm 8306", "password", "4411"),
        ("保险箱口令 47-13-29，先向右转三圈", "password", "47-13-29"),
        ("calendar invite 里写着会议室 door code 3079*", "password", "3079"),
        ("Yusra's laptop login, according to the IT ticket she forwarded: Kassab#Laptop9",
         "password", "Kassab#Laptop9"),
        (f"ethereum wallet export from the user's notes app: {ETH_KEY}", "private_key", ETH_KEY),
    ],
)  # fmt: skip
def test_finds_the_sixteenth_rounds_forms(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "password_last_changed: 2024-11-02; password_expires_in_days: 90; mfa: enabled",
        "htpasswd line from the old Pi: admin:$apr1$0Ig5jt4a$9a51CXE9jybIjRWsfqyd02",
        "door code will be sent by the host on the morning of arrival, not before",
        "WireGuard peer public key for the holiday-home router: "
        "uSGxJQnVGTCnYSezis083Yv3a45SyLAHzgHM3jp6bDc=",
        "Tailscale node key in the admin console: "
        "nodekey:0fca46e14d716acc1686117109fa8c7f3b22f3bb618fef2dbcc801a5e3c1c1d4",
        "the promo code is the year we opened, 1998",
        "the login page, per the ticket: Portal2",
    ],
)
def test_leaves_the_sixteenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


def test_a_customer_number_is_not_a_phone() -> None:
    assert found("customer number 0049 3302 1187 in the CRM") == []


def test_a_pin_in_a_list_leaves_the_card_after_it_whole() -> None:
    # The described-then-given PIN once took the card's first group and, winning the
    # overlap, left its last twelve digits in the clear.
    text = "password is Zx9#kk12, PIN 4821, 4111 1111 1111 1111"
    assert ("card_number", "4111 1111 1111 1111") in found(text)


def test_a_lock_code_is_not_the_first_group_of_a_phone_number() -> None:
    text = "Eamonn's mobile, for when the shop alarm goes off at night: 07956 210943"
    assert found(text) == [("phone", "07956 210943")]
