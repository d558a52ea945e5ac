"""The detector's rules, one category at a time, with the near misses each must leave alone."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.detection import Detector

DETECTOR = Detector()


def found(text: str) -> list[tuple[str, str]]:
    return [(d.category.value, text[d.start : d.end]) for d in DETECTOR.find(text)]


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("My Visa is 4111 1111 1111 1111, exp 12/29", "card_number", "4111 1111 1111 1111"),
        ("card: 5555-5555-5555-4444.", "card_number", "5555-5555-5555-4444"),
        ("Amex 3782 822463 10005 on file", "card_number", "3782 822463 10005"),
        ("银行卡号6222021234567890128，尾号0128", "card_number", "6222021234567890128"),
        ("卡号是 ６２２２ ０２１２ ３４５６ ７８９０ １２８", "card_number", None),
        ("身份证号：11010519491231002X。", "national_id", "11010519491231002X"),
        ("ID 440308199901010012 belongs to Li", "national_id", None),
        ("My passport number is E12345678.", "passport", "E12345678"),
        ("护照号码：EA1234567，明年到期", "passport", "EA1234567"),
        ("IBAN DE89 3704 0044 0532 0130 00 thanks", "iban", "DE89 3704 0044 0532 0130 00"),
        ("pay to GB82WEST12345698765432", "iban", "GB82WEST12345698765432"),
        ("手机 138 0013 8000，找我", "phone", "138 0013 8000"),
        ("我的手机号13800138000", "phone", "13800138000"),
        ("office 010-62345678", "phone", "010-62345678"),
        ("call +1 415 555 0132 tonight", "phone", "+1 415 555 0132"),
        ("UK line +44 20 7946 0958", "phone", "+44 20 7946 0958"),
        ("(415) 555-0199 is her cell", "phone", "(415) 555-0199"),
        ("邮箱是zhang.san@example.com。", "email", "zhang.san@example.com"),
        ("key sk-proj-Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789", "api_key", None),
        ("use sk-ant-api03-AbCdEf0123456789ghIJklMNopQRstuvWX", "api_key", None),
        ("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 is my token", "api_key", None),
        ("AWS AKIAIOSFODNN7EXAMPLE", "api_key", "AKIAIOSFODNN7EXAMPLE"),
        ("slack xoxb-1234567890-abcdefghijklmno", "api_key", None),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "api_key", None),
        ("Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c9b8a", "api_key", "9f8e7d6c5b4a3f2e1d0c9b8a"),
        ("token: 8f3a9c2e7b1d4f6a0e5c3b2a1d9e8f7c", "api_key", None),
        ("密钥是 q8Zr2LmT0xWv5NbK7ycH3sDp", "api_key", "q8Zr2LmT0xWv5NbK7ycH3sDp"),
        ("aZ8kQ2mX9pL4vR7tY1wE6uI3oP5sD0fG", "api_key", None),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "api_key",
            None,
        ),
        ("my password is hunter2!", "password", "hunter2"),
        ("the wifi password is Tr0ub4dor&3 for guests", "password", "Tr0ub4dor&3"),
        ("pwd: s3cr3t", "password", "s3cr3t"),
        ("密码是Abc12345。", "password", "Abc12345"),
        ("登录密码：Qw!23456，别外传", "password", "Qw!23456"),
        ("password changed to BlueSky#42", "password", "BlueSky#42"),
    ],
)
def test_finds(text: str, category: str, value: str | None) -> None:
    hits = found(text)
    assert [c for c, _ in hits] == [category], hits
    if value is not None:
        assert hits[0][1] == value


def test_a_private_key_is_found_whole() -> None:
    text = (
        "here it is\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x2y3z\n"
        "q8Zr2LmT0xWv5NbK7ycH3sDp==\n-----END RSA PRIVATE KEY-----\nthanks"
    )
    [(category, value)] = found(text)
    assert category == "private_key"
    assert value.startswith("-----BEGIN") and value.endswith("-----END RSA PRIVATE KEY-----")
    # A key cut off before its END line is still masked to the end of its body.
    [(category, value)] = found(text.split("-----END")[0])
    assert category == "private_key" and "q8Zr2" in value


@pytest.mark.parametrize(
    "text",
    [
        "订单号 202612041530228871 已发货",
        "order 4111111111111112 shipped",  # fails Luhn
        "order no. 4111111111111111 is a test id",  # a card-shaped order number
        "timestamp 1733312345123, retry at 1733312345",
        "version 4.11.1111.1111",  # dotted like a phone, but no country code before it
        "build 2024.12.07.1530",
        "at 2026-12-04T20:36:33Z we shipped v2.3.5 (1.0.0-rc.1) on Python 3.12.4",
        "version 1.0.13800138",
        "commit 3f2a9c1e8b7d6f5a4c3b2a1908f7e6d5c4b3a291",
        "short sha 3f2a9c1",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "sha256:9b2c8f1e4d7a6b3c0e5f8a1d2c4b7e9f0a3d6c8b1e4f7a0d3c6b9e2f5a8d1c4b",
        "I forgot my password again",
        "reset the password tomorrow",
        "密码忘了，明天去重置",
        "the password is incorrect",
        "the key insight is caching; token budget of 4096",
        "task-list and desk-lamp are on my desk-organizer-shopping-list",
        "@alice please review",
        "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcw==",
        "getUserProfileByIdAndTenant2024Version",
        "room 13800 in building 7",
        "他的年薪 ¥1,380,000，邮编100080",
        "身份证号 110105194912310021 写错了",  # wrong check digit
        "tracking 1Z999AA10123456784",
        "the model is BAAI/bge-small-en-v1.5 at /v1/embeddings",
        "https://example.com/search?q=abc&page=2&session=XyZ",
        "passport renewal takes 3 weeks",
    ],
)
def test_leaves_alone(text: str) -> None:
    assert found(text) == []


def test_overlaps_keep_the_stronger_category() -> None:
    # A JWT given as a password is a key; a card number is not also a phone number.
    text = "password: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijklmnop"
    assert [c for c, _ in found(text)] == ["api_key"]
    assert [c for c, _ in found("4111111111111111")] == ["card_number"]


@pytest.mark.parametrize(
    "text",
    [
        # Each value is also a random-looking word named "key", which alone would be
        # taken for an API key (the category order puts keys before passwords).
        "uci set wireless.@wifi-iface[0].key=Gx7pQ2mLz9RkT4vWb8Nc",
        "nmcli con modify Home wifi-sec.psk Gx7pQ2mLz9RkT4vWb8NcQ",
        "DB_URL=mysql://u:pscale_pw_Gx7pQ2mLz9RkT4vWb8NcGx7pQ2mLz9RkT4vWb@aws.connect.psdb.cloud/db",
    ],
)
def test_a_format_that_names_its_kind_wins_over_a_guess(text: str) -> None:
    assert [c for c, _ in found(text)] == ["password"]


def test_a_value_named_key_near_a_network_is_masked_as_a_key() -> None:
    # Not a Wi-Fi command, so the format does not say it is a password; it is still
    # a random-looking value named "key", so it is masked, not left in the text.
    assert found("the wifi at the cabin: key=Gx7pQ2mLz9RkT4vWb8Nc") == [
        ("api_key", "Gx7pQ2mLz9RkT4vWb8Nc")
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("My password is correct horse battery staple", "correct horse battery staple"),
        ("her password was red green blue yellow orange.", "red green blue yellow orange"),
        ("the garage code is 5566", "5566"),
        ("safe code: 1290", "1290"),
    ],
)
def test_plain_words_and_a_garage_code_are_passwords(text: str, value: str) -> None:
    assert ("password", value) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "the password is expiring next week for everyone",
        "the password is usually my dog's name",
        "my password is case sensitive btw",
        "the password is written on the sticky note",
        "the new password is long enough now right",
        "the vault code is public knowledge",
        "safe code review pending",
    ],
)
def test_sentences_about_a_password_are_not_one(text: str) -> None:
    assert [c for c, _ in found(text) if c == "password"] == []


def test_several_values_in_order() -> None:
    text = "卡 4111 1111 1111 1111，电话 13800138000，邮箱 a.b@example.cn，密码是 Zx9#kk12"
    assert [c for c, _ in found(text)] == ["card_number", "phone", "email", "password"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_ordered_disjoint_spans(text: str) -> None:
    detections = DETECTOR.find(text)
    for detection in detections:
        assert 0 <= detection.start < detection.end <= len(text)
        assert isinstance(detection.category, Category)
    for first, second in itertools.pairwise(detections):
        assert first.end <= second.start


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("Leila's mobile is 07823 619930, no landline", "phone", "07823 619930"),
        ("Hiroshi の携帯 070-9938-7253", "phone", "070-9938-7253"),
        ('<a href="tel:+13125550117">call</a>', "phone", "+13125550117"),
        ("苏晓彤的手机 +86\xa0159\xa01742\xa03973", "phone", "+86\xa0159\xa01742\xa03973"),
        (
            "DATABASE_URL=postgres://ledger:Ld9-hwq7-Zt@10.20.0.12:5432/ledger",
            "password",
            "Ld9-hwq7-Zt",
        ),
        ("mysql -h 10.8.0.4 -u report -p'Rp_2025!view' sales", "password", "Rp_2025!view"),
        (
            'the master passphrase is "velvet moth under nine lamps"',
            "password",
            "velvet moth under nine lamps",
        ),
        ("laptop PIN 8812", "password", "8812"),
        ("SIM 卡 PIN 码是 0417", "password", "0417"),
        ("her password's just sunshine88 lol", "password", "sunshine88"),
        ("Tomasz Kowalski, paszport YB9151996", "passport", "YB9151996"),
        ("173825112 (passport), call me", "passport", "173825112"),
        ("Swiss payroll account CH13 5832 8181 4124 6833 2", "iban", "CH13 5832 8181 4124 6833 2"),
        ("bot token 6669874524:AA-h8lj5QnntT1z6lRmrV-lwjHqRhPy-etN", "api_key", None),
    ],
)
def test_finds_the_less_common_forms(text: str, category: str, value: str | None) -> None:
    test_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "PASSWORD=${DB_PASSWORD:?missing}",
        "password=[FILTERED] in the Rails log",
        "def change_password(user_id: int, new_password: str) -> None:",
        "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx  # replace me",
        '<script integrity="sha384-kskCUX1UXZoksO50CF9ebZwFqtEzlmqdYXFwVN8xTrYUN6eOwA3OkXmt1T">',
        "The host key fingerprint is SHA256:2Y6IaQAVXRTt/Fy1Cd6nuiqykCXdvaQnUYu42CDTqpj.",
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----",
        "row id 17600012345 in the analytics table",
        "2 的 33 次方是 8589934592",
        "routing number 021000021 is public",
        "pi_3QdL8R2eZvKYlo2C0x4Pj8aB succeeded",
    ],
)
def test_leaves_alone_the_less_common_look_alikes(text: str) -> None:
    test_leaves_alone(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("PGPASSWORD=pg-Ledger-4471 psql -h db.internal -U ledger", "pg-Ledger-4471"),
        ("密码是晓峰2025，中文也能当密码", "晓峰2025"),
        ("用户家的无线网密码yy20180808，客人来了告诉他们", "yy20180808"),
        ("The AWS root login is ops-admin / Aws#Vance2026 and nothing else", "Aws#Vance2026"),
        ("Maeve's laptop password — Gallagher!77 — she said I can keep it.", "Gallagher!77"),
        (
            "Wi-Fi password at the user's place: it's blue-heron-0712, all lowercase.",
            "blue-heron-0712",
        ),
        ("redis-cli -a 'redis_Sky_09' ping", "redis_Sky_09"),
        ("the building door code is 7315", "7315"),
        ("The NAS admin password the user set is Cobalt#Nas2026.", "Cobalt#Nas2026"),
        ("The passcode for the user's voicemail is 80417.", "80417"),
    ],
)
def test_finds_passwords_however_they_are_stated(text: str, value: str) -> None:
    test_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "the promo code is 2024 for the spring sale",
        "密码是什么来着？",
        "login from 10.0.0.1 / port 22 at 09:00",
        "her password's expired again",
    ],
)
def test_password_talk_without_a_password(text: str) -> None:
    test_leaves_alone(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("the old account uses sunflower1988 as the password", "password", "sunflower1988"),
        (
            "docker login registry.example.com -u ana -p Florian!Reg2026",
            "password",
            "Florian!Reg2026",
        ),
        (
            "curl -u admin:Grafana#Ops21 http://grafana.local/api/health",
            "password",
            "Grafana#Ops21",
        ),
        ("requirepass r3dis-Kestrel-04 (from redis.conf)", "password", "r3dis-Kestrel-04"),
        (
            "assistant: what's the password for the drive?\nuser: otter-lantern-51",
            "password",
            "otter-lantern-51",
        ),
        ("门禁密码2580#，按完要听到滴一声", "password", "2580"),
        ("Siobhan's 13-digit Visa: 4752 6117 72502", "card_number", "4752 6117 72502"),
        ("250770892 is the passport number he gave the airline", "passport", "250770892"),
        ("石川のパスポート番号は MH1747609 です", "passport", "MH1747609"),
        (
            "阿里云 AccessKey ID LTAI5txjsONNWGTAJCoeKJbC，用于备份",
            "api_key",
            "LTAI5txjsONNWGTAJCoeKJbC",
        ),
        ("TEL;TYPE=cell:+86 181 4032 3720", "phone", "+86 181 4032 3720"),
    ],
)
def test_finds_the_forms_the_fresh_split_showed(text: str, category: str, value: str) -> None:
    test_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "the user logs in with a passkey, so there's no password to store",
        "password_hash = bcrypt.hashpw(raw, bcrypt.gensalt())",
        "docker run -e POSTGRES_PASSWORD_FILE=/run/secrets/pg_pw postgres:16",
        "the user's daughter's student number is 2023110457",
    ],
)
def test_leaves_alone_what_the_fresh_split_showed(text: str) -> None:
    test_leaves_alone(text)
