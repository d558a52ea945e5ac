"""The third round of rules: vendor key shapes, tool syntax, lock codes, more languages.

Each rule has a positive and the nearest look-alike it must leave alone.
"""

from __future__ import annotations

import pytest

from recalld_server.domain.sensitive.detection import Detector

DETECTOR = Detector()


def found(text: str) -> list[tuple[str, str]]:
    return [(d.category.value, text[d.start : d.end]) for d in DETECTOR.find(text)]


def assert_finds(text: str, category: str, value: str) -> None:
    hits = found(text)
    assert (category, value) in hits, hits


_PUTTY_KEY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\n"
    "Encryption: none\n"
    "Comment: eddsa-key-20260101\n"
    "Public-Lines: 2\n"
    "N3lg8zV5yPU8d0FZfWe7ihGyiRUIQfHOJMaidDn87XG3/q/xbMtEPO6UkzYuF0ie\n"
    "9Pu2\n"
    "Private-Lines: 1\n"
    "njHkAm1/5wDr16EpLLJIVGHz4FxFEtKyPiYGFDm7ena8D5Vf\n"
    "Private-MAC: 9731662b5e803b61ba4168160adb59261ff2d3c425c8d99d19bdd0b6cc60d5d3"
)


@pytest.mark.parametrize(
    "value",
    [
        "patu8jzPde0IgxLd6.612dd272d1371c17149d439536b3216fdaeeb975729fae923d5a4fd12aabfe22",
        "key-8f219e9cb0eb53f16947ccf25ec84d8d",  # Mailgun
        "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",  # LangSmith
        "sk_b026c48bbf33feff9243a8f506b40928b5b7a767c76fb008",  # ElevenLabs
        "e2b_f86bebb2737f6a6f0fb23c6f5da2cec255404e4f",
        "MTQ7wjJJibaZUPgHV7iB3m03nb.GBLEPH.1qhT61qtc4xatws8phP9nhFyJfm5di4PzJ59FH",  # Discord
        "hvs.7J58m1CiAhzCueQpBenQtYh5",  # Vault
        "NRAK-JXJQI3OGZ5KOK16ZV0MWUFXBV93",  # New Relic
        "AAAACTbyvHN:APA91bLioDnkHIfxIq2HZt-PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGebcy8F5n3"
        "-YNBDRzrZSgqbjG3uhkWKFLf6xuI5aHUQPFeNBTxaQWk8JzFalHlsZfYcMMDktXP-tKs",  # FCM
        "fw_c01T5GOBUSZGi6HWGK10Zb0R",  # Fireworks
        "fc-72014b3ce107f80e222f828767efc2f9",  # Firecrawl
        "PMAK-1624a8940f1f836f99eee369-2f09e2e8c662248b483b7ffc050fec94db",  # Postman
        "dp.st.dev.yuh1vauWv1zh87mTa5Vsqxezy3Lex7BWr2drgd1QsO7",  # Doppler
        "sk.eyJ1IjoijprBGumXxY9B4bZWOz648JJnUfd7UACNWiP3sFd67JikEAvstq.VVPqzPptEJQzhkPkenG5ZF",
    ],
)
def test_finds_vendor_keys_by_their_shape(value: str) -> None:
    assert found(f"the user's key {value}, for the side project") == [("api_key", value)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "告警 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
            "7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
        ),
        (
            "https://open.feishu.cn/open-apis/bot/v2/hook/7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
            "7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
        ),
        (
            "https://oapi.dingtalk.com/robot/send?access_token=87cced9041dff02cee737443e210471948d33296c87009e8a7f770d9106fd287",
            "87cced9041dff02cee737443e210471948d33296c87009e8a7f770d9106fd287",
        ),
        (
            "https://discord.com/api/webhooks/1200000000000000001/"
            "2VD-eR1UYzaLiA-zNyD7CHLn-xC_1hsYgBds1ghxY5OokvQyx7eNWVQ4vnakJkS1pAWT",
            "2VD-eR1UYzaLiA-zNyD7CHLn-xC_1hsYgBds1ghxY5OokvQyx7eNWVQ4vnakJkS1pAWT",
        ),
        (
            "machine api.heroku.com\n  login ops\n  password 7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
            "7eaed467-25a2-a7b8-60dc-d6c8a1f8b462",
        ),
    ],
)
def test_finds_the_secret_part_of_webhooks_and_netrc(text: str, value: str) -> None:
    keys = [v for c, v in found(text) if c == "api_key"]
    assert len(keys) == 1 and value in keys[0], found(text)


def test_a_putty_key_file_is_one_private_key() -> None:
    assert found(f"his PuTTY key:\n{_PUTTY_KEY}") == [("private_key", _PUTTY_KEY)]
    # Its public part alone (no private lines) is not a private key.
    public = _PUTTY_KEY.split("\nPrivate-Lines")[0]
    assert [c for c, _ in found(public)] != ["private_key"]


@pytest.mark.parametrize(
    "text",
    [
        "stored hash: $2b$12$9Pu2njHkAm1wDr16EpLLJIVGHz4FxFEtKyPiYGFDm7ena8D5Vfq",
        "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$N3lg8zV5yPU8d0FZfWe7ihGyiRUIQfHOJMa",
        "PublicKey = N3lg8zV5yPU8d0FZfWe7ihGyiRUIQfHOJMaidDn87XG=",
        "segment id Q7wjJJibaZUPgHV7iB3m03nbX2 in the export",
        "the request id is Q7wjJJibaZUPgHV7iB3m03nbX2",
        "n=" + "N3lg8zV5yPU8d0FZfWe7ihGyiRUIQfHOJMaidDn87XG3" * 6 + " (the JWKS modulus)",
        "fw_update_firmware_version.bin",
        "pk.eyJ1IjoijprBGumXxY9B4bZWOz648JJnUfd7UACNWiP3sFd67JikEAvstq.VVPqzPptEJQzhkPkenG5ZF",
    ],
)
def test_leaves_alone_hashes_public_keys_and_named_ids(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("net user backup Bk!Win_1987 /add", "Bk!Win_1987"),
        ("net use Z: \\\\nas\\share /user:kaveh Nas!Share_11", "Nas!Share_11"),
        ("keytool -importkeystore -srcstorepass Jks!Old_2026 -destkeystore n.p12", "Jks!Old_2026"),
        ("openssl pkcs12 -export -in a.pem -passout pass:P12_out_Zq", "P12_out_Zq"),
        ("caddy hash-password --plaintext 'Shed!key42'", "Shed!key42"),
        ("db.lan:5432:*:report:Rep0rt#Q3", "Rep0rt#Q3"),
        ("define( 'DB_PASSWORD', 'Wp!Site_2026' );", "Wp!Site_2026"),
        ("$conf['password'] = 'Dr8!upal_site';", "Dr8!upal_site"),
        ('network={\n    ssid="Home"\n    psk="Home_Net_2024"\n}', "Home_Net_2024"),
        ("家里路由器 192.168.1.1，admin/Fuwu2024x", "Fuwu2024x"),
    ],
)
def test_finds_passwords_in_tool_syntax(text: str, value: str) -> None:
    assert_finds(text, "password", value)


@pytest.mark.parametrize(
    "text",
    [
        "net user administrator /active:yes",
        "run net user to list the accounts",
        "keytool -list -storepass:env STOREPASS",
        "openssl pkcs12 -export -in a.pem -passout pass:$P12_PASS",
        "WARN:1234:core:init:started",
        "host:port:database:username:password",
        "'password' => 'required|min:8',",
        "'password_confirmation' => 'same:password',",
        "fields = ('username', 'password', 'password2')",
        "password = getpass.getpass()",
        "key_mgmt=WPA-PSK",
        "go to /admin/Users2024 to check",
    ],
)
def test_leaves_alone_tool_syntax_without_a_password(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Aoife's code for the garage door is 5512; don't share it", "5512"),
        ("the safe combination is 12-34-56", "12-34-56"),
        ("her gym locker opens with 3391.", "3391"),
        ("the archive unlocks with Tax2024!Rivera", "Tax2024!Rivera"),
        (
            "the passphrase for the backup drive is purple monkey dishwasher.",
            "purple monkey dishwasher",
        ),
        ("his master password is Lisbon tram at dusk 1998.", "Lisbon tram at dusk 1998"),
        ("口令是天王盖地虎", "天王盖地虎"),
        ("密码 王晓峰2025，别外传", "王晓峰2025"),
        ("wifi Tallinn-5G, key kohvik-2024", "kohvik-2024"),
        (
            "wifi password (she said to keep it handy, it's for the guests): Guest!Kerry7",
            "Guest!Kerry7",
        ),
        ("he wrote the password on a note and read it to me: Note_Pad_77.", "Note_Pad_77"),
    ],
)
def test_finds_lock_codes_and_passphrases(text: str, value: str) -> None:
    assert found(text) == [("password", value)]


@pytest.mark.parametrize(
    "text",
    [
        "the code for the front door lock is on the fridge",
        "the code for the door changed on 2024-05-01, she said",
        "the pdf opens with Adobe-Reader on her laptop",
        "the passphrase is in the vault",
        "the master password is what protects everything.",
        "the passphrase for his disk is stored in 1Password",
        "口令：见群公告",
        "口令牌（OTP token）丢了，要补办",
        "密码 错误3次就会锁定",
        "the wifi key exchange uses WPA3-SAE",
        "Wi-Fi: Cabin (password on the card by the door — Maren didn't type it)",
        "他问登录时输自己的密码还是 admin 的密码",
    ],
)
def test_leaves_alone_lock_and_passphrase_talk(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Putri, nomor paspor B7201554, joins in May", "B7201554"),
        ("Elif'in pasaport numarası U48210937", "U48210937"),
        ("Aino's passi: PX3390417", "PX3390417"),
        ("Kovács Anna útlevélszáma: BE7734120", "BE7734120"),
        ("Jana — cestovní pas 41876032 — flies on the 3rd", "41876032"),
        ("Mette, pas nr. 318840275 (dansk)", "318840275"),
        ("E27730914 就是他现在的护照号", "E27730914"),
        (
            "The passport — the renewed one, not the old one in the drawer — is E61298437.",
            "E61298437",
        ),
    ],
)
def test_finds_passports_in_more_languages_and_phrasings(text: str, value: str) -> None:
    assert found(text) == [("passport", value)]


def test_finds_passports_in_their_column() -> None:
    text = "name,passport,nationality\nAna Ruiz,XD1234567,ESP\nBo Li,E12345678,CHN"
    assert found(text) == [("passport", "XD1234567"), ("passport", "E12345678")]
    # Other columns, and rows after the table ends, are not passports.
    text = "name,passport_expiry,code\nAna,2031-05-01,XD1234567\n\nBo,E12345678"
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("card 4532\xa00151\xa01283\xa00366 from the bank's page", "4532\xa00151\xa01283\xa00366"),
        ("银行卡6228 3982 5979 1904 744，办卡用", "6228 3982 5979 1904 744"),
    ],
)
def test_finds_cards_with_no_break_spaces_and_whole(text: str, value: str) -> None:
    assert found(text) == [("card_number", value)]


@pytest.mark.parametrize(
    "text",
    [
        "IBAN FR76 4532 0151 1283 0366 0000 000 fails its check",  # a card inside it
        "累计调用次数 13902857714，比上个月多",
        "the index holds 13628470195 embeddings now",
        "组会腾讯会议 512-847-3961，这周取消",
        "Zoom meeting 512 847 3961 at noon",
        "the meetup is on 2026-01-17 at 18:30",
    ],
)
def test_leaves_alone_counts_meetings_and_broken_ibans(text: str) -> None:
    assert found(text) == []


def test_a_phone_given_as_someone_is_on_it() -> None:
    assert found("Aroha is on 027 555 0142 after six") == [("phone", "027 555 0142")]
