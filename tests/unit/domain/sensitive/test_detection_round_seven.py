"""The seventh round: rules drawn from the eleventh split's misses and false alarms.

Shapes of keys the rules did not know (DeepL, Twitch chat, Braintree, Roblox cookies,
Sui, Aptos, Tor onion-service keys), passwords given as a sign-in pair, in a KeePass
export, after "here it is:", in other languages' Wi-Fi keys, as Google app passwords,
cards named in Vietnamese, lower-case IBANs after "IBAN 是", passports given as an
answer; and what only looks like them: public ids and keys, files in base64.
Published test cards (4111 1111 1111 1111, 4242 …) stay masked: they are what people
and tests use as the example of a card, and masking one costs nothing. Each rule has
a positive and the nearest look-alike it must leave alone. The values are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("DeepL key for the translator: 3f6c2a91-7d4e-4b2a-9c1d-5e8f7a6b4c3d:fx", "api_key",
         "3f6c2a91-7d4e-4b2a-9c1d-5e8f7a6b4c3d:fx"),
        ("irc bot config: PASS oauth:k2m9x7q4w1z8c5v3b6n0l2j4h7g9fd", "api_key",
         "oauth:k2m9x7q4w1z8c5v3b6n0l2j4h7g9fd"),
        ("BT_TOKEN=access_token$sandbox$q8w7e6r5t4y3u2i1$0f1e2d3c4b5a69788796a5b4c3d2e1f0",
         "api_key", "access_token$sandbox$q8w7e6r5t4y3u2i1$0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
        (".ROBLOSECURITY=_|WARNING:-DO-NOT-SHARE-THIS.--Sharing-this-will-allow-someone-to-log-in"
         "-as-you-and-to-steal-your-ROBUX-and-items.|_" + "A1B2C3D4E5F60718" * 8, "api_key", None),
        ("my sui wallet: suiprivkey1qz7x4c9v0m3n8k2j5h6g4f3d2s9a8p7q6z5u4y3t2r0e0w9q8a7s6d5f4",
         "private_key", None),
        ("Aptos key ed25519-priv-0x" + "4f" * 32, "private_key", "ed25519-priv-0x" + "4f" * 32),
        ("hs key in base64: PT0gZWQyNTUxOXYxLXNlY3JldDogdHlwZTAgPT0AAAB" + "Qk1xYz" * 12,
         "private_key", None),
        ("Steam: maren.holt@gmail.com / Lantern!Fjord77", "password", "Lantern!Fjord77"),
        ("combo list line ana.k@mail.example:Sunny#2024", "password", "Sunny#2024"),
        ("<String><Key>Password</Key><Value ProtectInMemory=\"True\">Attic-Router-19</Value>"
         "</String>", "password", "Attic-Router-19"),
        ("the vault master password hint never helps, so here it is: Heron!Quay!Lamp",
         "password", "Heron!Quay!Lamp"),
        ("the password is hard to say, I'll type it: Baobab!tree9", "password", "Baobab!tree9"),
        ("'Casa Ruiz' WiFi clave: Naranjo!2025", "password", "Naranjo!2025"),
        ("Gäste-WLAN, Schlüssel: Birnbaum#2031", "password", "Birnbaum#2031"),
        # The "!" is the password's: an ASCII one right after it ends no Chinese sentence.
        ("家里 SSID 是 MERCURY_9F，用户改过密码，现在是 chenjia2024!", "password", "chenjia2024!"),
        ("Gmail 应用专用密码 qwmz ryxp tkvb hsnd，扫描仪用", "password", "qwmz ryxp tkvb hsnd"),
        ("front office login for Agnieszka: Rynek!Desk42", "password", "Rynek!Desk42"),
        ("plumwood-attic-07 — that's the new Wi-Fi code, changed last night", "password",
         "plumwood-attic-07"),
        ("VeraCrypt container on the NAS: amber lichen over water", "password",
         "amber lichen over water"),
        ("Thẻ ATM của anh Minh: 9704156003590916", "card_number", "9704156003590916"),
        ("Aurelio 的 IBAN 是 it60 x054 2811 1010 0000 0123 456", "iban",
         "it60 x054 2811 1010 0000 0123 456"),
        ("user: which passport did I use for Kyoto?\nassistant: You gave me 804495417 then.",
         "passport", "804495417"),
    ],
)  # fmt: skip
def test_finds_the_seventh_rounds_forms(text: str, category: str, value: str | None) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "OpenAI organization org-Ab3dE6gH9jK2mN5pQ8rS1tU4 for the school account",
        "NEXT_PUBLIC_SUPABASE_KEY=sb_publishable_Zq8wX2cV5bN7mL1kJ4hG6fD9sA3pO0iU",
        "Statsig client key client-Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0X1c2V3b in the app",
        '<div class="g-recaptcha" data-sitekey="6LcR8xQpAAAAAbC2dE3fG4hI5jK6lM7nO8pQ9rSt"></div>',
        "donations: legacy Bitcoin address 1BoatSLRHtKNngkdXEeobR76b53LETtpyT",
        "invoice.pdf, base64: JVBERi0xLjcKJeLjz9MKMSAwIG9iago8PC9UeXBlL0NhdGFsb2cvUGFnZXMgMiAw"
        "IFIvTGFuZyhlbi1VUyk+Pgplbmeobmo3Ko9Xy2Wq",
        "sheet.xlsx as base64 UEsDBBQABgAIAAAAIQBi7p1oXgEAAJAEAAATAAgCW0NvbnRlbnRfVHlwZXNdLnhtbC"
        "CiBAIooAACAAAAAAAAAAAAAAAAAAAA",
        "Tor keeps the key in hs_ed25519_secret_key next to the hostname file",
        "sales@acme-tools.com / Sales-Team",
        "git@gitlab.example.com:group2/repo.git",
        "the app password that will come back later",
        "KeePass is what we use: it keeps everything local",
        "the login for the printer is on the sticker",
        "user: which passport should I bring?\nassistant: The one that expires later, not 2027.",
    ],
)
def test_leaves_alone_the_seventh_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
