"""The nineteenth round: rules drawn from the twenty-third split's misses.

The answer to a question, quoted or named ("answer to 'first car?' is …", "the answer
to his banking question, first school: …"), and a security question's answer after
"答案是"; a password described by its form after "it's" or "就是" ("it's her
nickname: …", "password 就是猫的 name：…"); several pinyin words after a description
("三个拼音词：…"); a passphrase after "is a phrase:", and words joined by dashes after
"locked with"; a value chosen "as the password"; a gate's code after 门禁 and a space;
and left alone: an answer that is not a name or a number, a door-entry card's number.
The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Joss's answer to 'first car you owned?' is Morris Minor", "Morris Minor"),
        ("Ewan gave the answer to his card-reader question, favourite teacher: Mackintosh",
         "Mackintosh"),
        ("Priya 的 bank app 的 security question（birth town）答案是 Coimbatore", "Coimbatore"),
        ("the kiosk password, it's her nickname: Pixie", "Pixie"),
        ("Grete 说她的 password 就是狗的 name：Biscotti", "Biscotti"),
        ("网盘的密码是四个拼音词：shan shui hua niao", "shan shui hua niao"),
        ("the shared drive password is a phrase: quiet harbour lanterns", "quiet harbour lanterns"),
        ("the folder of payroll exports is locked with never-email-this-file",
         "never-email-this-file"),
        ("Tamsin chose bluebell as the password for the parish newsletter", "bluebell"),
        ("仓库北门门禁 503918，晚班要用", "503918"),
    ],
)  # fmt: skip
def test_finds_the_nineteenth_rounds_forms(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "the answer to that question: we don't know",
        "the answer to the question is yes",
        "门禁卡 12345678 丢了",
        "he used the same trick as the password hint",
    ],
)
def test_leaves_the_nineteenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
