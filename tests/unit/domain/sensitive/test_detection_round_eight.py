"""The eighth round: rules drawn from the twelfth split's misses and false alarms.

Keys by shapes the rules did not know (The Things Network, Login with Amazon, Up
Bank, eBay, Salesforce sessions, Make/Zapier/IFTTT webhooks), by YAML and JSON
fields, by "API key" in seven more languages, as curl's user name; private keys in
Tendermint's and Cardano's key files; passwords after a clause ("the PIN to Drive is
…"), as basic auth, in OpenWrt's Wi-Fi config, after a lock box's place, as Apple's
app-specific passwords, as "admin: user / password"; cards named by their scheme
(Bancontact). And what only looks like them: Supabase anon keys, public keys in JSON,
names written in CamelCase, template defaults, masked addresses, URLs after "admin".
Each rule has a positive and the nearest look-alike it must leave alone; the values
are made up.
"""

from __future__ import annotations

import base64
import json

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret, found


def _jwt(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return (
        f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJlLWJ5dGVzLTA5ODc2NTQzMjE"
    )


TTN = (
    "NNSXS."
    + "Q7W2E9R4T1Y6U3I8O5P0A7S2D9F4G1H6J3K8L5Z"
    + "."
    + "M4N7B2V9C6X1Z8L3K5J0H7G2F9D4S6A1P3O8I5U2Y7T4R9E6W1Q3"
)


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        (f"TTN key for the gateway: {TTN}", "api_key", TTN),
        ("LWA refresh token Atzr|" + "IwEBIAbC-dEf_0123456789" * 6, "api_key", None),
        ("client secret amzn1.oa2-cs.v1." + "3f" * 32, "api_key", "amzn1.oa2-cs.v1." + "3f" * 32),
        ("Up token up:yeah:" + "Qw3rTy7uIoP1aSdF" * 8, "api_key", None),
        ("eBay user token v^1.1#i^1#r^1#p^3#f^0#I^3#t^H4sIAAAAAAAA/" + "Zx9Kq2Lm7Np4" * 10,
         "api_key", None),
        ("session id 00D5e000000AbCd!AQ0AQ" + "Xy7.Kp2_Lm9Qr4St8Uv1Wz6" * 4, "api_key", None),
        ("https://hook.eu1.make.com/k3j5h7g9f2d4s6a8p1o3i5u7y9t2r4e6 files the leases",
         "api_key", "k3j5h7g9f2d4s6a8p1o3i5u7y9t2r4e6"),
        ("sensors:\n  - dev_eui: 70B3D57ED0041F2A\n    app_key: 9C41E2B07D6A5F38C0E1D2B3A4958671",
         "api_key", "9C41E2B07D6A5F38C0E1D2B3A4958671"),
        ('{"apiToken": "Zx81kQm2Lp09RtYv44Hn", "region": "eu"}', "api_key", "Zx81kQm2Lp09RtYv44Hn"),
        ("카카오 REST API 키 5be2c7a90d13f4e86a71c0b9d2e3f415", "api_key",
         "5be2c7a90d13f4e86a71c0b9d2e3f415"),
        ("Alpaca: APCA_API_KEY_ID=PKQ3W8E2R7T1Y6U4I9O0", "api_key", "PKQ3W8E2R7T1Y6U4I9O0"),
        ("curl -u 5F2A9C7E1B3D8F4A6C0E2B9D7F1A3C5E: https://api.example.io/v1/runs", "api_key",
         "5F2A9C7E1B3D8F4A6C0E2B9D7F1A3C5E"),
        ('{"priv_key": {"type": "tendermint/PrivKeyEd25519", "value": "'
         + "Kp9Lm2Nq7Rs4Tu1Vw8Xy5Za3Bc6De0Fg" * 2 + 'Hi=="}}', "private_key", None),
        ('payment.skey:\n{\n "type": "PaymentSigningKeyShelley_ed25519",\n "cborHex": "5820'
         + "9a" * 32 + '"\n}', "private_key", "5820" + "9a" * 32),
        ("the Model 3's PIN to Drive is 5177, set after the break-in", "password", "5177"),
        ("das Passwort fürs Bestellportal ist Kolben#Rot77", "password", "Kolben#Rot77"),
        ("Grafana basic auth: grafana_ops:Dash-Board-42", "password", "Dash-Board-42"),
        ("config wifi-iface 'default_radio0'\n\toption ssid 'Barn-AP'\n\toption key 'Hayloft-Net7'",
         "password", "Hayloft-Net7"),
        ("the key safe by the back door: code 4096", "password", "4096"),
        ("appleid.apple.com gave me wxyz-abcd-efgh-ijkl for the scanner", "password",
         "wxyz-abcd-efgh-ijkl"),
        ("Spond admin for the U10 team: coach.kari / Lyn-Hopp-2031", "password", "Lyn-Hopp-2031"),
        ("كلمة السر لبوابة الموظفين: Nour@2031hr", "password", "Nour@2031hr"),
        ("Bancontact 6703 1551 1833 8489 4 — the Belgian debit card", "card_number",
         "6703 1551 1833 8489 4"),
    ],
)  # fmt: skip
def test_finds_the_eighth_rounds_forms(text: str, category: str, value: str | None) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "Supabase anon key " + _jwt({"iss": "supabase", "ref": "abcdefghijkl", "role": "anon"}),
        '{"pub_key": {"type": "tendermint/PubKeyEd25519", "value": '
        '"Qm9vbGVhbkRvbmtleVN1bW1lclNoYWRvd3NEYW5jZQ="}}',
        '"type": "PaymentSigningKeyShelley_ed25519"',
        "validator pub_key value Zuh341nIIR696NSleGVDhmmxmyPtHY6CKqVF71yo9bY=",
        "RCON_PASSWORD=changeme  # the image's default, replaced on the server",
        "a*****@example-coffee.la is what the password-reset page shows",
        "admin panel / Settings-Page",
        "Paddle client-side token test_7d2f61a9e4c0b8a3f5e1d6c7b2a",
        'mongosh "mongodb://admin:Mongo#Lx2026@127.0.0.1:27017/?authSource=admin"'.replace(
            "admin:Mongo#Lx2026@", ""
        ),
        "the password manager I use is 1Password",
        "the password for the bank is stored in the vault",
        '{"private_key_id": "d8ae3762be98a38cc567daf50a754b4b837e1aaa"}',
        'payment.vkey: {"type": "PaymentVerificationKeyShelley_ed25519", "cborHex": '
        '"5820' + "4b" * 32 + '"}',
    ],
)
def test_leaves_alone_the_eighth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)


def test_a_service_role_jwt_is_still_a_key() -> None:
    token = _jwt({"iss": "supabase", "ref": "abcdefghijkl", "role": "service_role"})
    assert ("api_key", token) in found(f"SUPABASE_SERVICE_ROLE_KEY={token}")
