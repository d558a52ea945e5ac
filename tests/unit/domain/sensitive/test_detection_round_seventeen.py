"""The seventeenth round: forms that generalise the twentieth and twenty-first splits' misses.

A word a bank or an alarm company keeps as a secret ("memorable word", "safe word",
"code word") is a password's word, whatever the value's shape; a password described by
its form ("all lowercase", "the dog's name", "全拼", "名字的拼音") and then given is found
whatever its shape; the code of a device's or a role's lock ("parental code", "admin
code", "manager override code") is a PIN; a hotspot's or a router's key, and a Wi-Fi's
"code", are its password; digits one must key in ("要输 883322") are a PIN; and left
alone: talk about such a word without one, and a
description where a value would be. The old and
new values of a changed secret are tested in test_password_changes.py. The values are
made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the memorable word for the building society is parsnip", "parsnip"),
        ("her memorable word: lighthouse", "lighthouse"),
        ("the safe word the alarm company asks for is rhubarb", "rhubarb"),
        ('the code word for collecting Noah from school is "giraffe"', "giraffe"),
    ],
)
def test_finds_a_secret_word(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "we need a memorable word that is easy to spell",
        "the memorable word is required when you log in",
        "the secret word is in the sealed envelope",
        "the memorable information is mother's maiden name",
        "the password is mum's birthday backwards",
    ],
)
def test_leaves_talk_about_a_secret_word_alone(text: str) -> None:
    assert_no_secret(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the laptop password is the dog's name, Biscuit", "Biscuit"),
        ("the password is all lowercase: heatherglen", "heatherglen"),
        ("the Wi-Fi key is all one word, no capitals: stonechatmeadow", "stonechatmeadow"),
        ("her password was her maiden name — Okonkwo", "Okonkwo"),
        ("密码是全拼 zhangsanfeng，没有数字", "zhangsanfeng"),
        ("密码是他名字的拼音 lixiaolong", "lixiaolong"),
        ("wifi 密码是小写的 meiguihuayuan", "meiguihuayuan"),
    ],
)
def test_finds_a_password_described_by_its_form_then_given(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "the password is the dog's name, which I won't write here",
        "the password is in lower case, remember that",
        "the password is his surname plus the year, so not safe",
        "密码是他名字的拼音加生日",
    ],
)
def test_leaves_a_description_without_its_value_alone(text: str) -> None:
    assert_no_secret(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("kids' tablet parental code 3390", "3390"),
        ("the immobiliser code for the van is 5512", "5512"),
        ("the pill dispenser's admin code: 80311", "80311"),
        ("the alarm engineer code is 998877", "998877"),
        ("the POS manager override code is 7731", "7731"),
        ("screen time code on Mia's iPhone: 4826", "4826"),
    ],
)
def test_finds_the_code_of_a_devices_or_a_roles_lock(text: str, value: str) -> None:
    assert_finds(text, "password", value)


def test_leaves_an_error_code_alone() -> None:
    assert_no_secret("the error code was 5512")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the van's hotspot key is 8RT2-KQ9P-4WZ1", "8RT2-KQ9P-4WZ1"),
        ("Wi-Fi for the campsite: network Orbitur_Free, code 55ba21c7", "55ba21c7"),
        # The QR code's own field wins over the "code" its caption names.
        ("WIFI:T:WPA;S:Lounge-7;P:Quince-Fig-29;; 这个 QR code Dorota 贴在门口", "Quince-Fig-29"),
    ],
)
def test_finds_a_hotspots_key_and_a_wifis_code(text: str, value: str) -> None:
    assert_finds(text, "password", value)


def test_leaves_a_routers_model_code_alone() -> None:
    assert_no_secret("router model code RT-AX58U")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("老板说收银台要输 883322 才能退款", "883322"),
        ("单元门禁现在输入 5177 然后按井号", "5177"),
    ],
)
def test_finds_digits_one_must_key_in(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "请输入短信验证码 482913",
        "输入金额 5000 再确认",
        "到了楼下输入房号 1203 再按呼叫键",
        "在搜索框输 2024 年的报表",
    ],
)
def test_leaves_other_digits_keyed_in_alone(text: str) -> None:
    assert_no_secret(text)
