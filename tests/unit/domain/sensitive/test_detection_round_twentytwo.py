"""The twenty-second round: rules drawn from the twenty-sixth split's misses.

Passwords: a security question "asked" for in the past tense and the answer someone "gave";
a value spoken in a voice note then written after a closing quote and a dash, or after
"donc" once its digits were said one by one; a network's key after a clause and in
French or Icelandic ("mot de passe", "lykilorð"); "set the … password to X"; "password
就是 X" and Cantonese "係"; a secret changed "from the factory X to Y", "l'ancien X, le
nouveau Y" and "old X, new Y"; a table whose Chinese column names a role's code
(收银主管码) beside a shop; a key safe's code "是" later in the clause, a safe "设的是",
"room safe，code 3169", a code pressed at a roller door (卷帘门按 170825), 解压码; a Wi-Fi
"给他的是" X, a Wi-Fi's "network / key" in lower case, "login is … with X", "admin，X",
a PIN described then given after a dash. Left alone: a PIN a courier asks for, a
livestream's giveaway 口令. Phones: Australian mobiles, a Nigerian number after "support
line", a carrier's tracking number and a hotel reservation are no phones. Passports:
Hong Kong's K and H numbers after a name. Private keys: NEAR's "ed25519:" keys and a
Solana keypair. The values are made up; the passwords are checked on the rules alone.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import (
    assert_finds,
    assert_no_secret,
    assert_rules_leave,
    rules_find,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Moira's bank asked for her favourite childhood toy; she gave Tiny Ted", "Tiny Ted"),
        ("语音转文字：“妈，淘宝的密码我改了，大写 T，小写 b，然后二零二六”——Tb2026", "Tb2026"),
        ("message vocal : « le coffre, c'est sept, trois, un, neuf » — donc 7319", "7319"),
        ("Wi-Fi du chalet : Gite-Lacasse, mot de passe sucreriedupaysan", "sucreriedupaysan"),
        ("skrifstofa Wi-Fi for guests: Hlid-Gestir, lykilorð hraun-og-mosi", "hraun-og-mosi"),
        ("Ragna set the boiler-app password to Vatnajokull, after the glacier", "Vatnajokull"),
        ("Funmi 的 shop Wi-Fi 是她女儿设的，password 就是 adireblue", "adireblue"),
        ("陳律師同 Fiona 講，data room 嘅 password 係 HK-Deal-7731", "HK-Deal-7731"),
        ("he changed the kiln controller password from the factory Admin01 to Glaze#Kiln88",
         "Admin01"),
        ("Marc a changé son mot de passe : l'ancien marc1970gaspe, le nouveau Erable!Sucre42",
         "marc1970gaspe"),
        ("Tolu 换了 payroll 的 password：old Pay-Day-01，new Lagos*Rain9", "Lagos*Rain9"),
        ("| 门店 | 店长授权码 |\n|---|---|\n| 太古里 | 73190 |", "73190"),
        ("老周记下了仓库东门的 key safe，这周是 5820", "5820"),
        ("出差的酒店 room safe 她设的是 318604", "318604"),
        ("Kópavogur 的 hotel room safe，code 2290", "2290"),
        ("样品间的卷帘门按 604219 再按确认键", "604219"),
        ("审计底稿压缩包，解压码 SJ-audit-0917", "SJ-audit-0917"),
        ("Sigrún 问 Ade 要 office Wi-Fi，给她的是 geysir-blue-12", "geysir-blue-12"),
        ("clinic Wi-Fi: MerriVet-Staff / kelpie2019", "kelpie2019"),
        ("Bayo's Flutterwave login is his work address with Yaba#Market77", "Yaba#Market77"),
        ("交接本：门口摄像头 admin，cam_door_5521", "cam_door_5521"),
        ("Efe's laptop: the PIN is her flat number, twice — 404404", "404404"),
    ],
)  # fmt: skip
def test_the_rules_find_the_twentysecond_rounds_passwords(text: str, value: str) -> None:
    assert ("password", value) in rules_find(text), rules_find(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Nguyen Thi Lan, new client: 0431 226 978, lan.n@outlook.com", "phone", "0431 226 978"),
        ("Chidi runs the support line from 0806 214 5530", "phone", "0806 214 5530"),
        ("客戶資料：關卓謙，K40281937，+852 6123 4401", "passport", "K40281937"),
        ("Léa's NEAR key ed25519:3sLnwNGmjYhAhoeFpNQsZu1J8BiRbLUHoCnezEmKR52TjeT5UMguueJLnEZvo"
         "UCkdcSE6zfZpz1dv3a5ChXVvML", "private_key", None),
        ("Ade's Phantom keypair 4UeQo6JUJhyqoDu7x9KyrminpAtPCahmzRHRu3iGzmPpbcfVeJDEfhec4AbW3u"
         "mcbEjEJXbxh447MsA2tHQBhiyo", "private_key", None),
    ],
)  # fmt: skip
def test_finds_the_twentysecond_rounds_other_values(
    text: str, category: str, value: str | None
) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "the courier needed the PIN 5512 before handing over the parcel",
        "直播间福袋的口令是“宠粉节快乐”，粉丝在评论区打出来就能参与抽奖",
        "she set her password to expire monthly",
        "the meeting ran long — so 2024",
        "| 商品 | 条码 |\n|---|---|\n| 牛奶 | 40913 |",
        "| 门店 | 取件码 |\n|---|---|\n| 春熙路 | 40913 |",
        "电梯按 1203 楼",
        "old price 4000, new price 5000",
        "NEAR public key ed25519:8hSHprDq2StXwMtNd43wDTXQYsjXcD4MJTXQYsjXcD4M",
    ],
)
def test_the_rules_leave_the_twentysecond_rounds_look_alikes(text: str) -> None:
    assert_rules_leave(text)


@pytest.mark.parametrize(
    "text",
    [
        "DHL 5829 1140 73 is carrying the spare rotor blades",
        "Benedict 的 Booking.com reservation 4417 203 958 是 Chengdu 的 hotel",
    ],
)
def test_a_carriers_or_a_reservations_number_is_no_phone(text: str) -> None:
    assert [c for c, _ in rules_find(text) if c == "phone"] == [], rules_find(text)


@pytest.mark.parametrize(
    "text", ["车库门 0800 开到 2000", "the garage door is open 0900-1730 on weekdays"]
)
def test_hours_after_a_lock_word_are_no_pin(text: str) -> None:
    # The scorer's: a time range is not scored, whatever word for a lock comes before it.
    assert_no_secret(text)
