"""The ninth round: rules drawn from the thirteenth split's misses and false alarms.

Private keys by their encoding's checksum (Stellar and XRP seeds, with the published
vectors), PKCS#12 stores in base64, SSH2 key blocks, hex-encoded key files, NEAR's
credentials file, Avalanche's "PrivateKey-", BIP-84 `zprv`; keys named in Italian and
Swedish, hex keys whose entropy is low, encrypted cookies, Ghost and Unleash keys, a
token alone on the next line; passwords after "Wi-Fi", in `nmcli` and `uci`, in a
Chinese safe's combination, after 系 (Cantonese), WordPress application passwords,
"user / password" answers, capitalised logins; cards named in Ukrainian and
Indonesian. And what only looks like them: lines that call their key public, ids
(Vercel, DingTalk app keys, WeChat openids, IPFS CIDs), public keys named in JSON,
network names after "Wi-Fi", factory defaults, stored hashes, "is read from".
The values are made up, except the two published seeds.
"""

from __future__ import annotations

import base64

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, found

STELLAR_SEED = "SCZANGBA5YHTNYVVV4C3U252E2B6P6F5T3U6MM63WBSBZATAQI3EBTQ4"  # Stellar's docs
XRP_SEED = "snoPBrXtMeMyMHUVTgbuqAfg1SUTb"  # the XRP Ledger's genesis seed


def _pkcs12_b64() -> str:
    """The start of a PKCS#12 store: SEQUENCE, version 3, SEQUENCE, the PKCS#7 data OID."""
    head = bytes.fromhex("3082 0a69 0201 0330 820a 2f06 092a 8648 86f7 0d01 0701 a082 0a20")
    return base64.b64encode(head + bytes(range(256)) * 2).decode()


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        (f"keep this one offline: {STELLAR_SEED}", "private_key", STELLAR_SEED),
        (f"{XRP_SEED} was the ledger's first account", "private_key", XRP_SEED),
        ("Stellar secret seed for payroll: S" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" + "A" * 23,
         "private_key", None),
        (f"the client certificate store, base64: {_pkcs12_b64()}", "private_key", None),
        ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-2024\"\n"
         "P2/56wAAAVYC8qMYfk0zGNQ80GpIgzl5xryGRhAyzwGAxQ8lWE1bSVaf81i/f4ahCx8SLu\n"
         "---- END SSH2 ENCRYPTED PRIVATE KEY ----", "private_key", None),
        ("lotus wallet export: " + b'{"Type":"secp256k1","PrivateKey":"cXV4Zg=="}'.hex(),
         "private_key", None),
        ('{"account_id": "a.near", "public_key": "ed25519:16qr6m3KwqsC6sWYuk8ZW5bmdrRUDr1ugv4n",'
         ' "private_key": "ed25519:3hJk9LmNpQrStUvWxYz2AbCdEfGhJkLmNpQrStUvWxYz2AbCdEfGhJk"}',
         "private_key", "3hJk9LmNpQrStUvWxYz2AbCdEfGhJkLmNpQrStUvWxYz2AbCdEfGhJk"),
        ("deployer: PrivateKey-ewoqjP7PxY4yr3iLTpLisriqt94hdyDFNgchSxGGztUrTXtNN", "private_key",
         "PrivateKey-ewoqjP7PxY4yr3iLTpLisriqt94hdyDFNgchSxGGztUrTXtNN"),
        ("Polkadot secret seed 0x" + "7d" * 32, "private_key", "0x" + "7d" * 32),
        ("chiave API del gestionale: 5c2313ed66353bec940e5bd61c01b7c11a6a73bc", "api_key",
         "5c2313ed66353bec940e5bd61c01b7c11a6a73bc"),
        ("API-nyckel för synken: 7fcf857e2526c5caa4df3027f7e03f90557798d7", "api_key",
         "7fcf857e2526c5caa4df3027f7e03f90557798d7"),
        ("天气服务的 key 81d875bcb9bb5c97d0bd09588780374d", "api_key",
         "81d875bcb9bb5c97d0bd09588780374d"),
        ("Nexus Mods API key: ucWZ1sJYA2pa8rEd3g3jwB6Tktr6==--M9EMP+5cM5zxcUAz--QIuxK4hisYk==",
         "api_key", "ucWZ1sJYA2pa8rEd3g3jwB6Tktr6==--M9EMP+5cM5zxcUAz--QIuxK4hisYk=="),
        ("Ghost admin key 65f0c2a1b3d4e5f607182930:" + "ab" * 32, "api_key",
         "65f0c2a1b3d4e5f607182930:" + "ab" * 32),
        ("UNLEASH_API_TOKEN=default:production." + "c4" * 32, "api_key",
         "default:production." + "c4" * 32),
        ("user: here's the token for the lock cloud\nuser: d81098fb5c0714211e279bf8c2978dbc",
         "api_key", "d81098fb5c0714211e279bf8c2978dbc"),
        ("Surf school: Wi-Fi Offshore-Wind-12, phone at the desk", "password", "Offshore-Wind-12"),
        ("nmcli con add type wifi ssid Guest wifi-sec.key-mgmt wpa-psk wifi-sec.psk harbour-Lamp4",
         "password", "harbour-Lamp4"),
        ("uci set wireless.@wifi-iface[0].key='Gl-Inet-Travel-3'", "password", "Gl-Inet-Travel-3"),
        ("书房保险柜：12-40-7", "password", "12-40-7"),
        ("个 wifi 密码系 ngoi5sik6fan6 啊", "password", "ngoi5sik6fan6"),
        ("WordPress application password: Xk3P 9fQa Lm2T 7wEr bN5s Yu8D", "password",
         "Xk3P 9fQa Lm2T 7wEr bN5s Yu8D"),
        ("user: the gym app login\nassistant: email and password?\nuser: kari.s / Squat!Rack-88",
         "password", "Squat!Rack-88"),
        ("car-rental login Aotearoa-Drive-6", "password", "Aotearoa-Drive-6"),
        ("测试账号：test_shop / Zfb!Test2026", "password", "Zfb!Test2026"),
        ("картка ПРОСТІР 9804 7950 0013 1056", "card_number", "9804 7950 0013 1056"),
    ],
)  # fmt: skip
def test_finds_the_ninth_rounds_forms(text: str, category: str, value: str | None) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "GCZANGBA5YHTNYVVV4C3U252E2B6P6F5T3U6MM63WBSBZATAQI3EBTQ4 is the account to pay",
        "docsearch({ apiKey: '5bb23d05b99098830717284666e0170e' }) — search-only, public by design",
        "WireGuard public key, safe to share: jBypWtwNpV69EZr41Fi04rFaAs8wNeNuO7qInkVmTH4=",
        "Vercel deployment dpl_xTlrwuMiNwYpraEi3WLf71OptMkJ is live",
        "钉钉 AppKey dinge7uam0hc6wrlt9pn，不是密钥",
        "用户的 openid 是 omPHtXmK17lYavxNpUel4J6lKQkJ，用来查订单",
        "IPFS CID QmquBfj5w2jsgtXdFChjK2ax1pW7k973ujRi91Nh1Po89J for the photo archive",
        "NEAR public key ed25519:DvDquUZjVah9NHHyGTJzTUCXXaUDaxYH9rVDrcd7mcnD for a.near",
        "Wi-Fi TP-LINK_5G_8F2A keeps dropping",
        "the Wi-Fi Fenwick_5G is slow today",
        "门锁说明书：出厂管理密码 123456，首次使用请修改",
        "MQTT_PASSWORD is read from /run/secrets/mqtt_password",
        "auth_user.password for ana is pbkdf2_sha256$870000$F8pl6605oR4BOe3dGQ$rCvnHi/9AFOby/DY=",
        "the app password for the site: what will come back",
        "user: the token expired\nuser: ok",
    ],
)
def test_leaves_alone_the_ninth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


def test_the_appsecret_beside_a_public_appkey_is_still_a_key() -> None:
    text = "钉钉 AppSecret 22oKskfKxz053pDisMlgKhUdO_cLvFlbcV6qXecOxxU2agjNx，AppKey 是公开的"
    assert [c for c, _ in found(text)] == ["api_key"], found(text)
