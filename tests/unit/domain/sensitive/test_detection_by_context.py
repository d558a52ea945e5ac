"""The fourth round: secrets found by the words and structure around them.

Keys without a vendor shape after a word for a key in their clause, values of
variables, parameters and elements named for secrets, private keys by their word or
checksum, passwords in more languages, tables, XML and command options, cards of
any issuer when named as cards, passports in more languages. Each rule has a
positive and the nearest look-alike it must leave alone.
"""

from __future__ import annotations

import hashlib

import pytest

from recalld_server.domain.sensitive.detection import Detector

DETECTOR = Detector()


def found(text: str) -> list[tuple[str, str]]:
    return [(d.category.value, text[d.start : d.end]) for d in DETECTOR.find(text)]


def _wif(secret: bytes) -> str:
    """A Bitcoin WIF key with its real checksum (compressed, mainnet)."""
    payload = b"\x80" + secret + b"\x01"
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    out = ""
    while number:
        number, rest = divmod(number, 58)
        out = alphabet[rest] + out
    return out


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("PagerDuty REST key u+vzSHFO4rJBR23_4EAB — read-only", "u+vzSHFO4rJBR23_4EAB"),
        ("用户的华为云 AK RZJ8HNRH2X5Q18ZQKA3B，SK 晚点发", "RZJ8HNRH2X5Q18ZQKA3B"),
        (
            "Renata pastes her stream key into OBS before every live: p4as-xdfs-musz-c7bh-hscd",
            "p4as-xdfs-musz-c7bh-hscd",
        ),
        ("the Twitch stream key: live_123456789_AbCdEfGhIjKlMnOpQrStUvWxYz", None),
        ("TF_TOKEN_app_terraform_io=9bNVWm9WDub5zSaKDu8YmHkFcjfn3MH terraform apply", None),
        ("rtmp://live.example.com/app/?streamname=x&key=dfcc1418d8078eeb29a986639f2b0ebf", None),
        ("<apiKey>Zx81kQm2Lp09RtYv44Hn</apiKey>", "Zx81kQm2Lp09RtYv44Hn"),
    ],
)
def test_finds_a_key_named_in_its_clause_or_by_its_name(text: str, value: str | None) -> None:
    keys = [v for c, v in found(text) if c == "api_key"]
    assert len(keys) == 1, found(text)
    if value is not None:
        assert keys == [value]


@pytest.mark.parametrize(
    "text",
    [
        "the key 'user_profile_cache_v2_20240101' in Redis",
        "cache key user:42:profile:v3",
        "key takeaways from the meeting: revenue up 12%",
        "token count was 12345678 for request 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "The session token expired (request id 7f9c2ba4e88f827d616045507605853e)",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the key handling",
        "Signing setup: key below, passphrase granite-swallow-51",
        "the webhook secret is stored in Vault at secret/data/prod/stripe-webhook-signing",
        "Primary key id_9f8e7d6c5b4a3f2e1d0c",
        "KMS key arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "a KSUID, SKgk40TiENwTq7aURoQpnhXNcDO, tags each chat message",
        "Stripe publishable key: pk_live_ap9LOj7Sk4my7HxASIdRNV0V",
        "reCAPTCHA site key 6LfZM3Jm5R7YjmSd4WJHABwkZLisXswCYNbb9TgE goes into the form",
        "Django keeps pbkdf2_sha256$870000$4QgmkiOJxpCYZe0ebEkyKw$"
        "TwTZwfY94LcR1OtZgZaLFyOBZWzVi9t3vI",
    ],
)
def test_leaves_alone_names_ids_and_public_keys_near_a_key_word(text: str) -> None:
    assert [c for c, _ in found(text) if c in ("api_key", "private_key")] == []


@pytest.mark.parametrize(
    "text",
    [
        "钱包私钥 3b86503674e34c878579718c3c3f9ed55b58c1686bad07599ed87f922e5098ff，只剩一点 ETH",
        "MetaMask account key: 0x7c7f3e37ac153e9def9c94eb37708ad0536ab2cac597824f75ddd73d502abe37",
        "[Interface]\nPrivateKey = 74XVMAbxgwyWEbRPDEnLOgdNeCEJRYFkumhIi7HNzQA=\n"
        "Address = 10.8.0.2/32",
        "age key: AGE-SECRET-KEY-1ZRPP4A48LWWX2E3D6YWQ8TKJSL50C28R32TSZ5X53V67PQMHQ6C6SQV8HT",
        "paper wallet, WIF format: KAmG4MRut1XxkwwHQ5s93VsoZi4MF2AeopTUFJnmAASLZCctWLeP",
        f"found in an old notebook: {_wif(bytes(range(1, 33)))}",
    ],
)
def test_finds_private_keys_by_their_word_or_checksum(text: str) -> None:
    assert [c for c, _ in found(text)] == ["private_key"], found(text)


@pytest.mark.parametrize(
    "text",
    [
        "tx hash 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060 from my wallet",
        "my wallet's tx 5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060",
        "wallet backup checksum e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "watch-only wallet from the xpub xpub6HL13TkXsYnExCqrZkAS5K3bR3tL7WekvPFXwswbMXZ4f3Bi"
        "XhLuLzTd7brTTgfJ2NaPwffNBcHpTVTp3rUkqDmjABenWj8VR85547i2rY6",
    ],
)
def test_leaves_alone_hashes_and_public_keys_near_a_wallet(text: str) -> None:
    assert [c for c, _ in found(text) if c == "private_key"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Liesl's FinanzOnline Passwort Gruber.Steuer24", "Gruber.Steuer24"),
        ("la contraseña del router es Tortuga_2019", "Tortuga_2019"),
        ("Yasmina 的 Wi-Fi mot de passe 是 Riad-Jasmin-44", "Riad-Jasmin-44"),
        ("Ayaka's パスワード for the JR East app: Shinkansen_E5", "Shinkansen_E5"),
        ("so the password for the portal is, um, Greenfinch_22, capital G", "Greenfinch_22"),
        ("the passphrase (the 25th word) Joaquim uses: saudade-no-cais", "saudade-no-cais"),
        ("the Gmail app password for the printer: wlcq nvtf jopz kmsb", "wlcq nvtf jopz kmsb"),
        ("初始密码是身份证后六位，她已经改成了 Jrc!Teach2026", "Jrc!Teach2026"),
        ("[security]\nadmin_user = admin\nadmin_password = Graf4na-Cormac", "Graf4na-Cormac"),
        ("<server>\n  <password>Maven_Deploy_Prz</password>\n</server>", "Maven_Deploy_Prz"),
        ('<add key="SmtpPassword" value="Web.config!Mail7" />', "Web.config!Mail7"),
        ("gpg --batch --passphrase 'seedvault orange tram' -d b.gpg", "seedvault orange tram"),
        ("7z a -pTax2025!Folder -mhe=on receipts.7z receipts/", "Tax2025!Folder"),
        ("smbclient //nas/photos -U rawiri%Whanau_Photos_8", "Whanau_Photos_8"),
        ("mosquitto_passwd -b /etc/mosquitto/passwd ha Mqtt!Aroha2026", "Mqtt!Aroha2026"),
        ('$pw = ConvertTo-SecureString "Winserv!Lombardi3" -AsPlainText', "Winserv!Lombardi3"),
        ("the code for the key safe at the cottage is 6184; Wi-Fi card on the fridge", "6184"),
        ("Q: what's the garage door code again?\nA: 7391 then the hash key", "7391"),
        ("百度网盘分享链接的提取码是 k7qz，七天后失效", "k7qz"),
    ],
)
def test_finds_passwords_in_more_languages_and_syntaxes(text: str, value: str) -> None:
    assert ("password", value) in found(text), found(text)


def test_finds_the_passwords_in_a_table_column_only() -> None:
    table = "| site | login | password |\n| --- | --- | --- |\n| Tesco | ottie.f | Bramble#71 |"
    assert found(table) == [("password", "Bramble#71")]
    csv = "site,password_hint\nTesco,first pet plus year"
    assert found(csv) == []


@pytest.mark.parametrize(
    "text",
    [
        # The product alone: a made-up value after a label about passwords
        # ("password manager: Bitwarden2024") is masked by the learned scorer.
        "password manager: Bitwarden",
        "docker login -u benedek --password-stdin < ~/.config/docker_token",
        "$pw = ConvertTo-SecureString $plain -AsPlainText -Force",
        "passwd:         files systemd",
        "the router's default password is printed on the sticker",
        "Q: what's the promo code?\nA: 2024 for the spring sale",
        "Q: what's the door code again?\nA: ask Tom",
        "ffmpeg -i in.mp4 -pass 1 -f null /dev/null",
        "password reset link sent to: ana@example.com",
    ],
)
def test_leaves_alone_what_only_looks_like_a_password(text: str) -> None:
    assert [v for c, v in found(text) if c == "password"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "Siddharth's RuPay card 6070 2023 9000 5738 keeps getting declined",
            "6070 2023 9000 5738",
        ),
        ("Zeynep'in Troy kartı: 9792 9217 0877 6745", "9792 9217 0877 6745"),
        ("her new debit card 7992 7398 7130 0008 arrived", "7992 7398 7130 0008"),
    ],
)
def test_finds_cards_of_any_scheme_named_as_cards(text: str, value: str) -> None:
    assert ("card_number", value) in found(text), found(text)


@pytest.mark.parametrize(
    "text",
    [
        "Her SIM card 8986 0312 3456 7890 124 is from China Mobile",
        "her library card 7992 7398 7130 0008 expires soon",
        "batch 7992 7398 7130 0008 shipped",  # Luhn-valid, unknown range, no card word
    ],
)
def test_leaves_alone_other_cards_and_unnamed_numbers(text: str) -> None:
    assert [c for c, _ in found(text) if c == "card_number"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Mihaela Stoica's pașaport: 79775303 — renewing it in Manchester", "79775303"),
        ("Ljubica Radic, putovnica br. 870268388, expires in November", "870268388"),
        ("Egle Vaitkute — pasas Nr. 97954572 — flies to Chengdu", "97954572"),
        ("potni list PC6459246 — the Slovenian one", "PC6459246"),
        ("user: PP# 838063562, exp 2031 — Talia's", "838063562"),
        ("Kadri Saar — Eesti pass K7654824", "K7654824"),
        ('<Document Type="P" Number="KG21V5ZT4" IssuingCountry="DEU"/>', "KG21V5ZT4"),
        ("Kagiso travels on A79903740 — the green South African passport", "A79903740"),
    ],
)
def test_finds_passports_in_more_languages_and_forms(text: str, value: str) -> None:
    assert ("passport", value) in found(text), found(text)


@pytest.mark.parametrize(
    "text",
    [
        "the boarding pass: NH962 seat 41C",
        "flight CA1234 then passport control",
        "order A1234567 and two passports to renew",
        '<Document Type="V" Number="KG21V5ZT4"/>',
    ],
)
def test_leaves_alone_numbers_that_are_not_passports(text: str) -> None:
    assert [c for c, _ in found(text) if c == "passport"] == []


# --- the fifth round: forms, encodings and turns of a conversation ---------------------


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        (
            "on the bank's form she wrote 610113-19930117-3258",
            "national_id",
            "610113-19930117-3258",
        ),
        ("奶奶的老身份证还是15位的：420106350103366", "national_id", "420106350103366"),
        (
            "iban fr76 6862 5725 8700 8171 0004 654, phone",
            "iban",
            "fr76 6862 5725 8700 8171 0004 654",
        ),
        ("books flights on the UATP account 199002927796281", "card_number", "199002927796281"),
        (
            "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\nL898902C36UTO7408122F1204159ZE184226B<<<<<10",
            "passport",
            "L898902C3",
        ),
    ],
)
def test_finds_identifiers_as_forms_write_them(text: str, category: str, value: str) -> None:
    assert (category, value) in found(text), found(text)


@pytest.mark.parametrize(
    "text",
    [
        "order 420106350103366 shipped",  # 15 digits without a word for an ID
        "老身份证号 420106351303366",  # no 13th month
        # Line 2 of a machine-readable zone without its line 1 is not read as one.
        "L898902C37UTO7408122F1204159ZE184226B<<<<<10",
    ],
)
def test_leaves_alone_numbers_that_fail_the_id_rules(text: str) -> None:
    assert [c for c, _ in found(text) if c in ("national_id", "passport")] == []


_PEM_IN_BASE64 = (
    "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVBSlJZSUFtMVZ2VFppQTJhaWRI"
)


@pytest.mark.parametrize(
    "text",
    [
        f"tls.key: {_PEM_IN_BASE64}",
        "Nostr key: nsec1s2qvearfmpznaqrkhsgs4hsw3r4vj2hdasyc40q7grewwwkqfrs06yqlyu",
        "Tezos edskDXcc6oYJeBHKLncHuAC6aMFPAXZ4t9FJECZTgTvwSiBQtmZecN for the testnet",
        '{"kty":"EC","crv":"P-256","d":"YH43Pv-iy8QJ5P-cV5u4VfcPuzELoSHDFLXYzwHXv98"}',
        "~/.config/solana/id.json:\n[" + ",".join(str((i * 37) % 256) for i in range(64)) + "]",
        "0x34675be07a51a1a1d061eea18e68ff8835749a8ed5489899ba4df72052d03ec1 ← 测试钱包的私钥",
    ],
)
def test_finds_private_keys_in_encodings_and_wallets(text: str) -> None:
    assert [c for c, _ in found(text)] == ["private_key"], found(text)


@pytest.mark.parametrize(
    "text",
    [
        "LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KTUlJQklqQU5CZ2txaGtpRzl3MEJBUUVGQUFPQ0FROEFNSUlC",
        "the age recipient age1qtgaq6njan5r7k2jmswsepsuerdjgf6dy7v92clktmszvzuyuhnhm3jklj",
        "the phone's wg public key 0Lzix22cNlGKLvxIceEAYMchmwY93oNW8TlV2XpkDak= goes in the peer",
        "go.sum pins golang.org/x/net v0.35.0 h1:csXpIcACl7FuIjvNv/w9bye3+8bIkLldCdqyxGDMX+P=",
        "LDAP userPassword: {SSHA}fpPUdKR2yrvuo6aycv1Xx7sAOez+JVZ25lL1AF==",
        "completion chatcmpl-vVtgJ3p032VApKzEIFjKGcOaEHiXE took 4.2 s",
        "Solana address for the tip jar: frN6RXigEFN4kdzNLXF8qxWCN3JWbz42ZokPMFy3Uibn",
        "便签导出的内容是 5ZGo5LqU5Lqk5oi/56ef77yM6aG65L6/5Lqk5rC055S1，其实是 base64 的提醒",
        "[" + ",".join(str(i) for i in range(64)) + "] are the bucket counts",
    ],
)
def test_leaves_alone_public_keys_ids_and_encoded_text(text: str) -> None:
    assert [c for c, _ in found(text) if c in ("api_key", "private_key")] == [], found(text)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        (
            "用户的 AI 应用密钥汇总：\n- Dify：app-JvMYAz5knKfkkVAHeIMbdOTr\n"
            "- 魔搭：ms-0edff5a6-482b-4558-9c81-ff08e34bc1e9",
            "api_key",
            "app-JvMYAz5knKfkkVAHeIMbdOTr",
        ),
        (
            "| service | key |\n|---|---|\n| Acme | q8Zr2LmV0xNw7TpK4sYb1HcE |",
            "api_key",
            "q8Zr2LmV0xNw7TpK4sYb1HcE",
        ),
        (
            "user: what's the Deepgram key\nassistant: not stored yet\n"
            "user: 884959304d5cc4ecdc887a4b1b2496e684af6c48",
            "api_key",
            "884959304d5cc4ecdc887a4b1b2496e684af6c48",
        ),
        (
            "https://api.openweathermap.org/data/2.5/weather?q=Tromso&appid=51d229f14526c6554d0e5a07a71d1865",
            "api_key",
            "51d229f14526c6554d0e5a07a71d1865",
        ),
        (
            "FAL_KEY=fabea37c-3939-4c2e-bbf0-6ef584bee292:20bf88055a34a22ef3133ab789dc8514",
            "api_key",
            None,
        ),
        (
            "Passwords:\n- Netflix: Ashcombe_Flix\n- Disney+: Mickey!Ashcombe",
            "password",
            "Mickey!Ashcombe",
        ),
        (
            "user: wifi密码多少\n助手：你还没告诉过我\n用户：jiayou2026 全小写",
            "password",
            "jiayou2026",
        ),
        ("my pasword for the gym app is Deadlift_Sunday", "password", "Deadlift_Sunday"),
        (
            "the agent reset the password to Temp#55821 and asked her to change it",
            "password",
            "Temp#55821",
        ),
        (
            "The password — he told me after I promised — is fjordsauna1987.",
            "password",
            "fjordsauna1987",
        ),
        (
            "Gr33nhouse-Tomat0 — Bartholomew's Bitwarden master password",
            "password",
            "Gr33nhouse-Tomat0",
        ),
        ("密码是她名字拼音加生日：maiziqin0719", "password", "maiziqin0719"),
        ("WIFI:T:WPA;S:Brekke-Hytte;P:nordlys og kakao;;", "password", "nordlys og kakao"),
        ("Hakala-Guest, WPA2 key saunailta", "password", "saunailta"),
        ("machine nas.home login mattias password sillfisk", "password", "sillfisk"),
        (
            "docker run --rm httpd:2.4 htpasswd -Bbn gallery shutterbug > .htpasswd",
            "password",
            "shutterbug",
        ),
        ("redis://:cache-me-if-you-can@redis:6379/0", "password", "cache-me-if-you-can"),
        ("admin:ricoh-3rd-floor works on the printer's web page", "password", "ricoh-3rd-floor"),
        ("Hina の暗証番号 3926 — the bank card PIN", "password", "3926"),
        ("登录码 860214，用户说是单位 OA 的", "password", "860214"),
    ],
)
def test_finds_secrets_in_lists_tables_turns_and_formats(
    text: str, category: str, value: str | None
) -> None:
    hits = found(text)
    if value is None:
        assert [c for c, _ in hits] == [category], hits
    else:
        assert (category, value) in hits, hits


@pytest.mark.parametrize(
    "text",
    [
        "user: what's the wifi password?\nassistant: Sorry, I don't know it yet.",
        "Q: do you have the API key?\nA: not yet, Maria will send it tomorrow",
        "Shopping list:\n- milk: 2 litres\n- bread: sourdough",
        "passphrase: (see the envelope in the safe)",
        "the password is capital B, then a word",
        "root:x:0:0:root:/root:/bin/bash",
    ],
)
def test_leaves_alone_turns_lists_and_lines_without_a_secret(text: str) -> None:
    assert [c for c, _ in found(text) if c in ("api_key", "password")] == [], found(text)


# --- the sixth round: drawn from the tenth split's misses ---------------------------------


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        (
            'curl -H "X-Auth-Key: e1c890c2bf33cbc2bc8b6b56f9a658133531e" https://api.example.com',
            "api_key",
            "e1c890c2bf33cbc2bc8b6b56f9a658133531e",
        ),
        (
            "untrusted comment: minisign encrypted secret key\nRWRTY0Iy"
            + "GM2Ik1I/nxT5rOPlOiJa6rXllNxog4CLY0nJ" * 4,
            "private_key",
            None,
        ),
        ("选课系统的密码用户刚改过，新的是 Jw_xtmm0912，旧的作废", "password", "Jw_xtmm0912"),
        ("SSID Fenwick_5G / WPA2 hobnob-teapot", "password", "hobnob-teapot"),
        ("Wi-Fiのパスワードは sakura-2026 です", "password", "sakura-2026"),
        (
            "KeePass master password: lantern tidepool velvet oak",
            "password",
            "lantern tidepool velvet oak",
        ),
        ("口令 tianwanggaidihu，对不上就别开门", "password", "tianwanggaidihu"),
        ("alarm panel code is 8052 — disarm within 30 seconds", "password", "8052"),
        (
            "<AdministratorPassword>\n  <Value>Unattend#Admin1</Value>\n</AdministratorPassword>",
            "password",
            "Unattend#Admin1",
        ),
        (
            'lftp -u deploy,Lftp-Deploy-66 sftp://files.example.fr -e "mirror -R dist /www"',
            "password",
            "Lftp-Deploy-66",
        ),
        (
            "mosquitto_pub -h broker.local -u sensor -P mqtt-sensor-3 -t home/temp -m 21.5",
            "password",
            "mqtt-sensor-3",
        ),
        ("~/.pgpass line: db.internal:5432:*:reporting:rep0rting_Q4", "password", "rep0rting_Q4"),
        (
            "the webinar admin login: events@sartori-studio.it, Webinar_Sartori1",
            "password",
            "Webinar_Sartori1",
        ),
        ("note to self: new laptop login is Marchbanks1887!", "password", "Marchbanks1887!"),
        ("用户：我护照号你记一下\n用户：EM9120857\n用户：下个月去东京", "passport", "EM9120857"),
        ("Alesia Kavalenka, пашпарт KH1192152", "passport", "KH1192152"),
        (
            "old 15-digit ID printed on grandpa's retirement card: 230103750906519",
            "national_id",
            "230103750906519",
        ),
    ],
)
def test_finds_the_sixth_rounds_forms(text: str, category: str, value: str | None) -> None:
    hits = found(text)
    if value is None:
        assert [c for c, _ in hits] == [category], hits
    else:
        assert (category, value) in hits, hits


@pytest.mark.parametrize(
    "text",
    [
        "VAPID public key for web push: BD_DNBj5SnH4bSWWXZEXlAxtP5VYmbRkqwgvi8QUozglq05H-oaWk"
        "EGnqQT7eFrGyPPjWM73gzkabxfvYtK86dN",
        "Tron wallet for the donations: TWjkgoXGeJn6KU6mTtPcpgTr4UaKqWKr95",
        "PostHog project key phc_ijUDGQYV0xLomOpwcgF4om5Izv7Zfu4Hz0rwV2WhH09 sits in the page",
        "APNs auth key AuthKey_7QX2M9K4LD.p8 for the app",
        "Mapbox public token pk.eyJ1IjoioLop3LggDg0rr2FII2nccptkDWPuSKBQ8R-rXNUhjR4q3cXMX6uk"
        "DCPK7lNa.LrXJ-rYryfx",
        "secrets:\n  db_password:\n    file: ./secrets/db_password.txt",
        "the login is ana.souza@example.com, as always",
        "Wi-Fi 改成 WPA3 了，但用户没给我新密码",
        "X-Request-Id: 7f9c2ba4e88f827d616045507605853e",
    ],
)
def test_leaves_alone_the_sixth_rounds_look_alikes(text: str) -> None:
    assert [c for c, _ in found(text) if c in ("api_key", "private_key", "password")] == [], found(
        text
    )
