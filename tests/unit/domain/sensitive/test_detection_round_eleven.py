"""The eleventh round: rules drawn from the fifteenth split's misses and false alarms.

A value before "这个是我…密码", a padlock that "is 3-7-21", a login named with a
longer clause or an aside in brackets, a passport number an agent asked for, German
"ist meine Passnummer", Jira automation webhooks; and left alone: a device's default
password printed in its manual (默认), "is irrelevant", "is elsewhere", a safe's price
or model year. The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Qw19880412 这个是我邮箱密码，别给别人看", "password", "Qw19880412"),
        ("the padlock on the bike shed is 4-19-33", "password", "4-19-33"),
        ("work laptop login (first week only, then change it): Harbour!Start7", "password",
         "Harbour!Start7"),
        ("user: fill the visa form\nassistant: I'll need your passport number.\nuser: 482913775",
         "passport", "482913775"),
        ("K4RT29L7M ist meine Passnummer", "passport", "K4RT29L7M"),
        ("https://automation.atlassian.com/pro/hooks/" + "5e" * 20, "api_key", "5e" * 20),
    ],
)  # fmt: skip
def test_finds_the_eleventh_rounds_forms(text: str, category: str, value: str | None) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "新买的摄像头默认账号 admin 密码 12345，说明书上印的",
        "the hash of my Wi-Fi password is irrelevant, it's WPA3",
        "the encrypted key for the old server (passphrase is elsewhere)",
        "the safe was 1500 dollars",
        "the safe is 2024 model",
        "the lock is 2019, bought in spring",
        "The user's locker number is 9902",
    ],
)
def test_leaves_alone_the_eleventh_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
