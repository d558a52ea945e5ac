"""The tenth round: rules drawn from the fourteenth split's misses and false alarms.

Passwords after an aside and a colon, security answers, a PIN an agent asked for,
a short PIN the code was changed to, a console's passkey, PlanetScale's database
passwords; a first-generation ID named by the household register (户口本); a
passport number before "— that's X's passport". And what only looks like them:
a URL's rest after "Password for 'https:", a WebAuthn passkey, a JWT header alone,
a public key "of" a peer. AWS's documented example key stays masked on purpose.
The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Aoife's Outlook password, she asked me to keep it: Kilkenny#Rath7", "password",
         "Kilkenny#Rath7"),
        ("the security answer for the bank (first school) is Ballyhaunis", "password",
         "Ballyhaunis"),
        ("密保答案是小黄狗", "password", "小黄狗"),
        ("Agent: I'll need your current voicemail PIN.\nCustomer: it's 50417", "password", "50417"),
        ("单元门的密码换了，新的是 2580#", "password", "2580#"),
        ("Xbox parental-controls passkey 602913", "password", "602913"),
        ("DATABASE_URL=mysql://u1:pscale_pw_Qz8Wx2Ec5Rv7Tb1Yn4Um6Ik9Ol3Pa0Sd2Fg5Hj8Kl@host/db",
         "password", None),
        ("奶奶户口本上的老号码：110105491231002", "national_id", "110105491231002"),
        ("E71428053 — that's Ruairí's passport, not mine", "passport", "E71428053"),
        ("AWS AKIAIOSFODNN7EXAMPLE", "api_key", "AKIAIOSFODNN7EXAMPLE"),
    ],
)  # fmt: skip
def test_finds_the_tenth_rounds_forms(text: str, category: str, value: str | None) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "Password for 'https://git.example.com': (typed, not saved)",
        "passkey sign-in is on for the Google account, so there's no password to remember",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is just the JWT header",
        "WireGuard public key of my phone peer: /zK9POxvTWw8YBYrrooHZKfTV/ZR/vwDmG62LxENH8s=",
        "the password, as I said: not set yet",
        "my password, the old one: twelve characters",
    ],
)
def test_leaves_alone_the_tenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
