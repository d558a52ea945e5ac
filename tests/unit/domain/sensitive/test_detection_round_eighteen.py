"""The eighteenth round: rules drawn from the twenty-second split's misses and false alarms.

Passphrases after "master phrase", "主密码", "她设的是", a login's "user …, password …" and
a file "locked with"; a security question's answer after the question in brackets or
after "是"; a word described as pinyin or "one word" ("一个词 laobing"); a memorable word
right after its name; a lock's dashed combination after a colon, a code a door "takes",
a barrier's code, a Chinese padlock's or safe's code after a space; and left alone: a
description in quotes, talk of a password reset after "user … password", a security
question itself, a safe's price. The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Bryony's password-manager master phrase, in case she's ill: four damp otters singing",
         "four damp otters singing"),
        ("家里的 1Password 主密码 huangshan yunhai songshu，别外传", "huangshan yunhai songshu"),
        ("Ilse 的 backup tool 要 passphrase，她设的是 tulip barge canal frost",
         "tulip barge canal frost"),
        ("the family photo archive: user marit, password Tromso northern lights",
         "Tromso northern lights"),
        ("the zip with the school trip forms is locked with heron marsh eleven",
         "heron marsh eleven"),
        ("Aled's answer to the council portal's security question (first school): Penlan",
         "Penlan"),
        ("晓东 的 security question answer（母亲的姓）是 zhangshi", "zhangshi"),
        ("他说路由器密码就是一个词 qingming，全小写", "qingming"),
        ("Morwenna's building society memorable word saffron, she forgets it", "saffron"),
    ],
)  # fmt: skip
def test_finds_passphrases_answers_and_words(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the freezer room padlock, left of the back door: 4-0-8-2", "4-0-8-2"),
        ("alarm code for the surgery, set by the practice manager: 6193", "6193"),
        ("the plant room door at the depot takes 480712 and a fob", "480712"),
        ("the car park barrier code is 7301 after eight", "7301"),
        ("仓库后门的挂锁 5830，下班锁好", "5830"),
        ("办公室的保险箱 31-08-57", "31-08-57"),
    ],
)
def test_finds_lock_codes(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "Declan said the farm portal password is 'the dog's name' and didn't say which",
        "user admin, password reset link sent",
        "agent scratchpad：user 问了 password reset 的流程，没给 password",
        "user: the bank's security question is 'first pet'",
        "保险箱 2000 元买的",
        "the door takes 2 people to lift",
        "the memorable word required when you log in",
    ],
)
def test_leaves_descriptions_and_talk_alone(text: str) -> None:
    assert_no_secret(text)
