"""The twenty-first round: rules drawn from the twenty-fifth split's misses.

Passwords: locks in traditional Chinese (密碼鎖, 鐵捲門, 大鎖, 螢幕鎖), a door with a code and the
hash key ("辦公室的門 1105#", "boot room 门 code 2597#"), a lock or a freezer's code changed
(冷凍庫換成 7140); a freezer or a locker "now" another code, a room that "opens with" a
lettered code, a key safe "on" its number, 访问码; a table whose column names a lock's
code; a security question asked for, then the answer someone typed, gave or set, and a
密保问题 filled in; a network then its key; the words that unlock a vault; a password spoken
in a voice note, then written out after 也就是 or 整理出来是; a password given up (不再用 X 了) with
its successor; a password with accented letters. Left alone: "not to tell" after a
password's word, an exhibitor's pass, a WeChat AppID, a mnemonic after a key safe's
code, a one-time PIN. Phones: Taiwanese, Irish and Swiss mobiles, a number assigned with
"=", a WhatsApp link, a number after "contact" or "reception". First-generation Chinese
IDs named so. Passports: a Chinese passport's number after a name or in an identity
check, what someone "travels on". Keys: HubSpot tokens. And what the older splits still
missed: an aside before a password's colon, a Wi-Fi named after a clause (无线网 too), a
value spelled out "— so X", what a laptop or PDFs "unlock/open with", a lock "set to" a
code, 儿童锁 and 锁屏是, 开机要输 X, what sets or unsets an alarm, a device's "user / password" or
"admin, X", signing in "as X with Y", "locked with", "login became", a value after a
device or an app and a colon, a value "是" later in a password's clause. The values are
made up. The passwords are checked on the rules alone (no scorer), so that each test
fails without its rule.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import (
    assert_finds,
    assert_rules_leave,
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
    ("text", "value"),
    [
        ("Nell's Yahoo password, which her son keeps in the kitchen drawer: lavender1962",
         "lavender1962"),
        ("the centrifuge's service password, from the rep: spin4400", "spin4400"),
        ("Aled's school portal password after the reset: Cennin!Pedr5", "Cennin!Pedr5"),
        ("the caravan's Wi-Fi, which the camera falls back to: Gwynt_Mor_61", "Gwynt_Mor_61"),
        ("Wi-Fi for the barn repeater: hay-bale-loft-7", "hay-bale-loft-7"),
        ("外婆家的无线网 waipo1948，去年装的", "waipo1948"),
        ("前台访客无线 guest_lobby，员工无线 Staff@2F", "Staff@2F"),
        ("voice note from Bryn: 'capital T, then ractor, then two two' — so Tractor22",
         "Tractor22"),
        ("语音转文字：“仓库系统的密码是他名字拼音加八八，全小写”——就是 wanggang88", "wanggang88"),
        ("the studio iMac unlocks with Glaze&Kiln42", "Glaze&Kiln42"),
        ("the board-pack PDFs open with BRD0917", "BRD0917"),
        ("the bike room at Mill Court opens with 4B2207 on the side keypad", "4B2207"),
        ("the caravan safe, we set it to 550912", "550912"),
        ("Anwen set the gym locker at the leisure centre to 7741", "7741"),
        ("hotel safe in Seoul 设成了 2718，护照在里面", "2718"),
        ("孙女平板的儿童锁 4455", "4455"),
        ("外公的手机锁屏是 8520", "8520"),
        ("那台旧电脑开机要输 laozhang1975", "laozhang1975"),
        ("shop alarm: full set is 7046 then the tick", "7046"),
        ("church hall alarm: set and unset with 2291", "2291"),
        ("alarm company note: normal disarm 6630", "6630"),
        ("the pharmacy PC — mdavies / Pill.Counter.72", "Pill.Counter.72"),
        ("router in the shed: admin, tractor881", "tractor881"),
        ("the ward PC at night: Rhian signs in as rhianw with Lamp!Night44", "Lamp!Night44"),
        ("Ffion's exam laptop is locked with Snowdon2031", "Snowdon2031"),
        ("after the forced change, Dai's login became Cwtch#2026", "Cwtch#2026"),
        ("the choir's shared login, choir.llan with Anthem!Hall3", "Anthem!Hall3"),
        ("照片都备份在 NAS 上，登录 admin 用 Photo@NAS77", "Photo@NAS77"),
        ("Osian's allotment-society app: osianw / Marrow-Prize-9", "Marrow-Prize-9"),
        ("the lab's shared analysis workstation in room 4: pipette77", "pipette77"),
        ("Gwen's building-society online banking: Gwen$BS-48", "Gwen$BS-48"),
        ("何苒 的 router password 每月换，this month 是 erhai0907", "erhai0907"),
        ("Karim 的 Outlook password 找回以后新设的是 Karim#Mail25", "Karim#Mail25"),
    ],
)  # fmt: skip
def test_the_rules_find_what_older_splits_still_missed(text: str, value: str) -> None:
    assert ("password", value) in rules_find(text), rules_find(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("菜市場找陳老闆 0928-441-706", "phone", "0928-441-706"),
        ("the hurling coach, for fixture changes: 087 214 5531", "phone", "087 214 5531"),
        ("Reto Gisler, if the server room floods: 079 318 44 20", "phone", "079 318 44 20"),
        ("prefs exported: name=Aiko, emergency_phone=080-4417-2290", "phone", "080-4417-2290"),
        ("她发的 WhatsApp 链接 https://wa.me/447823537922 点开就能聊", "phone", "447823537922"),
        ("the school office contact: 6123 4567, ask for Mrs Tan", "phone", "6123 4567"),
        ("Grandad's first-generation number, from his old bank book: 440104560721131",
         "national_id", "440104560721131"),
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
        "酒店确认号 88437219，前台报这个就行",
        "2^34 = 17179869184",
        "the survey asks for your first visit date: March 2019",
        "the museum asks which year you first came: 2019",
        "the area code, that is 0131.",
        "she stopped using the old laptop and the new one is faster",
        "the Wi-Fi router model: RT-AX58U",
        "Wi-Fi QR content: WIFI:T:WPA;S:Home-Guest;P:;;",
        "the password policy changed — so 2024",
        "we met at the code club, so it's Friday2",
        "the PDF opens with Adobe-Reader",
        "we set the alarm to 0630 every day",
        "the unset values 1000, 2000",
        "team roles: admin, finance2 and HR",
        "she logs in with Google2FA every day",
        "the office is locked with Yale-3000 deadbolts",
        "my laptop: ThinkPad-X1",
        "the support portal: INC0012345",
        "Rozenn's French account for the family allowance: FR7606810883016165413628460",
        "password 不是 abc12345 这种弱的",
    ],
)
def test_the_rules_leave_the_twentyfirst_rounds_look_alikes(text: str) -> None:
    # The rules': the scorer has look-alikes of its own ("my laptop: ThinkPad-X1").
    assert_rules_leave(text)


def test_the_next_key_of_a_json_object_is_no_aside() -> None:
    text = '{"ssid": "Silo", "psk": "silo-psk-8", "mqtt_host": "10.0.3.2"}'
    assert rules_find(text) == [("password", "silo-psk-8")]


def test_a_mnemonic_after_a_key_safes_code_is_not_taken_for_it() -> None:
    text = "the key safe at the cottage is on 1415 — 'Agincourt', Dad says"
    assert [v for c, v in found(text) if c == "password"] == ["1415"]
