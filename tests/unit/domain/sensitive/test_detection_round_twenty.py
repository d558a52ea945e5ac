"""The twentieth round: rules drawn from the twenty-second and twenty-fourth splits' misses.

Passwords: a purpose set off by commas before the value ("the password, for voiding
orders: …"); codes of lockers, cabinets and shower blocks, with a letter at either end
("cabinet 的 code 是 K447Z"); a door's code that is "now" another; a safe kept "at" a
combination; a menu or a cabinet that "opens with" a PIN; a Chinese roller door, garage
or locker with its code, a code spelled out in Chinese numerals, 开门码 and 访客码; a lock
asked about and answered below; a password given, then its form ("…, all one word",
"…，拼音全小写"); a value after "也就是"; a passphrase a folder "opens with"; the answer a portal
"asks for", or named first ("…, that's her security answer"); a value that "was X until
…; now it's Y"; a plain word alone after a password's word and a colon ("pw for the shed
app: hummingbird"); "it's X, all lowercase" where a password is talked of; a passphrase
someone "chose"; plain words and a number after "password"; a security check's answer
"set" to a name; and left alone: a ride's PIN. Phones: Japanese and Dutch mobiles
without a word for a phone, a country code and a dot. Passports: a name and a
passport-shaped number in a crew list or a guest file. Keys: ntfy and Cal.com tokens; a
public key named before an aside. The values are made up. The passwords are checked on
the rules alone (no scorer), so that each test fails without its rule.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, rules_find


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The till password, for voiding sales: 774301b", "774301b"),
        ("仓库交接：卷帘门 802214，夜班电话在墙上", "802214"),
        ("the rowing club locker code 3318，别忘了", "3318"),
        ("the harbour shower block code this month: 5521#", "5521"),
        ("Owain 说 hut 外面 first-aid cabinet 的 code 是 K447Z", "K447Z"),
        ("the slide-puzzle cabinet in the museum opens with 40417", "40417"),
        ("She keeps the garage safe at 12-40-07", "12-40-07"),
        ("handover: side door now B7712, van key safe 3381", "B7712"),
        ("实验室门锁改成七七三一零五了，别外传", "七七三一零五"),
        ("停车场道闸的开门码 6610，今天有效", "6610"),
        ("布草间的门锁是多少？\n阿芳：0623，用完锁好", "0623"),
        ("Bruno says the barn Wi-Fi key is tractorshedgreen, all one word", "tractorshedgreen"),
        ("教室投影仪的开机密码 wuniansanban，拼音全小写", "wuniansanban"),
        ("印晓东说，妈妈的邮箱密码是老家的门牌号加名字拼音，也就是 gongshuzhen117",
         "gongshuzhen117"),
        ("Oona: 'the pass for the tide app is the dog's name twice, all lower case' — rexrex",
         "rexrex"),
        ("the club's shared drive opens with the passphrase kelp anchor lantern gull",
         "kelp anchor lantern gull"),
        ("Morven's pension portal asks for her mother's maiden name; the answer on file is "
         "Gillespie", "Gillespie"),
        ("Kit's first rabbit was Pepper, that's her bank security answer", "Pepper"),
        ("柏林小时候的猫叫 Mochi，这是她 Apple ID 的 security answer", "Mochi"),
        ("The club website admin was rowing2022 until the treasurer objected; now it's Keel!Oar77",
         "rowing2022"),
        ("The club website admin was rowing2022 until the treasurer objected; now it's Keel!Oar77",
         "Keel!Oar77"),
        ("pw for the community garden gate app: sunflower", "sunflower"),
        ("Marek's heslo k bance: vltavska", "vltavska"),
        ("user: what's the cabin wifi pw?\nuser: it's heronpond, all lowercase", "heronpond"),
        ("gpg asked for a passphrase and Ines chose quiet otter river lamp",
         "quiet otter river lamp"),
        ("Noor's bank asks for her first school as a security check; she set it to Larkfield",
         "Larkfield"),
        ("Netflix is shared with Dad, same login, password kettle monday 19", "kettle monday 19"),
        ("the password is otter lantern 7", "otter lantern 7"),
    ],
)  # fmt: skip
def test_the_rules_find_the_twentieth_rounds_passwords(text: str, value: str) -> None:
    assert ("password", value) in rules_find(text), rules_find(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Kaede's manager in Osaka: 080-3317-2264", "phone", "080-3317-2264"),
        ("Marloes 06-41187250", "phone", "06-41187250"),
        ("郎晓雯 +86.13911824406，parents 的 emergency contact 写她", "phone", "+86.13911824406"),
        ("Skipper's crew list for the Visser charter: Pieter NXB7KP2R4, mobile +31 6 16757823",
         "passport", "NXB7KP2R4"),
        ("客人登记: 郑晓东 E31882069, 许慧 EC5528417, 押金已付", "passport", "EC5528417"),
        ("the hut's ntfy alerts go out with tk_abcdefghij0123456789klmnopqrs", "api_key",
         "tk_abcdefghij0123456789klmnopqrs"),
        ("sync key cal_live_0123456789abcdef0123456789abcdef for the calendar", "api_key",
         "cal_live_0123456789abcdef0123456789abcdef"),
    ],
)  # fmt: skip
def test_finds_the_twentieth_rounds_other_values(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "The password, for example, is something you can remember",
        "A password, for instance, is never sent by e-mail",
        "the locker code for the InPost parcel is 284913, valid 72 hours",
        "upgraded the door controller firmware from v3.0.9 to v3.1.2",
        "The door was fitted at 10-12-24 by Sam",
        "门锁是两三年前换的",
        "车库门 0800 开到 2000",
        "the season opens with 12000 visitors",
        "Her password is her dog's name, all lower case",
        "the password is in lower case, one word",
        "The survey asks about your city; the answer was London",
        "boarding pass for the flight: economy",
        "password for the portal: attached",
        "your Lyft PIN is 4471, show it to the driver",
        "it's Monday, all one word",
        "the password changes every 90 days",
        "the password is in room 12",
        "Our guests: Order TR2024XY1 shipped",
        "the relay's WireGuard public key, pinned in the team wiki: "
        "Xm3aB9c0Rz1Yq8Wv2Ut7Ss6Pp5Oo4Nn3Mm2Ll1Kk0J=",
    ],
)
def test_leaves_the_twentieth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
