"""The twenty-first round: rules drawn from the twenty-fifth split's misses.

Passwords: locks in traditional Chinese (密碼鎖, 鐵捲門, 大鎖, 螢幕鎖), a door with a code and
the hash key ("辦公室的門 1105#", "boot room 门 code 2597#"), a lock or a freezer's code
changed (冷凍庫換成 7140); a freezer or a locker "now" another code, a room that "opens
with" a lettered code, a key safe "on" its number, 访问码; a table whose column names a
lock's code; a security question asked for, then the answer someone typed, gave or set,
and a 密保问题 filled in; a network then its key; the words that unlock a vault; a
password spoken in a voice note, then written out after 也就是 or 整理出来是; a password
given up (不再用 X 了) with its successor; a password with accented letters. Left alone:
"not to tell" after a password's word, an exhibitor's pass, a WeChat AppID, a mnemonic
after a key safe's code, a one-time PIN. Phones: Taiwanese mobiles. Passports: a
Chinese passport's number after a name or in an identity check, what someone "travels
on". Keys: HubSpot tokens. The values are made up. The passwords are checked on the
rules alone (no scorer), so that each test fails without its rule.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import (
    assert_finds,
    assert_no_secret,
    found,
    rules_find,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("店面後門的密碼鎖 6624，晚上記得拉下來", "6624"),
        ("倉庫鐵捲門 580913，阿公說不要給外送員", "580913"),
        ("冷凍庫的大鎖 3307，早班先開", "3307"),
        ("阿嬤手機的螢幕鎖 250817", "250817"),
        ("茶水間的門 4480#，用完關燈", "4480#"),
        ("the wax room 门 code 7193#，Aurélie 说只给教练用", "7193#"),
        ("交接：冷凍庫換成 2291，收銀機的鑰匙在抽屜", "2291"),
        ("仓库门锁改成了 880163，别外传", "880163"),
        ("handover: bait freezer now 6612, boat shed now B4471", "6612"),
        ("handover: bait freezer now 6612, boat shed now B4471", "B4471"),
        ("the waxing room behind the rental shop opens with 3318C", "3318C"),
        ("Nan's key safe by the back door is on 2207 — she'll text if it changes", "2207"),
        ("工作室 3D 打印机的局域网访问码 90412277", "90412277"),
        ("| site | code |\n|---|---|\n| east barn | 7730 |", "7730"),
        ("building,door code,notes\nMill House,4815,sticks in the cold", "4815"),
        ("the insurer asks for his favourite football team; Maureen typed Hibernian Harriers",
         "Hibernian Harriers"),
        ("her building society wants her mother's maiden name; Ellis gave it as Threlfall",
         "Threlfall"),
        ("the council portal asks which street he lived on first; the answer on file is "
         "Rue de la Paix", "Rue de la Paix"),
        ("the gym app asks for the name of her first horse: Silver Birch", "Silver Birch"),
        ("妈妈微信的密保问题“第一只狗叫什么”，她填的是 小黑豆", "小黑豆"),
        ("Boat Wi-Fi: network MaryAnnII, key herring-gull-tide", "herring-gull-tide"),
        ("the five words that open Nils's crypto wallet, in order: fjord lantern copper moss otter",
         "fjord lantern copper moss otter"),
        ("語音轉文字：「收銀機那個密碼就是小美再加三個八」，也就是 xiaomei888", "xiaomei888"),
        ("语音转文字：“仓库门密码一九九七再加星号”，整理出来是 1997*", "1997*"),
        ("voice note: 'the shed password is Birch, capital B, then the year' — written out "
         "Birch2019", "Birch2019"),
        ("账号被盗以后，阿凯不再用 kai19900101 了，新的密码是 Kai!Dock_88", "kai19900101"),
        ("Ines stopped using Heron2016 as her e-mail password, and the new one is Moor!Lake_44",
         "Heron2016"),
        ("Jürgen's router password: Brötchen-Säge9", "Brötchen-Säge9"),
    ],
)  # fmt: skip
def test_the_rules_find_the_twentyfirst_rounds_passwords(text: str, value: str) -> None:
    assert ("password", value) in rules_find(text), rules_find(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("菜市場找陳老闆 0928-441-706", "phone", "0928-441-706"),
        ("學生表：曾子涵 E38261945，家長 139 1772 0461", "passport", "E38261945"),
        ("supplier file: Zhou Wenbo, EH4102733, +86 139 1772 0461", "passport", "EH4102733"),
        ("开户 KYC：护照以外的材料齐了，证件 E60219473 已扫描", "passport", "E60219473"),
        ("Imogen travels on 531804276; the conference desk has it", "passport", "531804276"),
        ("the CRM syncs with pat-eu1-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d each night", "api_key",
         "pat-eu1-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"),
    ],
)  # fmt: skip
def test_finds_the_twentyfirst_rounds_other_values(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "She set up a password for the club laptop and asked me not to share it",
        "Ayo's badge for the Lagos fintech expo is visitor pass VP-88213",
        "我以为那串 wx3f9a0c1b2d4e5f60 是密码，其实是小程序的 AppID",
        "the one-time PIN 6604 came by text for the parcel",
        "取号单 E20251107 是在办事大厅排的号",
        "订单 E12345678 已发货",
        "保險箱 3000 元，門 2024 年換的",
        "冷库换成 2000 度的温控",
        "the exhibition room opens with 1924 paintings",
        "product,code\nwidget,8526",
        "the survey asks for your first visit date: March 2019",
        "the museum asks which year you first came: 2019",
        "the area code, that is 0131.",
        "she stopped using the old laptop and the new one is faster",
    ],
)
def test_leaves_the_twentyfirst_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


def test_a_mnemonic_after_a_key_safes_code_is_not_taken_for_it() -> None:
    text = "the key safe at the cottage is on 1415 — 'Agincourt', Dad says"
    assert [v for c, v in found(text) if c == "password"] == ["1415"]
