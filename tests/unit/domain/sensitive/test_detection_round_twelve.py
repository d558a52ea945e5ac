"""The twelfth round: sign-ins and Wi-Fi keys with no word for a password nearby.

A "Label: user / password" line where both sides are shaped like a sign-in, a value
alone after a short label when it is shaped like a password a person made up, one
after a clause about a login and a colon, and a made-up value that answers a
question about the Wi-Fi; and left alone: a pair of
places or products under a label, fields that hold something else (a ticket, a user
name, a coupon, an event), joined words outside a text about sign-ins, and a
question about the network's name. The values
are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Instagram: lena.k / Sommer#2024", "Sommer#2024"),
        ("Netflix — familie.berg / Kino2023!", "Kino2023!"),
        ("- 淘宝：18612345678 / tb@2024xyz", "tb@2024xyz"),
        ("accounts for Oma's tablet:\n* Skype: oma_hilde / Enkel2019!\n* Mail: later",
         "Enkel2019!"),
        ("Dropbox: studio_k / Kettle4Tea", "Kettle4Tea"),
        ("PayPal: Pp!Fiachra1995", "Pp!Fiachra1995"),
        ("uni portal: Zw2107!Amsterdam", "Zw2107!Amsterdam"),
        ("小满的账号清单：\n- 钉钉：Dd_xm0601!", "Dd_xm0601!"),
        ("Passwords (family)\nNetflix: Sofa-Night-31", "Sofa-Night-31"),
        ("office PC login, IT makes us change it every quarter: Ht@20260301", "Ht@20260301"),
        ("the practice software login for the front desk: Smile2026front", "Smile2026front"),
        ("what's the wifi?\nit's Bergblick-55", "Bergblick-55"),
        ("家里wifi是啥？\n妈：hx@2024home", "hx@2024home"),
        ("user: the Wi-Fi at the cabin?\nassistant: not saved yet\nuser: Pine&Lake77",
         "Pine&Lake77"),
    ],
)  # fmt: skip
def test_finds_the_twelfth_rounds_forms(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "Berlin: Mitte / Kreuzberg2",  # a district, not a sign-in
        "Route: A7 / Exit 12",
        "Sizes: small / Medium2",
        "build: release / v2.4.1-rc1",
        "parcel: DHL / JD0012345678",
        "Stack: react / Next.js14",
        "Ticket: #4521A",
        "Channel: #general-2024",
        "Username: Anna_K!99",
        "Coupon: SAVE20!now",
        "Event: Year-End-2024",
        "Team: Red-Sox-2004",  # joined words, but nothing here is about signing in
        "redis keys: recalld:v1:lock:*",
        "db.internal:5432:*:report",
        "login for the kids: mia2015",  # may be the user name
        "the admin panel is at: Settings2",
        "sign-in method for the office (since May): Okta-SSO-2",
        "login page (new URL): https://portal.example.com/Login1",
        "POST /login body: user=kowalski&remember=1",
        "what's the wifi called?\nFenwick-Home2",  # its name, not its key
        "which wifi network?\nTP-LINK_5G_8F2A",
        "what's the wifi speed?\naround 300 Mbps",
        "is the wifi down?\nno, it's fine",
    ],
)
def test_leaves_the_twelfth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
