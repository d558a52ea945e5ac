"""A secret changed from one value to another: the rule finds both values, by itself.

The rules run without the learned scorer here, so that what is found is the rule's.
"""

from __future__ import annotations

import pytest

from recalld_server.domain.sensitive.detection import Detector

RULES_ALONE = Detector(password_model=None)


def passwords(text: str) -> list[str]:
    return [text[d.start : d.end] for d in RULES_ALONE.find(text) if d.category.value == "password"]


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("the till login went from 4412 to 7780 on Monday", "4412", "7780"),
        ("we changed the padlock from 3-7-21 to 9-0-44.", "3-7-21", "9-0-44"),
        (
            "Tom swapped his Netflix password Kettle99! for Orbit-Lamp-44",
            "Kettle99!",
            "Orbit-Lamp-44",
        ),
        ("replaced the old alarm code 0193 with 7264", "0193", "7264"),
        ("the door code was 2931, now 8054", "2931", "8054"),
        ("the alarm used to be 1144; it's 6702 now", "1144", "6702"),
        ("老板把收银系统的密码从 cq888888 换成了 Huoguo#2027", "cq888888", "Huoguo#2027"),
        ("把仓库门锁由 551902 改为 883104。", "551902", "883104"),
        ("打印机管理员密码原来是 admin123，现在改成 Szfab@0912", "admin123", "Szfab@0912"),
        ("家里无线网旧的 liuhome2019 作废了，新的 Qingshan@5G", "liuhome2019", "Qingshan@5G"),
    ],
)
def test_finds_the_old_and_the_new_value(text: str, old: str, new: str) -> None:
    found = passwords(text)
    assert old in found and new in found, found


@pytest.mark.parametrize(
    "text",
    [
        "the meeting about the door code moved from 1400 to 1530",
        "The user's credit score went from 712 to 748",
        "the gate code went from 4 digits to 6 digits",
        "the price of the smart lock went from 1299 to 1499",
        "the alarm was fitted in 2019, now 2024 it needs a service",
        "flight moved from BA1442 to BA1446, gate change too",
        "we moved the Wi-Fi from the kitchen to the hall",
        "密码锁的价格从 1299 改成了 999",
        "upgraded the router firmware from v2.1.8 to v2.2.0",
    ],
)
def test_leaves_other_changes_alone(text: str) -> None:
    assert passwords(text) == []


def test_finds_values_that_touch_the_chinese_around_them() -> None:
    assert passwords("把门锁密码从551276改成了903847，记得告诉保洁") == ["551276", "903847"]
