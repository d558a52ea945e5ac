"""The fourteenth round: rules drawn from the seventeenth split's misses and false alarms.

A lock set to a code, a key safe that "is" a PIN, a code keyed into an alarm panel, a
door's code in French (digicode), a login set to a value, a password after "requirepass
is", a Wi-Fi key after a dash, a passphrase after a clause and a colon, user / password
pairs in a list about logins, a Bitcoin key named as such, a lower-case IBAN a little
after its word; and left alone: spoken digits ("two"), Stripe refund and payout ids, a
reCAPTCHA site key, a VAPID public key, a CI cache's key, a safe's price. The values
are made up.
"""

from __future__ import annotations

import pytest

from tests.unit.domain.sensitive.detections import assert_finds, assert_no_secret

# A compressed WIF key with a valid checksum (Bitcoin's secret 1, the published example).
WIF = "KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn"
VAPID = "BdRQUFr_RLPUuT_LBCBw27nbEb3NXtz0btIoTH7BsK7XFnyNlFhkUi88kllWLoAeyeQqBdBQHByxZMYbuRuyHWM"


@pytest.mark.parametrize(
    ("text", "category", "value"),
    [
        ("the hotel room safe is set to 2404, the camera bodies are in there", "password", "2404"),
        ("the key safe at the cottage is 7249, back gate latch sticks", "password", "7249"),
        ("clubhouse alarm: key in 1966 then OFF, you have 30 seconds", "password", "1966"),
        ("le code de la porte du studio : B2741, second floor", "password", "B2741"),
        ("digicode 4417A pour l'immeuble", "password", "4417A"),
        ("Ruaridh set the club treasurer login to Caman&Ball1893", "password", "Caman&Ball1893"),
        ("the new requirepass is redis-Otter-90", "password", "redis-Otter-90"),
        ("photo of the whiteboard, OCR: GUEST WIFI — Whiteboard-Wren3", "password",
         "Whiteboard-Wren3"),
        ("passphrase, four words with spaces: velvet orbit cactus ladder", "password",
         "velvet orbit cactus ladder"),
        ("logins for the temp:\n- payroll: jmarsh / Bluejay-Pay-08", "password", "Bluejay-Pay-08"),
        (f"the notes file has a Bitcoin key in it: {WIF}", "private_key", WIF),
        ("the IBAN in lower case in the booking form: de89 3704 0044 0532 0130 00", "iban",
         "de89 3704 0044 0532 0130 00"),
    ],
)  # fmt: skip
def test_finds_the_fourteenth_rounds_forms(text: str, category: str, value: str) -> None:
    assert_finds(text, category, value)


@pytest.mark.parametrize(
    "text",
    [
        "voicemail transcript: gate code is two six, then press the bell twice",
        "refund re_3PqY8sLkd2EwZn8a0c1Vb2Mn is still pending at the bank",
        "payout batch sq6WMKNyYPMq6eIsqvwbVWmsKAS is stuck in processing",
        "reCAPTCHA site key on the RSVP form: 6L93X4dYcFBadj46BHyIFrjthWZyIhvvdPHJ4Fgv",
        f"VAPID public key for the push notifications: {VAPID}",
        "Cache restored from key: Linux-pip-ea6b47baead022a6523f7acea034cf012516ed4432b2d7d48",
        "the safe was 1500 dollars",
        "the key safe is 2019 model, ask the landlord",
        "Sizes: small / Medium2",  # a lower-case word, but nothing here is about logins
    ],
)
def test_leaves_the_fourteenth_rounds_look_alikes(text: str) -> None:
    assert_no_secret(text)
