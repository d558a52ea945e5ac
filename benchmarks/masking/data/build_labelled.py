"""Build the labelled bilingual data set for measuring the sensitive-data detector.

    python benchmarks/masking/data/build_labelled.py

rewrites ``dev.jsonl`` (for tuning), ``test.jsonl`` (held out, since looked at
during tuning), ``holdout.jsonl`` (the fresh held-out split, since measured),
``final.jsonl`` (the last held-out measurement, since measured),
``fresh.jsonl`` (a further last held-out measurement, written the same way as
final, since measured), ``sixth.jsonl`` (one more, written the same way as
fresh), ``seventh.jsonl`` (one more, written the same way as sixth),
``eighth.jsonl`` (one more, written the same way as seventh), ``ninth.jsonl``
(one more, written the same way as eighth), ``tenth.jsonl`` (one more, written
the same way as ninth), ``eleventh.jsonl`` (one more, written the same way as
tenth), ``twelfth.jsonl`` (one more, written the same way as eleventh),
``thirteenth.jsonl`` (one more, written the same way as twelfth) and
``fourteenth.jsonl`` (one more, written the same way as thirteenth) beside this
file. The sentences are hand-written in
``lines_dev.py``, ``lines_test.py``, ``lines_holdout.py``, ``lines_final.py``,
``lines_fresh.py``, ``lines_sixth.py``, ``lines_seventh.py``, ``lines_eighth.py``,
``lines_ninth.py``, ``lines_tenth.py``, ``lines_eleventh.py``, ``lines_twelfth.py``,
``lines_thirteenth.py`` and ``lines_fourteenth.py``; this script fills the ``⟦...⟧``
tokens in them with values it generates (fixed seeds, so re-running rewrites
identical files) and labels them:

    ⟦card visa s⟧        card_number (brand visa|visa13|mc|mc2|amex|up16|up19|jcb|disc,
                          seventh adds mir diners, eighth adds disc65 maestro rupay troy,
                          ninth adds elo hiper dankort verve (19 digits) uatp (15 digits),
                          eleventh adds napas mada uzcard humo, twelfth adds meeza
                          (Egypt) bancontact (17 digits) belkart (Belarus) cabal,
                          thirteenth adds gpn (Indonesia) prostir (Ukraine) shetab
                          (Iran) naranja (Argentina);
                          separator s=space d=dash n=none, seventh adds nb=no-break space,
                          eighth adds s4=spaces every four digits whatever the brand,
                          fourteenth adds fw=full-width digits, no separator)
    ⟦id⟧ ⟦id X⟧ ⟦id x⟧ ⟦id sp⟧   national_id (X: check char X; x: lower case; sp: 6-8-4 groups;
                          eighth adds kid: born 2010-2022; ninth adds elder: born 1952-1962,
                          dash: 6-8-4 groups with dashes, and old15: a first-generation
                          15-digit ID, region + YYMMDD + sequence, no check character;
                          fourteenth adds fw: full-width digits)
    ⟦pp cnE⟧             passport (cnE cnEA cnG us uk de jp hk ca in fr kr es ng pt gr;
                          holdout adds it pl ie au br mx ru tw sg ch vn nl; seventh adds
                          se cz il dk fi th pk at id be ua nz tr my za ar ph hu kz; eighth
                          adds cnP lt lv ro hr si bg eg ir bd lk ke gh ma cl co pe mn is
                          lu mo sa ee; ninth adds cnD (diplomatic) usA (next-generation US
                          book) sk uz np et ae qa ec kh ug az tz ge ve uy; tenth adds by am
                          kg mm zm rw lb rs ba af; eleventh adds dz cr cy ci zw al mk jo;
                          twelfth adds iq md jm mu tj tm la sv; thirteenth adds pa xk tt
                          sn me do)
    ⟦ph cn sp⟧           phone (kind cn|land|us|ca|uk|de|jp|fr|sg|hk|au|kr|pt|cz, then a format;
                          holdout, then seventh, then eighth, then ninth add formats and the
                          kinds in ``more`` in Gen._phone_once; ninth adds cn fw (full-width
                          digits), cn p86nd, cn wa (86 without the plus), us p1sd, de e164
                          and national formats such as ke0 es0 br0 and 00-prefixed uk00 fr00;
                          tenth adds cn 0086nd (0086 run together), us/ca n1dash (1-415-555-..)
                          and sp (415 555 ..), and national formats no0 co0 ro0; eleventh
                          adds cn 86sp (86 without the plus, then spaces), us whois
                          (+1.4155550123) and national formats pt0 gr0 ua0 mx0; twelfth
                          adds cn p86dot (+86.13812345678, WHOIS), deslash (0151/..), in10
                          (10 bare digits), jpe164, ng234, pkdash, bd0, brparen, ukns;
                          thirteenth adds cn paren86nd ((+86)13812345678) and 86dash
                          (86-138-1234-5678), and krsp jp0sp th0dash indash pldash es34
                          hkdash twdash; fourteenth adds uk e164 (+447911123456), fr nd
                          (0612345678) and de nd (015112345678), run together)
    ⟦key openai⟧         api_key (see Gen.key for the kinds)
    ⟦pem rsa⟧            private_key (rsa ec pkcs8 enc openssh pgp, holdout adds dsa ec8
                          opensshenc ed25519 rsaenc, seventh adds ppk, a PuTTY key file,
                          eighth adds ppk2 (PuTTY v2, RSA), age, wgpriv (a WireGuard
                          private key), ethpriv (64 hex), ethpriv0x and wif (a Bitcoin
                          key), ninth adds ec384 rsa4096 x25519, nsec (Nostr), xprv (BIP32),
                          solb58 and soljson (Solana), edsk (Tezos), jwkd (a JWK "d"), pemb64
                          (a whole PEM block base64-encoded) and ppk3enc (an encrypted PuTTY
                          v3 key file); _esc _flat _indent _indent4 _indent6 _crlf, seventh
                          adds _quote, eighth adds _join (no separator), _br and _tab, ninth
                          adds _escr (escaped CRLF), _dbl (doubly escaped newlines) and _bq
                          (a reply quoted twice); tenth adds p8 (an Apple .p8 key), cosign
                          (an encrypted Sigstore key), minisign (a minisign secret key line)
                          and _nn (an empty line after every line); eleventh adds eck1 (a
                          secp256k1 key), torhs (a Tor onion-service key file in base64),
                          suipriv (Sui), aptos (Aptos), wif5 (an uncompressed Bitcoin WIF
                          key), _hash and _slash (every line commented out with # or //);
                          twelfth adds cardano (a cardano-cli signing key's cborHex) and
                          tmval (a Tendermint/CometBFT validator key, base64); thirteenth
                          adds opensshec opensshrsa ec521 rsa3072, tmarmor (an armored
                          Cosmos keyring key), ssh2 (an SSH2/Tectia encrypted key), stellar
                          (a Stellar secret seed), xrpseed (an XRP family seed), avax (an
                          Avalanche PrivateKey-), nearpriv (NEAR ed25519:), zprv (BIP84),
                          filkey (a Lotus wallet export in hex), p12b64 (a PKCS#12 file in
                          base64), _concat (a PEM in concatenated source strings) and _ent
                          (newlines as &#10;))
    ⟦iban DE s⟧          iban (country, see IBAN_LEN; s = groups of 4, n = compact; ninth
                          adds l = groups of 4 in lower case; twelfth adds MR SD SO HN DJ BI;
                          thirteenth adds FK GL LC)
    ⟦email=a@b.com⟧      email, written literally
    ⟦pw=Secret1⟧         password, written literally (only the password is the value)
    ⟦neg sha1⟧           a generated look-alike that is NOT labelled (hashes, UUIDs, bad
                          check digits, public keys ...; ``pemfake:LABEL:body`` is a PEM
                          frame around a placeholder body; fourteenth adds tborder (a
                          19-digit Taobao order number) and sfwaybill (an SF Express
                          waybill number), neither Luhn-valid)

Every line is checked before anything is written: each value is an exact,
unique substring of its text; card numbers pass Luhn, resident IDs pass
ISO 7064 MOD 11-2 with a real date, IBANs pass MOD 97-10 (and python-stdnum
agrees when it is installed); phones are valid for phonenumbers; nothing
outside the spans looks like a valid card, ID, IBAN or e-mail; no two splits
share a value, a sentence or a text, and no person named in ``HOLDOUT_NAMES``
appears in dev or test. For the final split, no person in ``FINAL_NAMES``
appears in dev, test or holdout (case-insensitive), no holdout person appears in
it, no sentence is a near-copy of an older one (``FINAL_MAX_SIMILARITY``), and
every category has English, Chinese and mixed lines. The fresh split is held
to the same rules against all four older splits: no person in ``FRESH_NAMES``
appears in dev, test, holdout or final, no holdout or final person appears in
it, no sentence is a near-copy of an older one (``FRESH_MAX_SIMILARITY``), and
every category has English, Chinese and mixed lines. The sixth split is held to
the same rules against all five older splits: no person in ``SIXTH_NAMES``
appears in dev, test, holdout, final or fresh, no holdout, final or fresh person
appears in it, no sentence is a near-copy of an older one
(``SIXTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The seventh split is held to the same rules against all six older
splits: no person in ``SEVENTH_NAMES`` appears in dev, test, holdout, final,
fresh or sixth, no holdout, final, fresh or sixth person appears in it, no
sentence is a near-copy of an older one (``SEVENTH_MAX_SIMILARITY``), and every
category has English, Chinese and mixed lines. The eighth split is held to the
same rules against all seven older splits: no person in ``EIGHTH_NAMES``
appears in dev, test, holdout, final, fresh, sixth or seventh, no holdout,
final, fresh, sixth or seventh person appears in it, no sentence is a near-copy
of an older one (``EIGHTH_MAX_SIMILARITY``), and every category has English,
Chinese and mixed lines. The ninth split is held to the same rules against all
eight older splits: no person in ``NINTH_NAMES`` appears in dev, test, holdout,
final, fresh, sixth, seventh or eighth, no holdout, final, fresh, sixth, seventh
or eighth person appears in it, no sentence is a near-copy of an older one
(``NINTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The tenth split is held to the same rules against all nine older splits:
no person in ``TENTH_NAMES`` appears in dev, test, holdout, final, fresh, sixth,
seventh, eighth or ninth, no holdout, final, fresh, sixth, seventh, eighth or
ninth person appears in it, no sentence is a near-copy of an older one
(``TENTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The eleventh split is held to the same rules against all ten older
splits: no person in ``ELEVENTH_NAMES`` appears in dev, test, holdout, final,
fresh, sixth, seventh, eighth, ninth or tenth, no holdout, final, fresh, sixth,
seventh, eighth, ninth or tenth person appears in it, no sentence is a near-copy
of an older one (``ELEVENTH_MAX_SIMILARITY``), and every category has English,
Chinese and mixed lines. The twelfth split is held to the same rules against all
eleven older splits: no person in ``TWELFTH_NAMES`` appears in dev, test,
holdout, final, fresh, sixth, seventh, eighth, ninth, tenth or eleventh, no
holdout, final, fresh, sixth, seventh, eighth, ninth, tenth or eleventh person
appears in it, no sentence is a near-copy of an older one
(``TWELFTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The thirteenth split is held to the same rules against all twelve older
splits: no person in ``THIRTEENTH_NAMES`` appears in dev, test, holdout, final,
fresh, sixth, seventh, eighth, ninth, tenth, eleventh or twelfth, no holdout,
final, fresh, sixth, seventh, eighth, ninth, tenth, eleventh or twelfth person
appears in it, no sentence is a near-copy of an older one
(``THIRTEENTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The fourteenth split is held to the same rules against all thirteen older
splits: no person in ``FOURTEENTH_NAMES`` appears in dev, test, holdout, final,
fresh, sixth, seventh, eighth, ninth, tenth, eleventh, twelfth or thirteenth, no
holdout, final, fresh, sixth, seventh, eighth, ninth, tenth, eleventh, twelfth or
thirteenth person appears in it, no sentence is a near-copy of an older one
(``FOURTEENTH_MAX_SIMILARITY``), and every category has English, Chinese and mixed
lines. The splits are built in the order dev, test, holdout, final, fresh, sixth,
seventh, eighth, ninth, tenth, eleventh, twelfth, thirteenth, fourteenth from one
set of used values, each with its own seed, so a later split (and the generator
kinds added for it) leaves the earlier files byte-identical.
Random-looking secrets use the alphabets and lengths of ``secrets.token_*`` but
come from a seeded ``random.Random`` so the build is reproducible.
"""

from __future__ import annotations

import base64
import collections
import datetime as dt
import json
import os
import random
import re
import string
import sys
from collections.abc import Callable
from typing import ClassVar, NamedTuple, TypedDict

DIGITS = string.digits
UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
B32 = UPPER + "234567"
# the base58 and XRP alphabets (added for the thirteenth split)
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
RIPPLE = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"


# ---------------------------------------------------------------- check digits


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_complete(partial: str) -> str:
    for c in DIGITS:
        if luhn_ok(partial + c):
            return partial + c
    raise AssertionError("unreachable")


RIC_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def ric_check_char(first17: str) -> str:
    s = sum(int(c) * w for c, w in zip(first17, RIC_WEIGHTS, strict=True))
    return "10X98765432"[s % 11]


def ric_ok(number: str) -> bool:
    n = number.replace(" ", "").replace("-", "").upper()  # dashes: ninth split
    if not re.fullmatch(r"\d{17}[\dX]", n):
        return False
    try:
        dt.date(int(n[6:10]), int(n[10:12]), int(n[12:14]))
    except ValueError:
        return False
    return ric_check_char(n[:17]) == n[17]


def ric15_ok(number: str) -> bool:
    """A first-generation 15-digit resident ID: region code and a real YYMMDD date."""
    if not re.fullmatch(r"\d{15}", number) or number[:6] not in RIC_REGIONS:
        return False
    try:
        dt.date(1900 + int(number[6:8]), int(number[8:10]), int(number[10:12]))
    except ValueError:
        return False
    return True


def _iban_digits(s: str) -> str:
    return "".join(str(int(c, 36)) for c in s)


def iban_check_digits(cc: str, bban: str) -> str:
    return f"{98 - int(_iban_digits(bban + cc + '00')) % 97:02d}"


def iban_ok(iban: str) -> bool:
    s = iban.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}", s):
        return False
    return int(_iban_digits(s[4:] + s[:4])) % 97 == 1


IBAN_LEN = {
    "DE": 22,
    "GB": 22,
    "FR": 27,
    "NL": 18,
    "ES": 24,
    "IT": 27,
    "CH": 21,
    "BE": 16,
    "AT": 20,
    "IE": 22,
    "GR": 27,
    "SE": 24,
    "CZ": 24,
    "PT": 25,
    "DK": 18,
    "PL": 28,
    # added for the holdout split
    "LU": 20,
    "FI": 18,
    "NO": 15,
    "AE": 23,
    "SA": 24,
    "TR": 26,
    "RO": 24,
    "HR": 21,
    "LT": 20,
    "SK": 24,
    # added for the seventh split
    "MT": 31,
    "CY": 28,
    "EE": 20,
    "LV": 21,
    "SI": 19,
    "HU": 28,
    "BG": 22,
    "IS": 26,
    "LI": 21,
    "UA": 29,
    "IL": 23,
    "QA": 29,
    "RS": 22,
    "BR": 29,
    "GE": 22,
    "KZ": 20,
    "PK": 24,
    "MC": 27,
    # added for the eighth split
    "AD": 24,
    "SM": 27,
    "JO": 30,
    "KW": 30,
    "BH": 22,
    "LB": 28,
    "EG": 29,
    "TN": 24,
    "MU": 30,
    "MD": 24,
    "AL": 28,
    "BA": 20,
    "ME": 22,
    "MK": 19,
    "AZ": 28,
    "GI": 23,
    "CR": 22,
    "DO": 28,
    "FO": 18,
    "XK": 20,
    "VG": 24,
    "OM": 23,
    "SC": 31,
    "VA": 22,
    # added for the ninth split
    "IQ": 23,
    "SV": 28,
    "GT": 28,
    "PS": 29,
    "TL": 23,
    "BY": 28,
    "LY": 25,
    "RU": 33,
    "ST": 25,
    "NI": 28,
    "MN": 20,
    "YE": 30,
    # added for the twelfth split
    "MR": 27,
    "SD": 18,
    "SO": 23,
    "HN": 28,
    "DJ": 27,
    "BI": 27,
    # added for the thirteenth split
    "FK": 18,
    "GL": 18,
    "LC": 32,
}


def _no_check(first10: str) -> str | None:
    """Norwegian account number MOD 11 check digit (None when the number has none)."""
    r = (
        11
        - sum(int(c) * w for c, w in zip(first10, [5, 4, 3, 2, 7, 6, 5, 4, 3, 2], strict=True)) % 11
    )
    return None if r == 10 else "0" if r == 11 else str(r)


def _fr_rib_key(bank: str, branch: str, account: str) -> str:
    return f"{97 - (89 * int(bank) + 15 * int(branch) + 3 * int(account)) % 97:02d}"


def _es_dc(bank: str, branch: str, account: str) -> str:
    w = [1, 2, 4, 8, 5, 10, 9, 7, 3, 6]

    def one(s: str) -> str:
        r = 11 - sum(int(c) * x for c, x in zip(s, w, strict=True)) % 11
        return "0" if r == 11 else "1" if r == 10 else str(r)

    return one("00" + bank + branch) + one(account)


_IT_ODD = [
    1,
    0,
    5,
    7,
    9,
    13,
    15,
    17,
    19,
    21,
    2,
    4,
    18,
    20,
    11,
    3,
    6,
    8,
    12,
    14,
    16,
    10,
    22,
    25,
    24,
    23,
]


def _it_cin(s: str) -> str:
    total = 0
    for i, c in enumerate(s):
        v = int(c) if c.isdigit() else ord(c) - 65
        total += _IT_ODD[v] if i % 2 == 0 else v
    return chr(65 + total % 26)


def _stdnum_iban_ok(iban: str) -> bool:
    """python-stdnum's IBAN check (True when it is not installed)."""
    try:
        from stdnum import iban as s_iban
    except ImportError:  # pragma: no cover
        return True
    return s_iban.is_valid(iban)


# ---------------------------------------------------------------- generator

CN_MOBILE_PREFIXES = [
    "130",
    "131",
    "132",
    "133",
    "135",
    "136",
    "137",
    "138",
    "139",
    "150",
    "151",
    "152",
    "153",
    "155",
    "156",
    "157",
    "158",
    "159",
    "166",
    "173",
    "176",
    "177",
    "178",
    "180",
    "181",
    "182",
    "183",
    "185",
    "186",
    "187",
    "188",
    "189",
    "191",
    "195",
    "198",
    "199",
]
CN_AREAS = [
    "010",
    "020",
    "021",
    "022",
    "023",
    "024",
    "025",
    "027",
    "028",
    "029",
    "0755",
    "0571",
    "0512",
    "0532",
    "0731",
    "0591",
    "0871",
    "0531",
]
# Region code -> first birth year for which python-stdnum's county table knows
# the code (its check: the county existed in the birth year), so every
# generated ID is plausible to stdnum too.
RIC_REGIONS = {
    "110101": 1952,
    "110105": 1952,
    "110108": 1952,
    "110102": 1952,
    "310104": 1952,
    "310101": 1952,
    "310106": 1952,
    "120101": 1952,
    "120103": 1952,
    "310115": 1992,
    "440305": 1983,
    "440106": 1985,
    "440104": 1983,
    "330106": 1983,
    "330102": 1983,
    "330103": 1983,
    "510107": 1990,
    "510104": 1990,
    "420106": 1983,
    "420102": 1983,
    "320102": 1983,
    "320106": 1983,
    "370202": 1983,
    "370102": 1983,
    "610113": 1983,
    "610104": 1983,
    "350203": 1983,
    "350206": 1987,
    "210102": 1983,
    "430104": 1983,
    "430102": 1983,
    "410105": 1983,
    "410102": 1983,
    "230103": 1983,
    "230102": 1983,
    "530102": 1983,
    "530103": 1983,
    "450103": 1983,
    "450102": 1983,
    "360102": 1983,
    "360103": 1983,
    "340104": 1983,
    "340102": 1983,
    "220102": 1983,
    "220103": 1983,
    "130102": 1983,
    "130104": 1983,
    "520102": 1983,
    "520103": 1983,
    "620102": 1983,
    "620103": 1983,
    "650102": 1983,
    "650103": 1983,
    "321102": 1983,
}
UP_BINS = [
    "622202",
    "621226",
    "622848",
    "621700",
    "622588",
    "621483",
    "622260",
    "621661",
    "622700",
    "623668",
    "622908",
    "621790",
]
US_AREAS = [
    "415",
    "212",
    "646",
    "617",
    "206",
    "312",
    "512",
    "303",
    "408",
    "650",
    "718",
    "202",
    "310",
    "773",
]
CA_AREAS = ["604", "416", "514", "403", "613"]
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")  # added for the ninth split
HALFWIDTH = str.maketrans("０１２３４５６７８９", "0123456789")  # added for the fourteenth split


class Gen:
    """Draws unique values from a seeded RNG. ``used`` is shared between files."""

    def __init__(self, seed: int, used: set[str]) -> None:
        self.r = random.Random(seed)
        self.used = used
        self.phone_region: dict[str, str] = {}

    # helpers
    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def d(self, n: int) -> str:
        return self.s(DIGITS, n)

    def unique(self, fn: Callable[[], str | None]) -> str:
        for _ in range(1000):
            v = fn()
            if v is not None and v not in self.used:
                self.used.add(v)
                return v
        raise AssertionError("could not draw a unique value")

    @staticmethod
    def group(digits: str, sizes: list[int], sep: str) -> str:
        out: list[str] = []
        i = 0
        for n in sizes:
            out.append(digits[i : i + n])
            i += n
        return sep.join(out)

    # ------------------------------------------------------------ cards
    def card_digits(self, brand: str) -> str:
        r = self.r
        if brand == "visa":
            return luhn_complete("4" + self.d(14))
        if brand == "visa13":
            return luhn_complete("4" + self.d(11))
        if brand == "mc":
            return luhn_complete("5" + r.choice("12345") + self.d(13))
        if brand == "mc2":
            return luhn_complete(str(r.randint(2221, 2720)) + self.d(11))
        if brand == "amex":
            return luhn_complete(r.choice(["34", "37"]) + self.d(12))
        if brand == "up16":
            return luhn_complete(r.choice(UP_BINS) + self.d(9))
        if brand == "up19":
            return luhn_complete(r.choice(UP_BINS) + self.d(12))
        if brand == "jcb":
            return luhn_complete(str(r.randint(3528, 3589)) + self.d(11))
        if brand == "disc":
            return luhn_complete("6011" + self.d(11))
        # added for the seventh split: Mir (2200-2204) and 14-digit Diners Club
        if brand == "mir":
            return luhn_complete("220" + r.choice("01234") + self.d(11))
        if brand == "diners":
            return luhn_complete("36" + self.d(11))
        # added for the eighth split: Discover 65, Maestro, RuPay and Troy, 16 digits each
        if brand == "disc65":
            return luhn_complete("65" + self.d(13))
        if brand == "maestro":
            return luhn_complete(r.choice(["5018", "5020", "5038", "6759"]) + self.d(11))
        if brand == "rupay":
            return luhn_complete(r.choice(["6521", "6522", "6070", "6080"]) + self.d(11))
        if brand == "troy":
            return luhn_complete("9792" + self.d(11))
        # added for the ninth split: Elo and Hipercard (Brazil), Dankort, 19-digit Verve
        # (Nigeria) and 15-digit UATP (airline) cards
        if brand == "elo":
            return luhn_complete(r.choice(["636368", "504175", "438935", "451416"]) + self.d(9))
        if brand == "hiper":
            return luhn_complete("606282" + self.d(9))
        if brand == "dankort":
            return luhn_complete("5019" + self.d(11))
        if brand == "verve":
            return luhn_complete(r.choice(["506099", "506105", "506118"]) + self.d(12))
        if brand == "uatp":
            return luhn_complete("1" + r.choice("23456789") + self.d(12))
        # added for the eleventh split: NAPAS (Vietnam), mada (Saudi Arabia), UzCard and
        # Humo (Uzbekistan), 16 digits each
        if brand == "napas":
            return luhn_complete("9704" + r.choice(["05", "15", "18", "22", "36"]) + self.d(9))
        if brand == "mada":
            return luhn_complete(r.choice(["588845", "588848", "968208", "968211"]) + self.d(9))
        if brand == "uzcard":
            return luhn_complete("8600" + self.d(11))
        if brand == "humo":
            return luhn_complete("9860" + self.d(11))
        # added for the twelfth split: Meeza (Egypt), 17-digit Bancontact (Belgium),
        # Belkart (Belarus) and Cabal (Argentina), the others 16 digits
        if brand == "meeza":
            return luhn_complete(r.choice(["507803", "507808", "507809", "507810"]) + self.d(9))
        if brand == "bancontact":
            return luhn_complete("6703" + self.d(12))
        if brand == "belkart":
            return luhn_complete("9112" + self.d(11))
        if brand == "cabal":
            return luhn_complete(r.choice(["604201", "589657"]) + self.d(9))
        # added for the thirteenth split: GPN (Indonesia), Prostir (Ukraine), Shetab (Iran)
        # and Naranja (Argentina), 16 digits each
        if brand == "gpn":
            return luhn_complete("9360" + r.choice(["0008", "0009", "0011", "0013"]) + self.d(7))
        if brand == "prostir":
            return luhn_complete("9804" + self.d(11))
        if brand == "shetab":
            return luhn_complete(
                r.choice(["603799", "610433", "589210", "627353", "622106"]) + self.d(9)
            )
        if brand == "naranja":
            return luhn_complete("589562" + self.d(9))
        raise ValueError(brand)

    def card(self, brand: str, fmt: str) -> str:
        # nb (no-break spaces) and the 14-digit 4-6-4 grouping were added for the seventh split
        # s4 (spaces every four digits, whatever the brand) was added for the eighth split
        # fw (full-width digits, no separator) was added for the fourteenth split
        sep = {"s": " ", "d": "-", "n": "", "nb": "\u00a0", "s4": " ", "fw": ""}[fmt]

        def one() -> str:
            num = self.card_digits(brand)
            if fmt == "fw":
                return num.translate(FULLWIDTH)
            sizes = {
                13: [4, 4, 5],
                14: [4, 6, 4],
                15: [4, 6, 5],
                16: [4, 4, 4, 4],
                17: [4, 4, 4, 4, 1],  # added for the twelfth split (Bancontact)
                19: [4, 4, 4, 4, 3],
            }[len(num)]
            if fmt == "s4":
                sizes = [4] * (len(num) // 4) + ([len(num) % 4] if len(num) % 4 else [])
            return self.group(num, sizes, sep) if sep else num

        return self.unique(one)

    def card_fail(self, brand: str, fmt: str) -> str:
        def one() -> str:
            num = self.card_digits(brand)
            bad = str((int(num[-1]) + self.r.randint(1, 9)) % 10)
            num = num[:-1] + bad
            assert not luhn_ok(num)
            sep = {"s": " ", "d": "-", "n": ""}[fmt]
            return self.group(num, [4, 4, 4, 4], sep) if sep and len(num) == 16 else num

        return self.unique(one)

    def imei(self) -> str:
        return self.unique(
            lambda: luhn_complete(
                self.r.choice(["35209900", "35332510", "86891204", "35847631"]) + self.d(6)
            )
        )

    # ------------------------------------------------------------ Chinese resident ID
    def _region_birth(self, kid: bool = False, elder: bool = False) -> str:
        region = self.r.choice(sorted(RIC_REGIONS))
        start = dt.date(RIC_REGIONS[region], 1, 1).toordinal()
        end = dt.date(2006, 12, 31).toordinal()
        if kid:  # added for the eighth split: children born 2010-2022
            start, end = dt.date(2010, 1, 1).toordinal(), dt.date(2022, 12, 31).toordinal()
        if elder:  # added for the ninth split: born 1952-1962, in a region known since 1952
            region = self.r.choice(sorted(k for k, y in RIC_REGIONS.items() if y <= 1952))
            start, end = dt.date(1952, 1, 1).toordinal(), dt.date(1962, 12, 31).toordinal()
        return region + dt.date.fromordinal(self.r.randint(start, end)).strftime("%Y%m%d")

    def ric(self, mode: str = "") -> str:
        def one() -> str:
            for _ in range(500):
                first = self._region_birth(kid=mode == "kid", elder=mode == "elder") + self.d(3)
                c = ric_check_char(first)
                if mode.upper() == "X" and c != "X":
                    continue
                if mode in ("", "kid", "elder", "dash", "fw") and c == "X":
                    # keep X for the explicit cases
                    continue
                v = first + c
                if mode == "x":
                    v = v.lower()
                if mode == "sp":
                    v = v[:6] + " " + v[6:14] + " " + v[14:]
                if mode == "dash":  # added for the ninth split: 6-8-4 groups with dashes
                    v = v[:6] + "-" + v[6:14] + "-" + v[14:]
                if mode == "fw":  # added for the fourteenth split: full-width digits
                    v = v.translate(FULLWIDTH)
                return v
            raise AssertionError

        return self.unique(one)

    def ric15(self) -> str:
        """A first-generation 15-digit resident ID (added for the ninth split): region,
        YYMMDD birth date and a 3-digit sequence, no check character."""

        def one() -> str:
            region = self.r.choice(sorted(k for k, y in RIC_REGIONS.items() if y <= 1983))
            start, end = dt.date(1935, 1, 1).toordinal(), dt.date(1980, 12, 31).toordinal()
            birth = dt.date.fromordinal(self.r.randint(start, end)).strftime("%y%m%d")
            return region + birth + self.d(3)

        return self.unique(one)

    def ric_bad_check(self) -> str:
        def one() -> str:
            first = self._region_birth() + self.d(3)
            good = ric_check_char(first)
            bad = self.r.choice([c for c in "0123456789" if c != good and not luhn_ok(first + c)])
            return first + bad

        return self.unique(one)

    def ric_bad_date(self) -> str:
        def one() -> str | None:
            y = self.r.randint(1960, 2004)
            md = self.r.choice(["1301", "0230", "1131", "0431", "0000", "1500", "0932", "0229"])
            if md == "0229" and y % 4 == 0:
                md = "0230"
            first = self.r.choice(sorted(RIC_REGIONS)) + str(y) + md + self.d(3)
            v = first + ric_check_char(first)
            return None if luhn_ok(v) else v

        return self.unique(one)

    # ------------------------------------------------------------ passports
    def passport(self, kind: str) -> str:
        r = self.r
        L = "ABCDEFGHJKLMNPQRSTUVWXYZ"

        def one() -> str:
            if kind == "cnE":
                return "E" + r.choice("123456789") + self.d(7)
            if kind == "cnEA":
                return "E" + r.choice("ABCDEFGHJKLMN") + self.d(7)
            if kind == "cnG":
                return "G" + r.choice("3456789") + self.d(7)
            if kind in ("us", "uk"):
                return r.choice("12345678") + self.d(8)
            if kind == "de":
                return r.choice("CFGHJK") + self.s("CFGHJKLMNPRTVWXYZ0123456789", 8)
            if kind == "jp":
                return r.choice(["T", "M"]) + r.choice("KRSZHE") + self.d(7)
            if kind == "hk":
                return r.choice("KH") + self.d(8)
            if kind == "ca":
                return self.s(L, 2) + self.d(6)
            if kind == "in":
                return r.choice("JKLMNPRSTUVWZ") + self.d(7)
            if kind == "fr":
                return self.d(2) + self.s(L, 2) + self.d(5)
            if kind == "kr":
                return "M" + self.d(8)
            if kind == "es":
                return self.s(L, 3) + self.d(6)
            if kind == "ng":
                return "A" + self.d(8)
            if kind == "pt":
                return r.choice("CNP") + self.d(6)
            if kind == "gr":
                return self.s(L, 2) + self.d(7)
            # added for the holdout split
            if kind in ("it", "pl", "ie"):
                return self.s(L, 2) + self.d(7)
            if kind == "au":
                return r.choice("PNRE") + r.choice(L) + self.d(7)
            if kind == "br":
                return self.s(L, 2) + self.d(6)
            if kind == "mx":
                return r.choice("GN") + self.d(8)
            if kind == "ru":
                return r.choice("1234567") + self.d(8)
            if kind == "tw":
                return "3" + self.d(8)
            if kind == "sg":
                return r.choice("EK") + self.d(7) + r.choice(UPPER)
            if kind in ("ch", "vn"):
                return r.choice("XS" if kind == "ch" else "BC") + self.d(7)
            if kind == "nl":
                nl = "ABCDEFGHIJKLMNPQRSTUVWXYZ"
                return self.s(nl, 2) + self.s(nl + DIGITS, 6) + self.d(1)
            # added for the seventh split
            if kind in ("se", "cz", "il"):
                return r.choice("123456789") + self.d(7)
            if kind == "dk":
                return r.choice("12") + self.d(8)
            if kind in ("fi", "th", "pk"):
                return self.s(L, 2) + self.d(7)
            if kind in ("at", "id"):
                return r.choice("PUXC" if kind == "at" else "ABCX") + self.d(7)
            if kind in ("be", "ua", "nz"):
                return self.s(L, 2) + self.d(6)
            if kind == "tr":
                return "U" + self.d(8)
            if kind in ("my", "za"):
                return "A" + self.d(8)
            if kind == "ar":
                return "AA" + r.choice("ABCDEFG") + self.d(6)
            if kind == "ph":
                return "P" + self.d(7) + r.choice(L)
            if kind == "hu":
                return self.s(L, 2) + self.d(r.choice([6, 7]))
            if kind == "kz":
                return "N" + self.d(8)
            # added for the eighth split
            if kind == "cnP":  # Chinese service and public-affairs passports
                return r.choice(["PE", "SE"]) + self.d(7)
            if kind in ("lt", "ro"):
                return self.d(8)
            if kind in ("hr", "bg", "pe"):
                return r.choice("123456789") + self.d(8)
            if kind in ("lv", "bd", "ma"):
                return self.s(L, 2) + self.d(7)
            if kind == "si":
                return "P" + r.choice("ABC") + self.d(7)
            if kind == "eg":
                return "A" + self.d(8)
            if kind == "ir":
                return r.choice("KXY") + self.d(8)
            if kind in ("lk", "mn", "is", "ee"):
                return {"lk": "N", "mn": "E", "is": "A", "ee": "K"}[kind] + self.d(7)
            if kind == "sa":
                return r.choice(L) + self.d(7)
            if kind == "ke":
                return "AK" + self.d(7)
            if kind == "gh":
                return "G" + self.d(7)
            if kind == "cl":
                return r.choice("FP") + self.d(8)
            if kind in ("co", "lu"):
                return self.s(L, 2) + self.d(6)
            if kind == "mo":
                return "M" + r.choice("AB") + self.d(7)
            # added for the ninth split
            if kind == "cnD":  # Chinese diplomatic passports
                return "DE" + self.d(7)
            if kind == "usA":  # US next-generation passport books: a letter, then 8 digits
                return r.choice("AZ") + self.d(8)
            if kind in ("sk", "uz", "np", "et"):
                return {"sk": self.s(L, 2), "uz": "FA", "np": "PA", "et": "EP"}[kind] + self.d(7)
            if kind in ("ae", "qa", "ec", "kh"):
                return {"ae": r.choice(L), "qa": "A", "ec": "A", "kh": "N"}[kind] + self.d(7)
            if kind in ("ug", "az"):
                return {"ug": "A", "az": "C"}[kind] + self.d(8)
            if kind == "tz":
                return "TAE" + self.d(6)
            if kind == "ge":
                return self.d(2) + self.s(L, 2) + self.d(5)
            if kind == "ve":
                return r.choice("123456789") + self.d(8)
            if kind == "uy":
                return "C" + self.d(6)
            # added for the tenth split
            if kind in ("by", "am", "kg"):
                two = {"by": ["MP", "MC", "KH"], "am": ["AR", "AT"], "kg": ["AC"]}
                return r.choice(two[kind]) + self.d(7)
            if kind in ("mm", "zm", "rw", "lb"):
                two = {"mm": ["MA", "MB", "MC"], "zm": ["ZN"], "rw": ["PC"], "lb": ["LR"]}
                return r.choice(two[kind]) + self.d(7 if kind == "lb" else 6)
            if kind == "rs":
                return "0" + self.d(8)
            if kind in ("ba", "af"):
                return {"ba": r.choice("ABC"), "af": "P"}[kind] + self.d(7)
            # added for the eleventh split
            if kind in ("dz", "cr"):
                return r.choice("123456789") + self.d(8)
            if kind == "cy":
                return "K" + self.d(8)
            if kind == "ci":
                return self.d(2) + "A" + r.choice("BCDE") + self.d(5)
            if kind in ("zw", "al"):
                two = {"zw": ["FN", "DN"], "al": ["BA", "BB"]}
                return r.choice(two[kind]) + self.d(6 if kind == "zw" else 7)
            if kind in ("mk", "jo"):
                return {"mk": "M", "jo": r.choice("NRT")}[kind] + self.d(7)
            # added for the twelfth split
            if kind in ("iq", "sv"):
                return "A" + self.d(8)
            if kind == "md":
                return r.choice(["AB", "BA"]) + self.d(7)
            if kind in ("jm", "tm", "la", "mu"):
                return {"jm": "A", "tm": "A", "la": "P", "mu": r.choice(L)}[kind] + self.d(7)
            if kind == "tj":
                return "4" + self.d(8)
            # added for the thirteenth split
            if kind in ("pa", "do"):
                return {"pa": "PA", "do": r.choice(["SC", "RD"])}[kind] + self.d(7)
            if kind in ("xk", "sn"):
                return {"xk": "P", "sn": "A"}[kind] + self.d(8)
            if kind == "tt":
                return "T" + r.choice("ABC") + self.d(6)
            if kind == "me":
                return self.d(8)
            raise ValueError(kind)

        return self.unique(one)

    # ------------------------------------------------------------ phones
    def phone(self, kind: str, fmt: str = "") -> str:
        try:
            import phonenumbers  # noqa: F401

            have = True
        except ImportError:  # pragma: no cover
            have = False

        def one() -> str | None:
            v, region = self._phone_once(kind, fmt)
            if have:
                import phonenumbers

                p = phonenumbers.parse(v, region)
                if not phonenumbers.is_valid_number(p):
                    return None
            self.phone_region[v] = region
            return v

        def loop() -> str:
            for _ in range(500):
                v = one()
                if v:
                    return v
            raise AssertionError(kind)

        return self.unique(loop)

    def _phone_once(self, kind: str, fmt: str) -> tuple[str, str]:
        r, d = self.r, self.d
        if kind == "cn":
            p, a, b = r.choice(CN_MOBILE_PREFIXES), d(4), d(4)
            return {
                "plain": f"{p}{a}{b}",
                "sp": f"{p} {a} {b}",
                "dash": f"{p}-{a}-{b}",
                "p86sp": f"+86 {p} {a} {b}",
                "p86": f"+86{p}{a}{b}",
                "p86dash": f"+86-{p}-{a}-{b}",
                # added for the holdout split
                "0086": f"0086 {p} {a} {b}",
                "paren86": f"(+86) {p}-{a}-{b}",
                "s38": f"{p} {a}{b}",
                "p86nb": f"+86\u00a0{p}\u00a0{a}\u00a0{b}",
                # added for the seventh split
                "p86s": f"+86 {p}{a}{b}",
                # added for the eighth split
                "dot": f"{p}.{a}.{b}",
                "p86sd": f"+86 {p}-{a}-{b}",
                # added for the ninth split: full-width digits, +86- run together, and
                # 86 without the plus (as in a wa.me link)
                "fw": f"{p}{a}{b}".translate(FULLWIDTH),
                "p86nd": f"+86-{p}{a}{b}",
                "wa": f"86{p}{a}{b}",
                # added for the tenth split: 0086 run together (a contacts export)
                "0086nd": f"0086{p}{a}{b}",
                # added for the eleventh split: 86 without the plus, then spaces
                "86sp": f"86 {p} {a} {b}",
                # added for the twelfth split: the WHOIS style
                "p86dot": f"+86.{p}{a}{b}",
                # added for the thirteenth split: (+86) run together, 86- with dashes
                "paren86nd": f"(+86){p}{a}{b}",
                "86dash": f"86-{p}-{a}-{b}",
            }[fmt], "CN"
        if kind == "land":
            fmt, _, area = fmt.partition(":")
            area = area or r.choice(CN_AREAS)
            sub = r.choice("2345678") + d(7)
            return {
                "dash": f"{area}-{sub}",
                "paren": f"({area}) {sub[:4]} {sub[4:]}",
                "p86": f"+86 {area[1:]} {sub[:4]} {sub[4:]}",
                "sp": f"{area} {sub[:4]} {sub[4:]}",
                # added for the holdout split
                "p86dash": f"+86-{area[1:]}-{sub}",
                "plain": f"{area}{sub}",
                # added for the eighth split
                "paren0": f"({area}){sub}",
            }[fmt], "CN"
        if kind in ("us", "ca"):
            area = r.choice(US_AREAS if kind == "us" else CA_AREAS)
            line = "01" + d(2)
            return {
                "p1sp": f"+1 {area} 555 {line}",
                "paren": f"({area}) 555-{line}",
                "dash": f"{area}-555-{line}",
                "p1dash": f"+1-{area}-555-{line}",
                "dot": f"{area}.555.{line}",
                "": f"+1 {area} 555 {line}",
                # added for the holdout split
                "plain": f"+1{area}555{line}",
                "nat1": f"1 ({area}) 555-{line}",
                # added for the eighth split
                "p1paren": f"+1 ({area}) 555-{line}",
                # added for the ninth split
                "p1sd": f"+1 {area}-555-{line}",
                # added for the tenth split
                "n1dash": f"1-{area}-555-{line}",
                "sp": f"{area} 555 {line}",
                # added for the eleventh split: the WHOIS style
                "whois": f"+1.{area}555{line}",
            }[fmt], "US"
        if kind == "uk":
            if fmt == "land":
                return f"+44 20 7946 0{d(3)}", "GB"
            if fmt == "land0":
                return f"020 7946 0{d(3)}", "GB"
            if fmt == "mob0":  # added for the holdout split
                return f"07{r.choice(['911', '700', '400', '823', '412', '956'])} {d(6)}", "GB"
            if fmt == "p0":  # added for the eighth split
                return f"+44 (0)7{r.choice(['911', '700', '400', '823', '412'])} {d(6)}", "GB"
            if fmt == "e164":  # added for the fourteenth split
                return f"+447{r.choice(['911', '700', '400', '823', '412'])}{d(6)}", "GB"
            return f"+44 7{r.choice(['911', '700', '400', '823', '412', '956'])} {d(6)}", "GB"
        if kind == "de":
            if fmt == "mob0":  # added for the holdout split
                return f"0{r.choice(['151', '152', '160', '170', '176'])} {d(8)}", "DE"
            if fmt == "land0":
                return f"030 {r.choice('2345678')}{d(7)}", "DE"
            if fmt == "land":
                return f"+49 30 {d(8)}", "DE"
            if fmt == "p0":  # added for the eighth split
                return f"+49 (0){r.choice(['151', '160', '170', '176'])} {d(8)}", "DE"
            if fmt == "e164":  # added for the ninth split
                return f"+49{r.choice(['151', '160', '170', '176'])}{d(8)}", "DE"
            if fmt == "nd":  # added for the fourteenth split: national, run together
                return f"0{r.choice(['151', '160', '170', '176'])}{d(8)}", "DE"
            return f"+49 {r.choice(['151', '152', '160', '170', '176'])} {d(8)}", "DE"
        if kind == "jp":
            if fmt == "nat":  # added for the holdout split
                return f"0{r.choice(['90', '80', '70'])}-{d(4)}-{d(4)}", "JP"
            if fmt == "land":
                return f"+81 3-{d(4)}-{d(4)}", "JP"
            if fmt == "land0":  # added for the seventh split
                return f"03-{d(4)}-{d(4)}", "JP"
            return f"+81 {r.choice(['90', '80', '70'])}-{d(4)}-{d(4)}", "JP"
        if kind == "fr":
            if fmt == "dot":  # added for the holdout split
                return "07." + ".".join(d(2) for _ in range(4)), "FR"
            if fmt == "land":
                return "+33 1 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "nat":
                return "06 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "p0":  # added for the eighth split
                return "+33 (0)6 " + " ".join(d(2) for _ in range(4)), "FR"
            if fmt == "nd":  # added for the fourteenth split: national, run together
                return "0" + r.choice("67") + "".join(d(2) for _ in range(4)), "FR"
            return "+33 " + r.choice("67") + " " + " ".join(d(2) for _ in range(4)), "FR"
        if kind == "sg":
            if fmt == "nat":  # added for the holdout split
                return f"{r.choice('89')}{d(3)} {d(4)}", "SG"
            return f"+65 {r.choice('89')}{d(3)} {d(4)}", "SG"
        if kind == "hk":
            if fmt == "nat":  # added for the holdout split
                return f"{r.choice('569')}{d(3)} {d(4)}", "HK"
            return f"+852 {r.choice('5679')}{d(3)} {d(4)}", "HK"
        if kind == "au":
            if fmt == "mob":  # added for the holdout split
                return f"+61 4{d(2)} {d(3)} {d(3)}", "AU"
            if fmt == "mob0":
                return f"04{d(2)} {d(3)} {d(3)}", "AU"
            return f"+61 2 {r.choice('89')}{d(3)} {d(4)}", "AU"
        if kind == "kr":
            if fmt == "nat":  # added for the holdout split
                return f"010-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"
            return f"+82 10-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"
        if kind == "pt":
            return f"+351 9{r.choice('1236')}{d(1)} {d(3)} {d(3)}", "PT"
        if kind == "cz":
            return f"+420 {r.choice('67')}{r.choice('0237')}{d(1)} {d(3)} {d(3)}", "CZ"
        # added for the holdout split
        more: dict[str, Callable[[], tuple[str, str]]] = {
            "in": lambda: (f"+91 {r.choice('6789')}{d(4)} {d(5)}", "IN"),
            "in0": lambda: (f"0{r.choice('6789')}{d(4)} {d(5)}", "IN"),
            "br": lambda: (f"+55 11 9{d(4)}-{d(4)}", "BR"),
            "mx": lambda: (f"+52 55 {d(4)} {d(4)}", "MX"),
            "es": lambda: (f"+34 6{d(2)} {d(3)} {d(3)}", "ES"),
            "it": lambda: (f"+39 3{r.choice('2345')}{d(1)} {d(3)} {d(4)}", "IT"),
            "nl": lambda: (f"+31 6 {d(8)}", "NL"),
            "nl0": lambda: (f"06-{d(8)}", "NL"),
            "tw": lambda: (f"+886 9{d(2)} {d(3)} {d(3)}", "TW"),
            "tw0": lambda: (f"09{d(2)}-{d(3)}-{d(3)}", "TW"),
            "ru": lambda: (f"+7 9{d(2)} {d(3)}-{d(2)}-{d(2)}", "RU"),
            "ru8": lambda: (f"8 (9{d(2)}) {d(3)}-{d(2)}-{d(2)}", "RU"),
            "za": lambda: (f"+27 8{r.choice('234')} {d(3)} {d(4)}", "ZA"),
            "ae": lambda: (f"+971 5{r.choice('0256')} {d(3)} {d(4)}", "AE"),
            "ie": lambda: (f"+353 8{r.choice('35679')} {d(3)} {d(4)}", "IE"),
            "ch": lambda: (f"+41 7{r.choice('6789')} {d(3)} {d(2)} {d(2)}", "CH"),
            "se": lambda: (f"+46 70 {d(3)} {d(2)} {d(2)}", "SE"),
            "my": lambda: (f"+60 1{r.choice('2346789')}-{d(3)} {d(4)}", "MY"),
            "ng": lambda: (f"+234 80{r.choice('3678')} {d(3)} {d(4)}", "NG"),
            "pl": lambda: (f"+48 {r.choice('5678')}{d(2)} {d(3)} {d(3)}", "PL"),
            "mo": lambda: (f"+853 6{d(3)} {d(4)}", "MO"),
            "th": lambda: (f"+66 8{d(1)} {d(3)} {d(4)}", "TH"),
            "id": lambda: (f"+62 812-{d(4)}-{d(4)}", "ID"),
            "ph": lambda: (f"+63 917 {d(3)} {d(4)}", "PH"),
            "00": lambda: (f"0049 {r.choice(['151', '160', '176'])} {d(8)}", "CH"),
            # added for the seventh split
            "vn": lambda: (f"+84 9{d(2)} {d(3)} {d(3)}", "VN"),
            "tr": lambda: (f"+90 5{r.choice('0345')}{d(1)} {d(3)} {d(2)} {d(2)}", "TR"),
            "tr0": lambda: (f"0 5{r.choice('0345')}{d(1)} {d(3)} {d(2)} {d(2)}", "TR"),
            "ar": lambda: (f"+54 9 11 {d(4)}-{d(4)}", "AR"),
            "cl": lambda: (f"+56 9 {d(4)} {d(4)}", "CL"),
            "co": lambda: (f"+57 3{d(2)} {d(3)} {d(4)}", "CO"),
            "nz": lambda: (f"+64 21 {d(3)} {d(4)}", "NZ"),
            "nz0": lambda: (f"021 {d(3)} {d(4)}", "NZ"),
            "ke": lambda: (f"+254 7{d(2)} {d(3)} {d(3)}", "KE"),
            "il": lambda: (f"+972 5{r.choice('0234')}-{d(3)}-{d(4)}", "IL"),
            "ua": lambda: (
                f"+380 {r.choice(['50', '67', '68', '96', '97', '98', '63', '73', '93'])}"
                f" {d(3)} {d(2)} {d(2)}",
                "UA",
            ),
            "at": lambda: (f"+43 664 {d(7)}", "AT"),
            "be": lambda: (f"+32 4{r.choice('789')}{d(1)} {d(2)} {d(2)} {d(2)}", "BE"),
            "dk": lambda: (f"+45 {r.choice('2345')}{d(1)} {d(2)} {d(2)} {d(2)}", "DK"),
            "no": lambda: (f"+47 {r.choice('49')}{d(2)} {d(2)} {d(3)}", "NO"),
            "fi": lambda: (f"+358 40 {d(3)} {d(4)}", "FI"),
            "pk": lambda: (f"+92 3{d(2)} {d(7)}", "PK"),
            "hu": lambda: (f"+36 {r.choice(['20', '30', '70'])} {d(3)} {d(4)}", "HU"),
            "ro": lambda: (f"+40 7{r.choice('2345')}{d(1)} {d(3)} {d(3)}", "RO"),
            "kz": lambda: (f"+7 70{r.choice('0157')} {d(3)} {d(2)} {d(2)}", "KZ"),
            "gr": lambda: (f"+30 69{d(1)} {d(3)} {d(4)}", "GR"),
            "sn": lambda: (f"+221 7{r.choice('0678')} {d(3)} {d(2)} {d(2)}", "SN"),
            "gh": lambda: (f"+233 {r.choice(['24', '54', '55', '20', '50'])} {d(3)} {d(4)}", "GH"),
            "rs": lambda: (f"+381 6{r.choice('01234')} {d(3)} {d(4)}", "RS"),
            # added for the eighth split
            "eg": lambda: (f"+20 1{r.choice('0125')} {d(4)} {d(4)}", "EG"),
            "sa": lambda: (f"+966 5{r.choice('03456')} {d(3)} {d(4)}", "SA"),
            "ma": lambda: (f"+212 6{d(2)}-{d(6)}", "MA"),
            "pe": lambda: (f"+51 9{d(2)} {d(3)} {d(3)}", "PE"),
            "bd": lambda: (f"+880 1{r.choice('3789')}{d(2)}-{d(6)}", "BD"),
            "lk": lambda: (f"+94 7{r.choice('0125678')} {d(3)} {d(4)}", "LK"),
            "np": lambda: (f"+977 98{r.choice('0456')}-{d(7)}", "NP"),
            "lt": lambda: (f"+370 6{d(2)} {d(5)}", "LT"),
            "lv": lambda: (f"+371 2{d(3)} {d(4)}", "LV"),
            "ee": lambda: (f"+372 5{d(3)} {d(4)}", "EE"),
            "hr": lambda: (f"+385 9{r.choice('1258')} {d(3)} {d(4)}", "HR"),
            "si": lambda: (f"+386 {r.choice(['31', '40', '41', '51', '70'])} {d(3)} {d(3)}", "SI"),
            "bg": lambda: (f"+359 8{r.choice('789')} {d(3)} {d(4)}", "BG"),
            "is": lambda: (f"+354 {r.choice('678')}{d(2)} {d(4)}", "IS"),
            "lu": lambda: (f"+352 621 {d(3)} {d(3)}", "LU"),
            "mt": lambda: (f"+356 79{d(2)} {d(4)}", "MT"),
            "cy": lambda: (f"+357 9{r.choice('679')} {d(6)}", "CY"),
            "qa": lambda: (f"+974 {r.choice('3567')}{d(3)} {d(4)}", "QA"),
            "tz": lambda: (f"+255 7{r.choice('1345678')}{d(1)} {d(3)} {d(3)}", "TZ"),
            "ug": lambda: (f"+256 7{r.choice('0578')}{d(1)} {d(6)}", "UG"),
            "et": lambda: (f"+251 9{r.choice('123456789')} {d(3)} {d(4)}", "ET"),
            "uy": lambda: (f"+598 9{r.choice('1234589')} {d(3)} {d(3)}", "UY"),
            "ec": lambda: (f"+593 9{r.choice('6789')} {d(3)} {d(4)}", "EC"),
            "ir": lambda: (f"+98 91{d(1)} {d(3)} {d(4)}", "IR"),
            "mn": lambda: (f"+976 {r.choice('89')}{d(3)} {d(4)}", "MN"),
            "kh": lambda: (f"+855 {r.choice(['12', '17', '92', '96'])} {d(3)} {d(3)}", "KH"),
            "kr82": lambda: (f"+82-10-{r.choice('2345678')}{d(3)}-{d(4)}", "KR"),
            # added for the ninth split: national formats, and 00 prefixes dialled from China
            "ke0": lambda: (f"07{d(2)} {d(6)}", "KE"),
            "ng0": lambda: (f"080{r.choice('3678')} {d(3)} {d(4)}", "NG"),
            "za0": lambda: (f"08{r.choice('234')} {d(3)} {d(4)}", "ZA"),
            "ie0": lambda: (f"08{r.choice('35679')} {d(3)} {d(4)}", "IE"),
            "es0": lambda: (f"6{d(2)} {d(2)} {d(2)} {d(2)}", "ES"),
            "be0": lambda: (f"04{r.choice('789')}{d(1)} {d(2)} {d(2)} {d(2)}", "BE"),
            "ch0": lambda: (f"07{r.choice('6789')} {d(3)} {d(2)} {d(2)}", "CH"),
            "at0": lambda: (f"0664 {d(7)}", "AT"),
            "pl0": lambda: (f"{r.choice('5678')}{d(2)} {d(3)} {d(3)}", "PL"),
            "se0": lambda: (f"070-{d(3)} {d(2)} {d(2)}", "SE"),
            "ae0": lambda: (f"05{r.choice('0256')} {d(3)} {d(4)}", "AE"),
            "sa0": lambda: (f"05{r.choice('03456')} {d(3)} {d(4)}", "SA"),
            "eg0": lambda: (f"01{r.choice('0125')} {d(4)} {d(4)}", "EG"),
            "vn0": lambda: (f"09{d(1)} {d(3)} {d(4)}", "VN"),
            "id0": lambda: (f"0812-{d(4)}-{d(4)}", "ID"),
            "ph0": lambda: (f"0917 {d(3)} {d(4)}", "PH"),
            "br0": lambda: (f"(11) 9{d(4)}-{d(4)}", "BR"),
            "my0": lambda: (f"01{r.choice('2346789')}-{d(3)} {d(4)}", "MY"),
            "th0": lambda: (f"08{d(1)} {d(3)} {d(4)}", "TH"),
            "pk0": lambda: (f"03{d(2)} {d(7)}", "PK"),
            "it0": lambda: (f"3{r.choice('2345')}{d(1)} {d(3)} {d(4)}", "IT"),
            "uk00": lambda: (f"0044 7{r.choice(['911', '700', '400', '823'])} {d(6)}", "CN"),
            "fr00": lambda: (
                "0033 " + r.choice("67") + " " + " ".join(d(2) for _ in range(4)),
                "CN",
            ),
            # added for the tenth split: more national formats
            "no0": lambda: (f"{r.choice('49')}{d(2)} {d(2)} {d(3)}", "NO"),
            "co0": lambda: (f"3{d(2)} {d(3)} {d(4)}", "CO"),
            "ro0": lambda: (f"07{r.choice('2345')}{d(1)} {d(3)} {d(3)}", "RO"),
            # added for the eleventh split: more national formats
            "pt0": lambda: (f"9{r.choice('1236')}{d(1)} {d(3)} {d(3)}", "PT"),
            "gr0": lambda: (f"69{d(1)} {d(3)} {d(4)}", "GR"),
            "ua0": lambda: (
                f"0{r.choice(['50', '67', '68', '96', '97', '98', '63', '73', '93'])}"
                f" {d(3)} {d(2)} {d(2)}",
                "UA",
            ),
            "mx0": lambda: (f"55 {d(4)} {d(4)}", "MX"),
            # added for the twelfth split: a German slash, ten bare Indian digits, E.164
            # run together (JP, NG), Pakistani dashes, Bangladeshi, Brazilian and British
            # national formats
            "deslash": lambda: (f"0{r.choice(['151', '160', '170', '176'])}/{d(8)}", "DE"),
            "in10": lambda: (f"{r.choice('6789')}{d(9)}", "IN"),
            "jpe164": lambda: (f"+81{r.choice(['90', '80', '70'])}{d(8)}", "JP"),
            "ng234": lambda: (
                f"+234{r.choice(['803', '806', '813', '816', '703', '706', '810'])}{d(7)}",
                "NG",
            ),
            "pkdash": lambda: (f"+92-3{d(2)}-{d(7)}", "PK"),
            "bd0": lambda: (f"01{r.choice('3789')}{d(2)}-{d(6)}", "BD"),
            "brparen": lambda: (f"+55 (11) 9{d(4)}-{d(4)}", "BR"),
            "ukns": lambda: (f"07{r.choice(['911', '700', '400', '823'])}{d(6)}", "GB"),
            # added for the thirteenth split: more national and international formats
            "krsp": lambda: (f"010 {r.choice('2345678')}{d(3)} {d(4)}", "KR"),
            "jp0sp": lambda: (f"0{r.choice(['90', '80', '70'])} {d(4)} {d(4)}", "JP"),
            "th0dash": lambda: (f"08{r.choice('1256789')}-{d(3)}-{d(4)}", "TH"),
            "indash": lambda: (f"+91-{r.choice('6789')}{d(4)}-{d(5)}", "IN"),
            "pldash": lambda: (f"+48 {r.choice('5678')}{d(2)}-{d(3)}-{d(3)}", "PL"),
            "es34": lambda: (f"+346{d(8)}", "ES"),
            "hkdash": lambda: (f"+852-{r.choice('569')}{d(3)}-{d(4)}", "HK"),
            "twdash": lambda: (f"+886-9{d(2)}-{d(3)}-{d(3)}", "TW"),
        }
        if kind in more:
            return more[kind]()
        raise ValueError(kind)

    # ------------------------------------------------------------ API keys and tokens
    def _jwt(self) -> str:
        r = self.r
        alg = r.choice(["HS256", "ES256", "HS512"])
        header = {"alg": alg, "typ": "JWT"}
        now = r.randint(1_730_000_000, 1_770_000_000)
        payload = {
            "sub": "usr_" + self.s(LOWER + DIGITS, 10),
            "iat": now,
            "exp": now + r.choice([900, 3600, 86400]),
        }
        if r.random() < 0.5:
            payload["scope"] = r.choice(["memories:read memories:write", "admin", "read"])

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        sig_len = {"HS256": 32, "ES256": 64, "HS512": 64}[alg]
        sig = bytes(r.randrange(256) for _ in range(sig_len))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _jwt_rs(self) -> str:
        """An RS256 JWT with issuer/audience claims (added for the holdout split)."""
        r = self.r

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        now = r.randint(1_735_000_000, 1_775_000_000)
        header = {"alg": "RS256", "kid": self.s(HEX, 8), "typ": "JWT"}
        payload = {
            "iss": r.choice(["https://auth.tallowpay.dev", "https://sso.brackenridge.io"]),
            "aud": r.choice(["notes-api", "ledger", "agent-gateway"]),
            "sub": self.d(9),
            "iat": now,
            "exp": now + r.choice([600, 7200]),
        }
        sig = bytes(r.randrange(256) for _ in range(256))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _supabase_anon(self) -> str:
        """A Supabase anon JWT, public by design (added for the ninth split)."""
        r = self.r

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        now = r.randint(1_700_000_000, 1_760_000_000)
        header = {"alg": "HS256", "typ": "JWT"}
        payload = {
            "iss": "supabase",
            "ref": self.s(LOWER, 20),
            "role": "anon",
            "iat": now,
            "exp": now + 315_360_000,
        }
        sig = bytes(r.randrange(256) for _ in range(32))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _supabase_service(self) -> str:
        """A Supabase service_role JWT, a server secret (added for the fourteenth split)."""
        now = self.r.randint(1_700_000_000, 1_770_000_000)
        payload = {
            "iss": "supabase",
            "ref": self.s(LOWER, 20),
            "role": "service_role",
            "iat": now,
            "exp": now + 315_360_000,
        }
        return self._jwt_plain({"alg": "HS256", "typ": "JWT"}, payload, 32)

    def _jwt_plain(self, header: dict[str, str], payload: dict[str, object], sig_len: int) -> str:
        """A JWT from a header, a payload and random signature bytes (eleventh split)."""

        def enc(b: bytes) -> str:
            return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

        sig = bytes(self.r.randrange(256) for _ in range(sig_len))
        return ".".join(
            [
                enc(json.dumps(header, separators=(",", ":")).encode()),
                enc(json.dumps(payload, separators=(",", ":")).encode()),
                enc(sig),
            ]
        )

    def _hass(self) -> str:
        """A Home Assistant long-lived access token (added for the eleventh split)."""
        now = self.r.randint(1_700_000_000, 1_770_000_000)
        payload = {"iss": self.s(HEX, 32), "iat": now, "exp": now + 315_360_000}
        return self._jwt_plain({"alg": "HS256", "typ": "JWT"}, payload, 32)

    def _turso(self) -> str:
        """A Turso database auth token, an EdDSA JWT (added for the eleventh split)."""
        now = self.r.randint(1_720_000_000, 1_770_000_000)
        uid = "-".join([self.s(HEX, 8), self.s(HEX, 4), self.s(HEX, 4), self.s(HEX, 4)])
        payload = {"a": "rw", "iat": now, "id": uid + "-" + self.s(HEX, 12)}
        return self._jwt_plain({"alg": "EdDSA", "typ": "JWT"}, payload, 64)

    def _uuid4(self) -> str:
        """A random version-4 UUID (added for the thirteenth split)."""
        s = self.s
        return "-".join(
            [s(HEX, 8), s(HEX, 4), "4" + s(HEX, 3), self.r.choice("89ab") + s(HEX, 3), s(HEX, 12)]
        )

    def _monday(self) -> str:
        """A monday.com personal API token, an HS256 JWT (added for the thirteenth split)."""
        r = self.r
        issued = dt.datetime.fromtimestamp(r.randint(1_735_000_000, 1_775_000_000), dt.UTC)
        payload = {
            "tid": r.randint(300_000_000, 520_000_000),
            "aai": r.randint(10, 99),
            "uid": r.randint(40_000_000, 75_000_000),
            "iad": issued.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "per": "me:write",
            "actid": r.randint(10_000_000, 30_000_000),
            "rgn": r.choice(["use1", "euc1", "apse2"]),
        }
        return self._jwt_plain({"alg": "HS256"}, payload, 32)

    def _calendly(self) -> str:
        """A Calendly personal access token, an ES256 JWT (added for the thirteenth split)."""
        payload = {
            "iss": "https://auth.calendly.com",
            "iat": self.r.randint(1_735_000_000, 1_775_000_000),
            "jti": self._uuid4(),
            "user_uuid": self._uuid4(),
        }
        return self._jwt_plain({"kid": self.s(HEX, 64), "typ": "PAT", "alg": "ES256"}, payload, 64)

    def key(self, kind: str) -> str:
        s, d, r = self.s, self.d, self.r
        table: dict[str, Callable[[], str]] = {
            "openai": lambda: "sk-" + s(ALNUM, 20) + "T3BlbkFJ" + s(ALNUM, 20),
            "openai_proj": lambda: "sk-proj-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "dsk": lambda: "sk-" + s(HEX, 32),
            "anthropic": lambda: "sk-ant-api03-" + s(B64URL, 93) + "AA",
            "ghp": lambda: "ghp_" + s(ALNUM, 36),
            "gho": lambda: "gho_" + s(ALNUM, 36),
            "ghpat": lambda: "github_pat_11" + s(UPPER + DIGITS, 20) + "_" + s(ALNUM, 59),
            "akia": lambda: "AKIA" + s(B32, 16),
            "awssecret": lambda: s(B64, 40),
            "xoxb": lambda: "xoxb-" + d(11) + "-" + d(13) + "-" + s(ALNUM, 24),
            "xoxp": lambda: "xoxp-" + d(11) + "-" + d(11) + "-" + d(13) + "-" + s(HEX, 32),
            "stripe_sk": lambda: "sk_live_" + s(ALNUM, r.choice([24, 99])),
            "stripe_rk": lambda: "rk_live_" + s(ALNUM, r.choice([24, 99])),
            "google": lambda: "AIza" + s(B64URL, 35),
            "jwt": self._jwt,
            "bearer": lambda: s(B64URL, r.choice([40, 43, 64])),
            "hex32": lambda: s(HEX, 32),
            "hex40": lambda: s(HEX, 40),
            "hex64": lambda: s(HEX, 64),
            "alnum32": lambda: s(ALNUM, 32),
            "alnum40": lambda: s(ALNUM, 40),
            "hf": lambda: "hf_" + s(string.ascii_letters, 34),
            "npm": lambda: "npm_" + s(ALNUM, 36),
            "glpat": lambda: "glpat-" + s(B64URL, 20),
            "whsec": lambda: "whsec_" + s(ALNUM, 32),
            "sendgrid": lambda: "SG." + s(B64URL, 22) + "." + s(B64URL, 43),
            "ltai": lambda: "LTAI5t" + s(ALNUM, 18),
            "alisecret": lambda: s(ALNUM, 30),
            "akid": lambda: "AKID" + s(ALNUM, 32),
            "tcsecret": lambda: s(ALNUM, 32),
            # added for the holdout split
            "openai_svc": lambda: "sk-svcacct-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "anthropic_admin": lambda: "sk-ant-admin01-" + s(B64URL, 93) + "AA",
            "ghs": lambda: "ghs_" + s(ALNUM, 36),
            "ghu": lambda: "ghu_" + s(ALNUM, 36),
            "ghr": lambda: "ghr_" + s(ALNUM, 36),
            "gldt": lambda: "gldt-" + s(B64URL, 20),
            "glrt": lambda: "glrt-" + s(B64URL, 20),
            "asia": lambda: "ASIA" + s(B32, 16),
            "awssession": lambda: "IQoJb3JpZ2luX2VjE" + s(B64, 300) + "=",
            "xapp": lambda: "xapp-1-A" + s(UPPER + DIGITS, 10) + "-" + d(13) + "-" + s(HEX, 64),
            "gocspx": lambda: "GOCSPX-" + s(B64URL, 28),
            "ya29": lambda: "ya29.a0" + s(B64URL, 160),
            "azure_storage": lambda: s(B64, 86) + "==",
            "azure_ad": lambda: s(ALNUM, 3) + "8Q~" + s(ALNUM + "_~.-", 34),
            "twilio_sk": lambda: "SK" + s(HEX, 32),
            "mailgun": lambda: "key-" + s(HEX, 32),
            "dop": lambda: "dop_v1_" + s(HEX, 64),
            "discord": lambda: "MT" + s(ALNUM, 24) + "." + s(B64URL, 6) + "." + s(B64URL, 38),
            "telegram": lambda: (
                str(r.randint(5_000_000_000, 7_999_999_999)) + ":AA" + s(B64URL, 33)
            ),
            "shpat": lambda: "shpat_" + s(HEX, 32),
            "gsk": lambda: "gsk_" + s(ALNUM, 52),
            "r8": lambda: "r8_" + s(ALNUM, 37),
            "pplx": lambda: "pplx-" + s(ALNUM, 48),
            "ntn": lambda: "ntn_" + s(ALNUM, 46),
            "linear": lambda: "lin_api_" + s(ALNUM, 40),
            "dckr": lambda: "dckr_pat_" + s(B64URL, 27),
            "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + s(B64URL, 160),
            "zhipu": lambda: s(HEX, 32) + "." + s(ALNUM, 16),
            "moonshot": lambda: "sk-" + s(ALNUM, 48),
            "cf": lambda: s(B64URL, 40),
            "b64_32": lambda: s(B64, 43) + "=",
            "b64_48": lambda: s(B64, 64),
            "aklt": lambda: "AKLT" + s(B64URL, 40),
            "jwt_rs": self._jwt_rs,
            # added for the fresh split: Baidu Qianfan v2 and Baidu AI Cloud API keys
            "qianfan": lambda: "bce-v3/ALTAK-" + s(ALNUM, 21) + "/" + s(HEX, 40),
            "baidu_ak": lambda: s(ALNUM, 24),
            # added for the sixth split: OpenRouter, xAI, Tavily, LangSmith, Airtable,
            # Supabase and SiliconFlow keys
            "openrouter": lambda: "sk-or-v1-" + s(HEX, 64),
            "xai": lambda: "xai-" + s(ALNUM, 80),
            "tavily": lambda: "tvly-" + s(ALNUM, 32),
            "langsmith": lambda: "lsv2_pt_" + s(HEX, 32) + "_" + s(HEX, 10),
            "airtable": lambda: "pat" + s(ALNUM, 14) + "." + s(HEX, 64),
            "supabase": lambda: "sbp_" + s(HEX, 40),
            "siliconflow": lambda: "sk-" + s(LOWER, 48),
            # added for the seventh split: ElevenLabs, Resend, Pinecone, Firecrawl, E2B,
            # Grafana, New Relic, Figma, HashiCorp Vault, Doppler, Postman, Neon, Paystack,
            # Flutterwave, Square, Atlassian, Mapbox (secret), Jina, Voyage, Brave Search,
            # Fireworks, Sentry, Netlify, Render, RubyGems, crates.io, HubSpot, Okta, FCM,
            # UUID-shaped keys (Volcengine Ark, WeCom and Feishu webhooks) and 24 letters
            "elevenlabs": lambda: "sk_" + s(HEX, 48),
            "resend": lambda: "re_" + s(ALNUM, 8) + "_" + s(ALNUM, 24),
            "pinecone": lambda: "pcsk_" + s(ALNUM, 6) + "_" + s(ALNUM, 63),
            "firecrawl": lambda: "fc-" + s(HEX, 32),
            "e2b": lambda: "e2b_" + s(HEX, 40),
            "grafana": lambda: "glsa_" + s(ALNUM, 32) + "_" + s(HEX, 8),
            "newrelic": lambda: "NRAK-" + s(UPPER + DIGITS, 27),
            "figma": lambda: "figd_" + s(B64URL, 40),
            "vault": lambda: "hvs." + s(ALNUM, 24),
            "doppler": lambda: "dp.st." + r.choice(["prd", "dev", "stg"]) + "." + s(ALNUM, 40),
            "postman": lambda: "PMAK-" + s(HEX, 24) + "-" + s(HEX, 34),
            "neon": lambda: "napi_" + s(LOWER + DIGITS, 64),
            "paystack": lambda: "sk_live_" + s(HEX, 40),
            "flutterwave": lambda: "FLWSECK-" + s(HEX, 32) + "-X",
            "square": lambda: "EAAA" + s(B64URL, 60),
            "atlassian": lambda: "ATATT3xFfGF0" + s(B64URL, 180) + "=" + s("0123456789ABCDEF", 8),
            "mapbox_sk": lambda: "sk.eyJ1Ijoi" + s(B64URL, 60) + "." + s(B64URL, 22),
            "jina": lambda: "jina_" + s(HEX, 32) + s(ALNUM, 28),
            "voyage": lambda: "pa-" + s(B64URL, 43),
            "brave": lambda: "BSA" + s(ALNUM, 28),
            "fireworks": lambda: "fw_" + s(ALNUM, 24),
            "sentry": lambda: "sntryu_" + s(HEX, 64),
            "netlify": lambda: "nfp_" + s(ALNUM, 40),
            "render": lambda: "rnd_" + s(ALNUM, 32),
            "rubygems": lambda: "rubygems_" + s(HEX, 48),
            "cratesio": lambda: "cio" + s(ALNUM, 32),
            "hubspot": lambda: (
                "pat-na1-" + "-".join([s(HEX, 8), s(HEX, 4), s(HEX, 4), s(HEX, 4), s(HEX, 12)])
            ),
            "okta": lambda: "00" + s(B64URL, 40),
            "fcm": lambda: "AAAA" + s(B64URL, 7) + ":APA91b" + s(B64URL, 134),
            "uuidkey": lambda: "-".join(
                [s(HEX, 8), s(HEX, 4), "4" + s(HEX, 3), r.choice("89ab") + s(HEX, 3), s(HEX, 12)]
            ),
            "alnum24": lambda: s(ALNUM, 24),
            # added for the eighth split: Together, Cloudflare (origin CA key, tunnel token),
            # Shopify shared secret, Stripe test keys, Discord webhook tokens, Mailchimp,
            # PagerDuty, Terraform Cloud, Fly.io, Notion (old), Asana, Trello, Dropbox,
            # stream keys (Twitch, YouTube), Steam, Riot, 64 letters and digits (exchange
            # keys), Etherscan, Tailscale, ngrok, Huawei Cloud AK, Bitbucket, Azure DevOps,
            # Langfuse, Modal, Mollie, PayPal, Shippo, EasyPost, Tencent Maps, 56 base64
            # (Kraken), 32 lower case (Tuya), OpenAI admin keys and Google refresh tokens
            "together": lambda: "tgp_v1_" + s(B64URL, 43),
            "cf_origin": lambda: "v1.0-" + s(HEX, 24) + "-" + s(HEX, 146),
            "shpss": lambda: "shpss_" + s(HEX, 32),
            "stripe_test": lambda: "sk_test_" + s(ALNUM, r.choice([24, 99])),
            "discordhook": lambda: s(B64URL, 68),
            "mailchimp": lambda: s(HEX, 32) + "-us" + str(r.randint(2, 21)),
            "pagerduty": lambda: "u+" + s(ALNUM + "_-", 18),
            "tfc": lambda: s(ALNUM, 14) + ".atlasv1." + s(ALNUM, 67),
            "flyio": lambda: "fm2_lJPE" + s(B64, 180),
            "notion_old": lambda: "secret_" + s(ALNUM, 43),
            "asana": lambda: "2/" + d(16) + "/" + d(16) + ":" + s(HEX, 32),
            "trello": lambda: "ATTA" + s(HEX, 64) + s("0123456789ABCDEF", 8),
            "dropbox": lambda: "sl.B" + s(B64URL, 134),
            "twitch_stream": lambda: "live_" + d(9) + "_" + s(ALNUM, 30),
            "ytstream": lambda: "-".join(s(LOWER + DIGITS, 4) for _ in range(5)),
            "steam": lambda: s("0123456789ABCDEF", 32),
            "riot": lambda: (
                "RGAPI-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "alnum64": lambda: s(ALNUM, 64),
            "etherscan": lambda: s(UPPER + DIGITS, 34),
            "tailscale": lambda: "tskey-auth-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "ngrok": lambda: "2" + s(ALNUM, 26) + "_" + s(ALNUM, 21),
            "cftunnel": lambda: "eyJhIjoi" + s(B64, 180),
            "hwak": lambda: s(UPPER + DIGITS, 20),
            "atbb": lambda: "ATBB" + s(ALNUM, 28) + s("0123456789ABCDEF", 8),
            "azdo": lambda: s(LOWER + "234567", 52),
            "langfuse": lambda: (
                "sk-lf-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "modal": lambda: "as-" + s(ALNUM, 22),
            "mollie": lambda: "live_" + s(ALNUM, 30),
            "paypal": lambda: "E" + s(B64URL, 79),
            "shippo": lambda: "shippo_live_" + s(HEX, 40),
            "easypost": lambda: "EZAK" + s(HEX, 54),
            "qqmap": lambda: "-".join(s(UPPER + DIGITS, 5) for _ in range(6)),
            "b64_56": lambda: s(B64, 56),
            "lower32": lambda: s(LOWER + DIGITS, 32),
            "openai_admin": lambda: "sk-admin-" + s(B64URL, 64) + "T3BlbkFJ" + s(B64URL, 64),
            "grefresh": lambda: "1//0" + s(B64URL, 99),
            # added for the ninth split: Databricks, Heroku (v2), Shopify custom app, Slack
            # config refresh, GitLab pipeline trigger and runner registration, Hugging Face
            # org, Pulumi, 1Password service account, Buildkite, CircleCI, Dynatrace,
            # Sourcegraph, Contentful, Prefect, Brevo, Plaid, Meta (Facebook) access tokens,
            # fal.ai, Grafana Cloud, Sentry org tokens, Cloudinary secrets, Azure SAS
            # signatures (URL-encoded), legacy Vault tokens, JFrog (API key, reference
            # token), NuGet, SonarQube, Intercom, X (Twitter) bearer tokens, DingTalk robot
            # signing secrets, Feishu tenant tokens, Cerebras, PlanetScale, MailerSend,
            # Clerk, LangSmith service keys, Stripe restricted test keys, LINE channel
            # tokens, Bitwarden Secrets Manager, Infisical, Convex deploy keys, RunPod,
            # Anyscale, Coze, Dify, FastGPT, ModelScope, WeCom corpsecret, DingTalk
            # AppSecret and JPush master secrets
            "databricks": lambda: "dapi" + s(HEX, 32),
            "heroku": lambda: "HRKU-AA" + s(B64URL, 58),
            "shpca": lambda: "shpca_" + s(HEX, 32),
            "xoxe": lambda: "xoxe.xoxp-1-" + s(UPPER + DIGITS, 164),
            "glptt": lambda: "glptt-" + s(HEX, 40),
            "glrunner": lambda: "GR1348941" + s(B64URL, 20),
            "hforg": lambda: "api_org_" + s(string.ascii_letters, 34),
            "pulumi": lambda: "pul-" + s(HEX, 40),
            "op_sa": lambda: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + s(ALNUM, 280),
            "buildkite": lambda: "bkua_" + s(HEX, 40),
            "circleci": lambda: "CCIPAT_" + s(ALNUM, 22) + "_" + s(HEX, 40),
            "dynatrace": lambda: "dt0c01." + s(UPPER + DIGITS, 24) + "." + s(UPPER + DIGITS, 64),
            "sourcegraph": lambda: "sgp_" + s(HEX, 16) + "_" + s(HEX, 40),
            "contentful": lambda: "CFPAT-" + s(B64URL, 43),
            "prefect": lambda: "pnu_" + s(ALNUM, 36),
            "brevo": lambda: "xkeysib-" + s(HEX, 64) + "-" + s(ALNUM, 16),
            "plaid": lambda: (
                "access-production-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "fb": lambda: "EAA" + r.choice("BGIJ") + s(ALNUM, r.randint(150, 200)),
            "fal": lambda: (
                "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + ":"
                + s(HEX, 32)
            ),
            "grafanacloud": lambda: "glc_eyJvIjoi" + s(ALNUM, 150) + "fQ==",
            "sentry_org": lambda: "sntrys_eyJpYXQiOjE3" + s(ALNUM, 140) + "_" + s(B64URL, 43),
            "cloudinary": lambda: s(B64URL, 27),
            "azsas": lambda: (
                (s(B64, 43) + "=").replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
            ),
            "vault_legacy": lambda: "s." + s(ALNUM, 24),
            "jfrog": lambda: "AKCp8" + s(ALNUM, 68),
            "jfrog_ref": lambda: "cmVmdGtuOjAxOjE3" + s(ALNUM, 48),
            "nuget": lambda: "oy2" + s(LOWER + DIGITS, 43),
            "sonar": lambda: r.choice(["squ_", "sqp_", "sqa_"]) + s(HEX, 40),
            "intercom": lambda: "dG9rOj" + s(B64, 54) + "=",
            "xbearer": lambda: "A" * 21 + s(ALNUM, 25) + "%3D" + s(ALNUM, 50),
            "dingsec": lambda: "SEC" + s(HEX, 64),
            "feishu_tat": lambda: "t-g10" + d(2) + s(ALNUM, 35),
            "cerebras": lambda: "csk-" + s(LOWER + DIGITS, 48),
            "pscale": lambda: "pscale_tkn_" + s(B64URL, 43),
            "mailersend": lambda: "mlsn." + s(HEX, 64),
            "clerk": lambda: "sk_live_" + s(ALNUM, 42),
            "lsv2_sk": lambda: "lsv2_sk_" + s(HEX, 32) + "_" + s(HEX, 10),
            "rk_test": lambda: "rk_test_" + s(ALNUM, 99),
            "line": lambda: s(B64, 171) + "=",
            "bws": lambda: (
                "0."
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + "."
                + s(ALNUM, 30)
                + ":"
                + s(B64, 22)
                + "=="
            ),
            "infisical": lambda: (
                "st."
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + "."
                + s(HEX, 32)
                + "."
                + s(HEX, 32)
            ),
            "convex": lambda: (
                "prod:"
                + r.choice(["happy", "quiet", "brave", "shiny", "tidy"])
                + "-"
                + r.choice(["otter", "heron", "lynx", "marten", "ibis"])
                + "-"
                + d(3)
                + "|eyJ2MiI6Ij"
                + s(ALNUM, 60)
                + "In0="
            ),
            "runpod": lambda: "rpa_" + s(UPPER + DIGITS, 46),
            "anyscale": lambda: "esecret_" + s(LOWER + DIGITS, 32),
            "coze": lambda: "pat_" + s(ALNUM, 64),
            "dify": lambda: "app-" + s(ALNUM, 24),
            "fastgpt": lambda: "fastgpt-" + s(ALNUM, 48),
            "modelscope": lambda: (
                "ms-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "wecom": lambda: s(B64URL, 43),
            "dingapp": lambda: s(B64URL, 64),
            "jpush": lambda: s(HEX, 24),
            # added for the tenth split: PostHog personal keys, LaunchDarkly server SDK keys,
            # Axiom, Apify, Backblaze B2 application keys, DigitalOcean Spaces (key and
            # secret), Scaleway access keys, Porkbun (API key and secret), Yandex Cloud API
            # keys, Deno Deploy and the Cloudflare Global API Key
            "phx": lambda: "phx_" + s(ALNUM, 43),
            "ldsdk": lambda: (
                "sdk-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "axiom": lambda: (
                "xaat-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "apify": lambda: "apify_api_" + s(ALNUM, 36),
            "b2app": lambda: "K005" + s(B64, 27),
            "dospaces": lambda: "DO00" + s(UPPER + DIGITS, 16),
            "dosecret": lambda: s(B64, 43),
            "scw": lambda: "SCW" + s(UPPER + DIGITS, 17),
            "porkbun_pk": lambda: "pk1_" + s(HEX, 64),
            "porkbun_sk": lambda: "sk1_" + s(HEX, 64),
            "yandex": lambda: "AQVN" + s(B64URL, 36),
            "deno": lambda: "ddp_" + s(ALNUM, 36),
            "cfglobal": lambda: s(HEX, 37),
            # added for the eleventh split: Claude Code OAuth tokens, Supabase secret keys,
            # Vercel Blob, DeepL (free), Home Assistant, Turso, the Roblox session cookie,
            # Twitch chat tokens, Canvas LMS, WooCommerce (consumer key and secret), Shopify
            # private apps, Square (application secret, access token), Braintree, Klaviyo
            # private keys, Harvest, Duffel, Pushover, ntfy, IFTTT webhooks, Midtrans,
            # Mercado Pago, Toss Payments, PAY.JP, YooKassa, Cal.com, Browserbase,
            # LlamaCloud, Alchemy, Statsig server secrets and CurseForge (shaped like a
            # bcrypt hash)
            "anthropic_oat": lambda: "sk-ant-oat01-" + s(B64URL, 93) + "AA",
            "sbsecret": lambda: "sb_secret_" + s(B64URL, 31),
            "vercelblob": lambda: "vercel_blob_rw_" + s(ALNUM, 16) + "_" + s(ALNUM, 30),
            "deepl": lambda: (
                "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
                + ":fx"
            ),
            "hass": self._hass,
            "turso": self._turso,
            "roblosec": lambda: (
                "_|WARNING:-DO-NOT-SHARE-THIS.--Sharing-this-will-allow-someone-to-log-in-as-you"
                "-and-to-steal-your-ROBUX-and-items.|_" + s("0123456789ABCDEF", 480)
            ),
            "twitch": lambda: s(LOWER + DIGITS, 30),
            "canvas": lambda: str(r.randint(1000, 25000)) + "~" + s(ALNUM, 64),
            "woo_ck": lambda: "ck_" + s(HEX, 40),
            "woo_cs": lambda: "cs_" + s(HEX, 40),
            "shppa": lambda: "shppa_" + s(HEX, 32),
            "sq0csp": lambda: "sq0csp-" + s(B64URL, 43),
            "sq0atp": lambda: "sq0atp-" + s(B64URL, 22),
            "braintree": lambda: (
                "access_token$production$" + s(LOWER + DIGITS, 16) + "$" + s(HEX, 32)
            ),
            "klaviyo": lambda: "pk_" + s(HEX, 34),
            "harvest": lambda: d(7) + ".pt." + s(B64URL, 86),
            "duffel": lambda: "duffel_live_" + s(B64URL, 43),
            "pushover": lambda: "a" + s(LOWER + DIGITS, 29),
            "ntfy": lambda: "tk_" + s(LOWER + DIGITS, 29),
            "ifttt": lambda: s(B64URL, 22),
            "midtrans": lambda: "Mid-server-" + s(B64URL, 24),
            "mercadopago": lambda: "APP_USR-" + d(16) + "-" + d(6) + "-" + s(HEX, 32) + "-" + d(9),
            "toss": lambda: "live_sk_" + s(ALNUM, 28),
            "payjp": lambda: "sk_live_" + s(HEX, 48),
            "yookassa": lambda: "live_" + s(B64URL, 43),
            "calcom": lambda: "cal_live_" + s(HEX, 32),
            "browserbase": lambda: "bb_live_" + s(B64URL, 27),
            "llx": lambda: "llx-" + s(ALNUM, 48),
            "alchemy": lambda: s(B64URL, 32),
            "statsig": lambda: "secret-" + s(ALNUM, 43),
            "curseforge": lambda: "$2a$10$" + s("./" + ALNUM, 53),
            # added for the twelfth split: Samsara (fleet telematics), The Things Network
            # (LoRaWAN), Adafruit IO, Pterodactyl (application and client keys), Azure AI
            # services (84 characters), Elasticsearch encoded API keys, neptune.ai, Login
            # with Amazon (SP-API refresh token, client secret), eBay user tokens, Up Bank,
            # Telnyx, ClickUp, Typeform, Frame.io, ReadMe, Mandrill, Paddle, Zillow (legacy
            # ZWSID), Salesforce (session id, consumer secret), dbt Cloud, Alpaca, Baseten,
            # Lob, GoCardless, NCBI E-utilities, Vultr and Xendit
            "samsara": lambda: "samsara_api_" + s(ALNUM, 30),
            "ttn": lambda: "NNSXS." + s(B32, 39) + "." + s(B32, 52),
            "aio": lambda: "aio_" + s(ALNUM, 28),
            "ptla": lambda: "ptla_" + s(ALNUM, 43),
            "ptlc": lambda: "ptlc_" + s(ALNUM, 43),
            "azure_ai": lambda: (
                s(ALNUM, 52)
                + "JQQJ99"
                + r.choice(["BA", "BB", "BC", "BD", "BE", "BF"])
                + "AC"
                + s(ALNUM, 5)
                + "XJ3w3AAAAACOG"
                + s(ALNUM, 4)
            ),
            "elastic": lambda: base64.b64encode(
                (s(B64URL, 20) + ":" + s(B64URL, 22)).encode()
            ).decode(),
            "neptune": lambda: base64.b64encode(
                json.dumps(
                    {
                        "api_address": "https://app.neptune.ai",
                        "api_url": "https://app.neptune.ai",
                        "api_key": "-".join(
                            [
                                s(HEX, 8),
                                s(HEX, 4),
                                "4" + s(HEX, 3),
                                r.choice("89ab") + s(HEX, 3),
                                s(HEX, 12),
                            ]
                        ),
                    },
                    separators=(",", ":"),
                ).encode()
            ).decode(),
            "lwa_rt": lambda: "Atzr|IwEBI" + s(B64URL, 330),
            "lwa_cs": lambda: "amzn1.oa2-cs.v1." + s(HEX, 64),
            "ebay": lambda: (
                "v^1.1#i^1#"
                + r.choice(["p^3#r^1#I^3#f^0#", "r^1#p^3#f^0#I^3#", "I^3#p^3#r^0#f^0#"])
                + "t^H4sIAAAAAAAA/+"
                + s(B64, 340)
                + "="
            ),
            "upbank": lambda: "up:yeah:" + s(ALNUM, 128),
            "telnyx": lambda: "KEY" + s("0123456789ABCDEF", 32) + "_" + s(ALNUM, 22),
            "clickup": lambda: "pk_" + str(r.randint(10**6, 10**8)) + "_" + s(UPPER + DIGITS, 32),
            "typeform": lambda: "tfp_" + s(B64URL, 44) + "_" + s(ALNUM, 14),
            "frameio": lambda: "fio-u-" + s(B64URL, 64),
            "readme": lambda: "rdme_" + s(LOWER + DIGITS, 70),
            "mandrill": lambda: "md-" + s(B64URL, 22),
            "paddle": lambda: (
                "pdl_live_apikey_01"
                + s("0123456789abcdefghjkmnpqrstvwxyz", 24)
                + "_"
                + s(ALNUM, 22)
                + "_"
                + s(UPPER + DIGITS, 3)
            ),
            "zillow": lambda: "X1-ZWz1" + s(LOWER + DIGITS, 11) + "_" + s(LOWER + DIGITS, 5),
            "sfdc": lambda: "00D" + s(ALNUM, 12) + "!" + s(ALNUM + "._", 96),
            "sfcs": lambda: s("0123456789ABCDEF", 64),
            "dbtc": lambda: "dbtc_" + s(B64URL, 50),
            "alpaca": lambda: r.choice(["PK", "AK"]) + s(UPPER + DIGITS, 18),
            "baseten": lambda: s(ALNUM, 8) + "." + s(ALNUM, 32),
            "lob": lambda: "live_" + s(HEX, 35),
            "gocardless": lambda: "live_" + s(B64URL, 40),
            "ncbi": lambda: s(HEX, 36),
            "vultr": lambda: s(UPPER + DIGITS, 36),
            "xendit": lambda: "xnd_production_" + s(B64, 54) + "==",
            # added for the thirteenth split: monday.com, Calendly, Zoho (OAuth), Ghost Admin
            # API, Flagsmith server keys, Unleash, Tailscale (API and OAuth client), Plex,
            # Philips Hue application keys, Nexus Mods, Modrinth, Adobe client secrets,
            # ImageKit private keys, Bitget, HTX (Huobi), Volcengine secret keys, WeChat
            # access tokens, Infobip, Mailgun (new format), New Relic license keys, Miro,
            # Webex bot tokens, QuickBooks refresh tokens, Revolut Business, DigitalOcean
            # OAuth, GitLab OAuth application secrets, Sanity, Alibaba Cloud STS (AccessKeyId,
            # SecurityToken) and 80 hex characters (AbuseIPDB)
            "monday": self._monday,
            "calendly": self._calendly,
            "zoho": lambda: "1000." + s(HEX, 32) + "." + s(HEX, 32),
            "ghost": lambda: s(HEX, 24) + ":" + s(HEX, 64),
            "flagsmith": lambda: "ser." + s(ALNUM, 22),
            "unleash": lambda: (
                r.choice(["*", "default", "webshop"])
                + ":"
                + r.choice(["production", "development"])
                + "."
                + s(HEX, 64)
            ),
            "tskey_api": lambda: "tskey-api-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "tskey_client": lambda: "tskey-client-" + s(ALNUM, 17) + "-" + s(ALNUM, 33),
            "plex": lambda: s(B64URL, 20),
            "hue": lambda: s(ALNUM, 12) + "-" + s(ALNUM, 27),
            "nexusmods": lambda: s(B64, 54) + "==--" + s(B64, 16) + "--" + s(B64, 22) + "==",
            "modrinth": lambda: "mrp_" + s(ALNUM, 60),
            "adobe": lambda: "p8e-" + s(B64URL, 32),
            "imagekit": lambda: "private_" + s(B64, 27) + "=",
            "bitget": lambda: "bg_" + s(HEX, 32),
            "htx": lambda: (
                s(HEX, 8)
                + "-"
                + r.choice(["bg2hyw2dfg", "rfhfg2mkl3", "dqnh6tyngf", "ez2xc4vb6n", "mjlpdje3ld"])
                + "-"
                + s(HEX, 8)
                + "-"
                + s(HEX, 5)
            ),
            "volcsk": lambda: base64.b64encode(base64.b64encode(s(HEX, 32).encode())).decode(),
            "wxat": lambda: str(r.randint(70, 99)) + "_" + s(B64URL, 136),
            "infobip": lambda: s(HEX, 32) + "-" + self._uuid4(),
            "mailgun2": lambda: s(HEX, 32) + "-" + s(HEX, 8) + "-" + s(HEX, 8),
            "nrlicense": lambda: s(HEX, 36) + "NRAL",
            "miro": lambda: "eyJtaXJvLm9yaWdpbiI6ImV1MDEifQ_" + s(B64URL, 27),
            "webex": lambda: (
                s(ALNUM, 64) + "_" + r.choice(["PF84", "P0A1", "PE93"]) + "_" + self._uuid4()
            ),
            "qbo_refresh": lambda: (
                "AB11" + str(r.randint(1_780_000_000, 1_799_999_999)) + s(ALNUM, 36)
            ),
            "revolut": lambda: "oa_prod_" + s(B64URL, 43),
            "doo": lambda: "doo_v1_" + s(HEX, 64),
            "gloas": lambda: "gloas-" + s(HEX, 64),
            "sanity": lambda: "sk" + s(ALNUM, 180),
            "alists": lambda: "STS.NT" + s(ALNUM, 26),
            "alists_token": lambda: "CAIS" + s(B64, 420) + "=",
            "hex80": lambda: s(HEX, 80),
            # added for the fourteenth split: the Supabase service_role key
            "supaservice": self._supabase_service,
        }
        return self.unique(table[kind])

    # ------------------------------------------------------------ PEM blocks
    PEM_TYPES: ClassVar[dict[str, tuple[str, str, int, int]]] = {
        "rsa": ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 64, 4),
        "ec": ("EC PRIVATE KEY", "MHcCAQEEI", 64, 3),
        "pkcs8": ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 64, 4),
        "enc": ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 64, 4),
        "openssh": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            70,
            4,
        ),
        # added for the holdout split
        "dsa": ("DSA PRIVATE KEY", "MIIBuwIBAAKBgQ", 64, 4),
        "ec8": ("PRIVATE KEY", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg", 64, 3),
        "opensshenc": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABB",
            70,
            5,
        ),
        # added for the ninth split: a P-384 SEC1 key and a 4096-bit PKCS#1 RSA key
        "ec384": ("EC PRIVATE KEY", "MIGkAgEBBDA", 64, 4),
        "rsa4096": ("RSA PRIVATE KEY", "MIIJKQIBAAKCAgEA", 64, 8),
        # added for the tenth split: an Apple .p8 key (APNs, App Store Connect) and a
        # cosign (Sigstore) encrypted key, whose body is base64 JSON
        "p8": ("PRIVATE KEY", "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg", 64, 4),
        "cosign": (
            "ENCRYPTED SIGSTORE PRIVATE KEY",
            "eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6OCwicCI6MX0sInNhbHQiOiI",
            64,
            9,
        ),
        # added for the eleventh split: a secp256k1 SEC1 key (a crypto wallet's signer)
        "eck1": ("EC PRIVATE KEY", "MHQCAQEEI", 64, 3),
        # added for the thirteenth split: OpenSSH ECDSA and RSA keys, a P-521 SEC1 key and
        # a 3072-bit PKCS#1 RSA key
        "opensshec": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAaAAAABNlY2RzYS1zaGEyLW5pc3RwMjU2AAAACG5pc3RwMjU2AAAAQQ",
            70,
            5,
        ),
        "opensshrsa": (
            "OPENSSH PRIVATE KEY",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcnNhAAAAAwEAAQAAAYEA",
            70,
            12,
        ),
        "ec521": ("EC PRIVATE KEY", "MIHcAgEBBEIB", 64, 4),
        "rsa3072": ("RSA PRIVATE KEY", "MIIG5AIBAAKCAYEA", 64, 6),
    }

    def pem(self, spec: str) -> str:
        base, _, style = spec.partition("_")
        if base == "pgp":

            def one_pgp() -> str:
                body = (
                    ["lQOYBG" + self.s(B64, 58)]
                    + [self.s(B64, 64) for _ in range(2)]
                    + [self.s(B64, 30)]
                )
                return (
                    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
                    + "\n".join(body)
                    + "\n="
                    + self.s(B64, 4)
                    + "\n-----END PGP PRIVATE KEY BLOCK-----"
                )

            return self.unique(one_pgp)
        if base == "ed25519":  # added for the holdout split: one short body line

            def one_ed() -> str:
                body = "MC4CAQAwBQYDK2VwBCIEI" + self.s(B64, 27)
                return "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----"

            return self.unique(one_ed)
        if base == "ppk":  # added for the seventh split: a PuTTY key file (not PEM)

            def one_ppk() -> str:
                pub = "AAAAC3NzaC1lZDI1NTE5AAAAI" + self.s(B64, 43)
                return (
                    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-"
                    + dt.date.fromordinal(
                        dt.date(2025, 1, 1).toordinal() + self.r.randint(0, 500)
                    ).strftime("%Y%m%d")
                    + "\nPublic-Lines: 2\n"
                    + pub[:64]
                    + "\n"
                    + pub[64:]
                    + "\nPrivate-Lines: 1\nAAAAI"
                    + self.s(B64, 43)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 64)
                )

            return self.unique(one_ppk)
        if base == "ppk2":  # added for the eighth split: a PuTTY v2 RSA key file

            def one_ppk2() -> str:
                pub = "AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + self.s(B64, 342)
                priv = "AAABAQ" + self.s(B64, 854)
                pub_lines = [pub[i : i + 64] for i in range(0, len(pub), 64)]
                priv_lines = [priv[i : i + 64] for i in range(0, len(priv), 64)]
                return (
                    "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-"
                    + dt.date.fromordinal(
                        dt.date(2019, 1, 1).toordinal() + self.r.randint(0, 1500)
                    ).strftime("%Y%m%d")
                    + f"\nPublic-Lines: {len(pub_lines)}\n"
                    + "\n".join(pub_lines)
                    + f"\nPrivate-Lines: {len(priv_lines)}\n"
                    + "\n".join(priv_lines)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 40)
                )

            return self.unique(one_ppk2)
        # added for the eighth split: keys that are not PEM blocks
        if base == "age":
            return self.unique(
                lambda: "AGE-SECRET-KEY-1" + self.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
            )
        if base == "wgpriv":
            return self.unique(lambda: self.s(B64, 42) + self.r.choice("AEIMQUYcgkosw048") + "=")
        if base in ("ethpriv", "ethpriv0x"):
            return self.unique(lambda: ("0x" if base == "ethpriv0x" else "") + self.s(HEX, 64))
        if base == "wif":
            b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
            return self.unique(lambda: self.r.choice("KL") + self.s(b58, 51))
        # added for the ninth split: more keys that are not PEM blocks (a Nostr nsec, a BIP32
        # xprv, a Solana key in base58 and as the id.json byte array, a Tezos edsk, the "d"
        # of a JWK), an X25519 PKCS#8 key, a whole PEM block base64-encoded (a Kubernetes
        # Secret's data), and an encrypted PuTTY v3 key file
        b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
        if base == "nsec":
            return self.unique(lambda: "nsec1" + self.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58))
        if base == "xprv":
            return self.unique(lambda: "xprv9" + self.s(b58, 106))
        if base == "solb58":
            return self.unique(lambda: self.s(b58, self.r.choice([87, 88])))
        if base == "soljson":
            return self.unique(
                lambda: "[" + ",".join(str(self.r.randint(0, 255)) for _ in range(64)) + "]"
            )
        if base == "edsk":
            return self.unique(lambda: "edsk" + self.s(b58, 50))
        if base == "jwkd":
            return self.unique(lambda: self.s(B64URL, 43))
        if base == "x25519":
            return self.unique(
                lambda: (
                    "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VuBCIEI"
                    + self.s(B64, 27)
                    + "\n-----END PRIVATE KEY-----"
                )
            )
        if base == "pemb64":

            def one_b64() -> str:
                body = "MIIEpAIBAAKCAQEA" + self.s(B64, 64 * 3 + self.r.randint(12, 40))
                lines = [body[i : i + 64] for i in range(0, len(body), 64)]
                pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines)
                pem += "\n-----END RSA PRIVATE KEY-----\n"
                return base64.b64encode(pem.encode()).decode()

            return self.unique(one_b64)
        if base == "minisign":  # added for the tenth split: a minisign secret key line
            return self.unique(lambda: "RWRTY0Iy" + self.s(B64, 204))
        # added for the eleventh split: keys that are not PEM blocks (a Tor onion-service
        # secret key file base64-encoded, a Sui bech32 key, an Aptos AIP-80 key and an
        # uncompressed Bitcoin WIF key)
        if base == "torhs":
            head = b"== ed25519v1-secret: type0 ==\x00\x00\x00"
            return self.unique(
                lambda: base64.b64encode(
                    head + bytes(self.r.randrange(256) for _ in range(64))
                ).decode()
            )
        if base == "suipriv":
            return self.unique(
                lambda: "suiprivkey1" + self.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 59)
            )
        if base == "aptos":
            return self.unique(lambda: "ed25519-priv-0x" + self.s(HEX, 64))
        if base == "wif5":
            return self.unique(lambda: "5" + self.r.choice("HJK") + self.s(b58, 49))
        # added for the twelfth split: a cardano-cli signing key's cborHex (5820 and 32
        # bytes) and a Tendermint/CometBFT validator key (64 bytes, base64)
        if base == "cardano":
            return self.unique(lambda: "5820" + self.s(HEX, 64))
        if base == "tmval":
            return self.unique(
                lambda: base64.b64encode(bytes(self.r.randrange(256) for _ in range(64))).decode()
            )
        # added for the thirteenth split: an armored Cosmos keyring key, an SSH2 (Tectia)
        # encrypted key, a Stellar secret seed, an XRP family seed, an Avalanche key, a
        # NEAR key, a BIP84 zprv, a Lotus (Filecoin) wallet export and a PKCS#12 file in
        # base64
        if base == "tmarmor":

            def one_tmarmor() -> str:
                return (
                    "-----BEGIN TENDERMINT PRIVATE KEY-----\nkdf: bcrypt\nsalt: "
                    + self.s("0123456789ABCDEF", 32)
                    + "\ntype: secp256k1\n\n"
                    + self.s(B64, 64)
                    + "\n"
                    + self.s(B64, 12)
                    + "\n="
                    + self.s(B64, 4)
                    + "\n-----END TENDERMINT PRIVATE KEY-----"
                )

            return self.unique(one_tmarmor)
        if base == "ssh2":

            def one_ssh2() -> str:
                body = "P2/56wAAA" + self.s(B64, 70 * 5 + self.r.randint(10, 50))
                lines = [body[i : i + 70] for i in range(0, len(body), 70)]
                stamp = dt.date.fromordinal(
                    dt.date(2018, 1, 1).toordinal() + self.r.randint(0, 2500)
                ).strftime("%Y%m%d")
                return (
                    "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n"
                    + f'Comment: "rsa-key-{stamp}"\n'
                    + "\n".join(lines)
                    + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
                )

            return self.unique(one_ssh2)
        if base == "stellar":
            return self.unique(lambda: "S" + self.s(B32, 55))
        if base == "xrpseed":
            return self.unique(lambda: "s" + self.s(RIPPLE, 28))
        if base == "avax":
            return self.unique(lambda: "PrivateKey-" + self.s(b58, 49))
        if base == "nearpriv":
            return self.unique(lambda: "ed25519:" + self.s(b58, 88))
        if base == "zprv":
            return self.unique(lambda: "zprvA" + self.s(b58, 106))
        if base == "filkey":
            return self.unique(
                lambda: (
                    json.dumps(
                        {
                            "Type": "secp256k1",
                            "PrivateKey": base64.b64encode(
                                bytes(self.r.randrange(256) for _ in range(32))
                            ).decode(),
                        },
                        separators=(",", ":"),
                    )
                    .encode()
                    .hex()
                )
            )
        if base == "p12b64":
            return self.unique(
                lambda: (
                    "MIIKaQIBAzCCCi8GCSqGSIb3DQEHAaCCCiAEggocMIIKGDCCBM8GCSqGSIb3DQEHBqCCBMAwggS8"
                    "AgEAMIIEtQYJKoZIhvcNAQcB" + self.s(B64, 640) + "="
                )
            )
        if base == "ppk3enc":

            def one_ppk3() -> str:
                pub = "AAAAC3NzaC1lZDI1NTE5AAAAI" + self.s(B64, 43)
                return (
                    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: aes256-cbc\nComment: "
                    + self.r.choice(["work-laptop", "nas-admin", "jumphost"])
                    + "\nPublic-Lines: 2\n"
                    + pub[:64]
                    + "\n"
                    + pub[64:]
                    + "\nKey-Derivation: Argon2id\nArgon2-Memory: 8192\nArgon2-Passes: 13"
                    + "\nArgon2-Parallelism: 1\nArgon2-Salt: "
                    + self.s(HEX, 32)
                    + "\nPrivate-Lines: 1\n"
                    + self.s(B64, 64)
                    + "\nPrivate-MAC: "
                    + self.s(HEX, 64)
                )

            return self.unique(one_ppk3)
        if base == "rsaenc":  # added for the holdout split: legacy OpenSSL-encrypted RSA

            def one_rsaenc() -> str:
                body = self.s(B64, 64 * 4 + self.r.randint(10, 40))
                lines = [body[i : i + 64] for i in range(0, len(body), 64)]
                return (
                    "-----BEGIN RSA PRIVATE KEY-----\n"
                    "Proc-Type: 4,ENCRYPTED\n"
                    "DEK-Info: AES-256-CBC,"
                    + self.s("0123456789ABCDEF", 32)
                    + "\n\n"
                    + "\n".join(lines)
                    + "\n-----END RSA PRIVATE KEY-----"
                )

            return self.unique(one_rsaenc)
        label, prefix, width, nlines = self.PEM_TYPES[base]

        def one() -> str:
            total = width * (nlines - 1) + self.r.randint(12, 40)
            body = prefix + self.s(B64, total - len(prefix))
            if self.r.random() < 0.5:
                body = body[:-2] + "=="
            lines = [body[i : i + width] for i in range(0, len(body), width)]
            sep = {
                "": "\n",
                "esc": "\\n",
                "flat": " ",
                "indent": "\n  ",
                "indent4": "\n    ",
                "crlf": "\r\n",  # added for the holdout split
                "indent6": "\n      ",
                "quote": "\n> ",  # added for the seventh split: a quoted e-mail reply
                # added for the eighth split: newlines lost, HTML line breaks, tabs
                "join": "",
                "br": "<br>",
                "tab": "\n\t",
                # added for the ninth split: escaped CRLF (a Windows JSON dump), doubly
                # escaped newlines (JSON inside JSON), a reply quoted twice
                "escr": "\\r\\n",
                "dbl": "\\\\n",
                "bq": "\n>> ",
                # added for the tenth split: an empty line after every line (a rich-text paste)
                "nn": "\n\n",
                # added for the eleventh split: commented out in a config file or in code
                "hash": "\n# ",
                "slash": "\n// ",
                # added for the thirteenth split: concatenated string literals in source code,
                # and newlines as XML character references
                "concat": '\\n" +\n  "',
                "ent": "&#10;",
            }[style]
            return (
                f"-----BEGIN {label}-----" + sep + sep.join(lines) + sep + f"-----END {label}-----"
            )

        return self.unique(one)

    # ------------------------------------------------------------ IBAN
    def _bban(self, cc: str) -> str:
        d, r = self.d, self.r
        if cc == "DE":
            return d(8) + d(10)
        if cc == "GB":
            return r.choice(["NWBK", "BARC", "HBUK", "LOYD", "MIDL", "MONZ"]) + d(6) + d(8)
        if cc == "FR":
            bank, branch, acct = d(5), d(5), d(11)
            return bank + branch + acct + _fr_rib_key(bank, branch, acct)
        if cc == "NL":
            return r.choice(["ABNA", "INGB", "RABO", "TRIO", "KNAB", "SNSB"]) + d(10)
        if cc == "ES":
            bank, branch, acct = d(4), d(4), d(10)
            return bank + branch + _es_dc(bank, branch, acct) + acct
        if cc == "IT":
            rest = d(5) + d(5) + d(12)
            return _it_cin(rest) + rest
        if cc == "CH":
            return d(5) + d(12)
        if cc == "BE":
            first = d(10)
            chk = int(first) % 97 or 97
            return first + f"{chk:02d}"
        if cc == "AT":
            return d(16)
        if cc == "IE":
            return r.choice(["AIBK", "BOFI"]) + d(6) + d(8)
        if cc == "GR":
            return d(3) + d(4) + d(16)
        if cc == "SE":
            return d(20)
        if cc == "CZ":
            return d(20)
        if cc == "PT":
            return d(21)
        if cc == "DK":
            return d(14)
        if cc == "PL":
            return d(24)
        # added for the holdout split
        if cc in ("LU", "LT"):
            return d(3 if cc == "LU" else 5) + d(13 if cc == "LU" else 11)
        if cc == "FI":
            return d(14)
        if cc == "NO":
            for _ in range(100):
                first = d(10)
                c = _no_check(first)
                if c is not None:
                    return first + c
            raise AssertionError("NO")
        if cc == "AE":
            return d(3) + d(16)
        if cc == "SA":
            return d(2) + d(18)
        if cc == "TR":
            return d(5) + "0" + d(16)
        if cc == "RO":
            return r.choice(["BTRL", "RNCB", "BRDE", "INGB", "BACX"]) + d(16)
        if cc == "HR":
            return d(17)
        if cc == "SK":
            return d(20)
        # added for the seventh split
        if cc == "MT":
            return r.choice(["MALT", "VALL", "APSB"]) + d(5) + d(18)
        if cc == "CY":
            return d(3) + d(5) + d(16)
        if cc == "EE":
            return d(2) + d(14)
        if cc == "LV":
            return r.choice(["HABA", "UNLA", "RIKO"]) + d(13)
        if cc == "SI":
            return d(5) + d(8) + d(2)
        if cc == "HU":
            return d(3) + d(4) + d(1) + d(15) + d(1)
        if cc == "BG":
            return r.choice(["BNBG", "UNCR", "STSA"]) + d(4) + d(2) + d(8)
        if cc == "IS":
            return d(4) + d(2) + d(6) + d(10)
        if cc == "LI":
            return d(5) + d(12)
        if cc == "UA":
            return d(6) + d(19)
        if cc == "IL":
            return d(3) + d(3) + d(13)
        if cc == "QA":
            return r.choice(["QNBA", "DOHB", "CBQA"]) + d(21)
        if cc == "RS":
            return d(3) + d(13) + d(2)
        if cc == "BR":
            return d(8) + d(5) + d(10) + "C" + "1"
        if cc == "GE":
            return r.choice(["TB", "BG"]) + d(16)
        if cc == "KZ":
            return d(3) + d(13)
        if cc == "PK":
            return r.choice(["HABB", "MEZN", "UNIL"]) + d(16)
        if cc == "MC":
            bank, branch, acct = d(5), d(5), d(11)
            return bank + branch + acct + _fr_rib_key(bank, branch, acct)
        # added for the eighth split
        if cc in ("AD", "LB"):
            return d(24 if cc == "LB" else 20)
        if cc == "SM":
            rest = d(5) + d(5) + d(12)
            return _it_cin(rest) + rest
        if cc in ("JO", "KW", "BH", "AZ", "GI", "VG"):
            banks = {
                "JO": ["ARAB", "CBJO", "HBHO"],
                "KW": ["NBOK", "CBKU", "GULB"],
                "BH": ["NBOB", "BBKU", "AUBB"],
                "AZ": ["NABZ", "IBAZ", "AIIB"],
                "GI": ["NWBK", "GIBK"],
                "VG": ["VPVG"],
            }[cc]
            return r.choice(banks) + d(IBAN_LEN[cc] - 8)
        if cc in ("EG", "TN", "AL", "BA", "ME", "MK", "FO", "XK", "OM"):
            return d(IBAN_LEN[cc] - 4)
        if cc == "MU":
            return r.choice(["MCBL", "SBMM", "BOMM"]) + d(2) + d(2) + d(12) + "000MUR"
        if cc == "MD":
            return r.choice(["AG", "ML", "VI"]) + d(18)
        if cc == "CR":
            return "0" + d(17)
        if cc == "DO":
            return r.choice(["BAGR", "BPDO"]) + d(20)
        if cc == "SC":
            return r.choice(["SSCB", "MCBL"]) + d(2) + d(2) + d(16) + "SCR"
        if cc == "VA":
            return "001" + d(15)
        # added for the ninth split
        if cc in ("IQ", "SV", "GT", "PS", "BY", "NI", "YE"):
            banks = {
                "IQ": ["NBIQ", "RAFB", "AIBI"],
                "SV": ["CENR", "BAMC", "AGRI"],
                "GT": ["TRAJ", "BAGU", "INDL"],
                "PS": ["PALS", "ARAB", "QUDS"],
                "BY": ["NBRB", "AKBB", "ALFA"],
                "NI": ["BAPR", "BCCE", "LAFI"],
                "YE": ["CBYE", "IBYE"],
            }[cc]
            return r.choice(banks) + d(IBAN_LEN[cc] - 8)
        if cc == "RU":
            return "04" + d(7) + d(5) + d(15)
        if cc in ("TL", "LY", "ST", "MN"):
            return d(IBAN_LEN[cc] - 4)
        # added for the twelfth split
        if cc in ("MR", "SD", "SO", "DJ", "BI"):
            return d(IBAN_LEN[cc] - 4)
        if cc == "HN":
            return r.choice(["BACN", "CASO", "FICO", "ATLA"]) + d(20)
        # added for the thirteenth split
        if cc == "FK":
            return r.choice(["SC", "FI"]) + d(12)
        if cc == "GL":
            return d(14)
        if cc == "LC":
            return r.choice(["HEMM", "BOSL", "RBNK"]) + d(24)
        raise ValueError(cc)

    def iban(self, cc: str, fmt: str, bad: bool = False) -> str:
        def one() -> str | None:
            bban = self._bban(cc)
            chk = iban_check_digits(cc, bban)
            if bad:
                chk = f"{(int(chk) - 2 + self.r.randint(1, 96)) % 97 + 2:02d}"
            s = cc + chk + bban
            assert len(s) == IBAN_LEN[cc], (cc, len(s))
            assert iban_ok(s) != bad
            if not bad and not _stdnum_iban_ok(s):
                # python-stdnum also checks some national parts (a Belgian bank code
                # must exist): draw again. No dev/test/holdout value needed a redraw,
                # so this (added for the final split) leaves those files unchanged.
                return None
            if fmt in ("s", "l"):
                s = " ".join(s[i : i + 4] for i in range(0, len(s), 4))
            if fmt == "l":  # added for the ninth split: typed in lower case
                s = s.lower()
            return s

        return self.unique(one)

    # ------------------------------------------------------------ non-sensitive look-alikes
    def _snowflake(self) -> str:
        """An 18-digit Discord id that passes neither Luhn nor the resident-ID check
        (added for the eleventh split)."""
        while True:
            v = str(self.r.randint(10**17, 14 * 10**17))
            if not luhn_ok(v) and not ric_ok(v):
                return v

    def _alipay_appid(self) -> str:
        """A 16-digit Alipay app id that is not Luhn-valid (added for the thirteenth split)."""
        while True:
            v = "2021" + self.d(12)
            if not luhn_ok(v):
                return v

    def _tborder(self) -> str:
        """A 19-digit Taobao order number that is not Luhn-valid (added for the fourteenth
        split)."""
        while True:
            v = self.r.choice("1234") + self.d(18)
            if not luhn_ok(v):
                return v

    def _sfwaybill(self) -> str:
        """An SF Express waybill number, SF and 13 digits that are not Luhn-valid (added
        for the fourteenth split)."""
        while True:
            v = "SF" + self.r.choice("13") + self.d(12)
            if not luhn_ok(v[2:]):
                return v

    def neg(self, kind: str) -> str:
        s = self.s
        if kind.startswith("b64="):
            return base64.b64encode(kind[4:].encode()).decode()
        table: dict[str, Callable[[], str]] = {
            "sha7": lambda: s(HEX, 7),
            "sha1": lambda: s(HEX, 40),
            "sha256": lambda: s(HEX, 64),
            "digest": lambda: "sha256:" + s(HEX, 64),
            "hex32": lambda: s(HEX, 32),
            "hex16": lambda: s(HEX, 16),
            "trace": lambda: s(HEX, 32),
            "uuid": lambda: "-".join(
                [
                    s(HEX, 8),
                    s(HEX, 4),
                    "4" + s(HEX, 3),
                    self.r.choice("89ab") + s(HEX, 3),
                    s(HEX, 12),
                ]
            ),
            "idbad": self.ric_bad_check,
            "iddate": self.ric_bad_date,
            "imei": self.imei,
            "pub": lambda: (
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
                + s(B64, 20)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 58)
                + "IDAQAB\n-----END PUBLIC KEY-----"
            ),
            "cert": lambda: (
                "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE"
                + s(B64, 44)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 40)
                + "\n-----END CERTIFICATE-----"
            ),
            "csr": lambda: (
                "-----BEGIN CERTIFICATE REQUEST-----\nMIICvDCCAaQCAQAwdzELMAkGA1UEBhMC"
                + s(B64, 32)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 36)
                + "\n-----END CERTIFICATE REQUEST-----"
            ),
            # added for the holdout split
            "sri": lambda: "sha384-" + s(B64, 64),
            "npmint": lambda: "sha512-" + s(B64, 86) + "==",
            "sshfp": lambda: "SHA256:" + s(B64, 43),
            "sshrsa": lambda: (
                "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + s(B64, 200) + " deploy@" + s(LOWER, 6)
            ),
            "pgppub": lambda: (
                "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBG"
                + s(B64, 58)
                + "\n"
                + s(B64, 64)
                + "\n"
                + s(B64, 40)
                + "\n="
                + s(B64, 4)
                + "\n-----END PGP PUBLIC KEY BLOCK-----"
            ),
            "agepub": lambda: "age1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "eth": lambda: "0x" + s(HEX, 40),
            "oid": lambda: s(HEX, 24),
            "datauri": lambda: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + s(B64, 96) + "=",
            "datajpg": lambda: "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD" + s(B64, 120),
            "ulid": lambda: "01J" + s("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23),
            "gpgfpr": lambda: " ".join(s("0123456789ABCDEF", 4) for _ in range(10)),
            "nonce": lambda: s(B64, 22) + "==",
            "cid": lambda: "bafybei" + s("abcdefghijklmnopqrstuvwxyz234567", 52),
            "jwkn": lambda: s(B64URL, 342),
            "sha512": lambda: s(HEX, 128),
            "sshpub": lambda: (
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + s(B64, 43) + " ci@build-" + self.d(2)
            ),
            # added for the seventh split
            "bcrypt": lambda: "$2b$12$" + s("./" + ALNUM, 53),
            "argon2": lambda: "$argon2id$v=19$m=65536,t=3,p=4$" + s(B64, 22) + "$" + s(B64, 43),
            "ksuid": lambda: s(ALNUM, 27),
            "ethtx": lambda: "0x" + s(HEX, 64),
            "wgpub": lambda: s(B64, 42) + self.r.choice("AEIMQUYcgkosw048") + "=",
            "ecdsapub": lambda: (
                "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB"
                + s(B64, 88)
                + "= "
                + s(LOWER, 5)
                + "@laptop"
            ),
            "nanoid": lambda: s(B64URL, 21),
            # added for the eighth split
            "pklive": lambda: "pk_live_" + s(ALNUM, 24),
            "lfpub": lambda: (
                "pk-lf-"
                + "-".join(
                    [
                        s(HEX, 8),
                        s(HEX, 4),
                        "4" + s(HEX, 3),
                        self.r.choice("89ab") + s(HEX, 3),
                        s(HEX, 12),
                    ]
                )
            ),
            "wxappid": lambda: "wx" + s(HEX, 16),
            "twsid": lambda: "AC" + s(HEX, 32),
            "btcaddr": lambda: "bc1q" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "xpub": lambda: (
                "xpub6" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 106)
            ),
            "npub": lambda: "npub1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "vin": lambda: s("ABCDEFGHJKLMNPRSTUVWXYZ0123456789", 17),
            "iccid": lambda: "8986" + self.d(16),
            "md5crypt": lambda: "$1$" + s(ALNUM, 8) + "$" + s("./" + ALNUM, 22),
            "sha512crypt": lambda: "$6$" + s(ALNUM, 16) + "$" + s("./" + ALNUM, 86),
            "pbkdf2": lambda: "pbkdf2_sha256$870000$" + s(ALNUM, 22) + "$" + s(B64, 43) + "=",
            "recaptcha": lambda: "6L" + s(B64URL, 38),
            "mapboxpk": lambda: "pk.eyJ1Ijoi" + s(B64URL, 60) + "." + s(B64URL, 22),
            # added for the ninth split
            "sshmd5": lambda: ":".join(s(HEX, 2) for _ in range(16)),
            "uuid7": lambda: (
                "019"
                + s(HEX, 5)
                + "-"
                + s(HEX, 4)
                + "-7"
                + s(HEX, 3)
                + "-"
                + self.r.choice("89ab")
                + s(HEX, 3)
                + "-"
                + s(HEX, 12)
            ),
            "cfray": lambda: s(HEX, 16) + "-" + self.r.choice(["SJC", "FRA", "HKG", "NRT", "LHR"]),
            "stripepi": lambda: "pi_3" + s(ALNUM, 23),
            "stripecus": lambda: "cus_" + s(ALNUM, 14),
            "chatcmpl": lambda: "chatcmpl-" + s(ALNUM, 29),
            "oaifile": lambda: "file-" + s(ALNUM, 22),
            "anthmsg": lambda: "msg_01" + s(ALNUM, 22),
            "anthreq": lambda: "req_011C" + s(ALNUM, 20),
            "gosum": lambda: "h1:" + s(B64, 43) + "=",
            "nixhash": lambda: s("0123456789abcdfghijklmnpqrsvwxyz", 32),
            "yescrypt": lambda: "$y$j9T$" + s("./" + ALNUM, 22) + "$" + s("./" + ALNUM, 43),
            "ssha": lambda: "{SSHA}" + s(B64, 38) + "==",
            "mysqlhash": lambda: "*" + s("0123456789ABCDEF", 40),
            "sha384": lambda: s(HEX, 96),
            "soladdr": lambda: s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 44),
            "soltx": lambda: s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 88),
            "ethsig": lambda: "0x" + s(HEX, 130),
            "keygrip": lambda: s("0123456789ABCDEF", 40),
            "datawebp": lambda: "data:image/webp;base64,UklGR" + s(B64, 100),
            "supaanon": self._supabase_anon,
            "b64u43": lambda: s(B64URL, 43),
            # added for the tenth split: public keys and ids (PostHog project keys, Stripe
            # publishable test keys, Razorpay key ids, Google OAuth client ids, Turnstile site
            # keys, VAPID public keys, Firebase app ids), a Tron address, short container ids,
            # Stripe charge and event ids, and Apache and SHA-256 crypt hashes
            "phc": lambda: "phc_" + s(ALNUM, 43),
            "pktest": lambda: "pk_test_" + s(ALNUM, 24),
            "rzpkey": lambda: "rzp_live_" + s(ALNUM, 14),
            "gclientid": lambda: (
                self.d(12) + "-" + s(LOWER + DIGITS, 32) + ".apps.googleusercontent.com"
            ),
            "turnstile": lambda: "0x4AAAAAAA" + s(B64URL, 12),
            "vapidpub": lambda: "B" + s(B64URL, 86),
            "fbappid": lambda: "1:" + self.d(12) + ":web:" + s(HEX, 22),
            "tronaddr": lambda: (
                "T" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33)
            ),
            "hex12": lambda: s(HEX, 12),
            "stripech": lambda: "ch_3" + s(ALNUM, 23),
            "stripeevt": lambda: "evt_1" + s(ALNUM, 23),
            "apr1": lambda: "$apr1$" + s("./" + ALNUM, 8) + "$" + s("./" + ALNUM, 22),
            "sha256crypt": lambda: "$5$" + s("./" + ALNUM, 16) + "$" + s("./" + ALNUM, 43),
            # added for the eleventh split: public keys and ids (Supabase publishable keys,
            # Statsig client keys, an OpenAI organization id), an Android signing-certificate
            # fingerprint, a CloudFront request id, a Stripe subscription id, a Twilio
            # message SID, a Discord snowflake, an onion address, a legacy Bitcoin address,
            # and base64 of a PDF and of a zip (xlsx) attachment
            "sbpub": lambda: "sb_publishable_" + s(B64URL, 31),
            "statsigclient": lambda: "client-" + s(ALNUM, 43),
            "oaiorg": lambda: "org-" + s(ALNUM, 24),
            "sha1fp": lambda: ":".join(s("0123456789ABCDEF", 2) for _ in range(20)),
            "amzcfid": lambda: s(B64URL, 54) + "==",
            "stripesub": lambda: "sub_1" + s(ALNUM, 23),
            "twmsg": lambda: "SM" + s(HEX, 32),
            "snowflake": self._snowflake,
            "onion": lambda: s("abcdefghijklmnopqrstuvwxyz234567", 55) + "d.onion",
            "btclegacy": lambda: (
                "1" + s("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 33)
            ),
            "pdfb64": lambda: "JVBERi0xLjcKJeLjz9MK" + s(B64, 120),
            "zipb64": lambda: "UEsDBBQABgAIAAAAIQ" + s(B64, 120),
            # added for the twelfth split: a cardano-cli verification key's cborHex (public),
            # a LoRaWAN DevEUI, a Salesforce record id, an Amazon ASIN, a W&B run id, Cosmos
            # and Taproot addresses, and a validator's public key (base64 of 32 bytes)
            "cardanovkey": lambda: "5820" + s(HEX, 64),
            "deveui": lambda: s("0123456789ABCDEF", 16),
            "sfrecid": lambda: self.r.choice(["001", "003", "006"]) + "5g0000" + s(ALNUM, 9),
            "asin": lambda: "B0" + s(UPPER + DIGITS, 8),
            "wandbrun": lambda: s(LOWER + DIGITS, 8),
            "cosmosaddr": lambda: "cosmos1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "taproot": lambda: "bc1p" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
            "tmpub": lambda: base64.b64encode(
                bytes(self.r.randrange(256) for _ in range(32))
            ).decode(),
            # added for the thirteenth split: public keys and addresses (NEAR, Stellar, XRP,
            # Avalanche, a BIP84 zpub, a Tailscale node key), app and user ids (Feishu app id,
            # DingTalk AppKey, WeChat openid, an Alipay app id, an Oracle Cloud OCID, a
            # Flagsmith client-side key, a Vercel deployment id), a Lightning invoice and an
            # IPFS v0 CID
            "nearpub": lambda: "ed25519:" + s(B58, 44),
            "stellarpub": lambda: "G" + s(B32, 55),
            "xrpaddr": lambda: "r" + s(RIPPLE, 33),
            "avaxaddr": lambda: "X-avax1" + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
            "zpub": lambda: "zpub6" + s(B58, 106),
            "tsnodekey": lambda: "nodekey:" + s(HEX, 64),
            "feishuappid": lambda: "cli_" + s(HEX, 16),
            "dingappkey": lambda: "ding" + s(LOWER + DIGITS, 16),
            "wxopenid": lambda: "o" + s(B64URL, 27),
            "alipayappid": self._alipay_appid,
            "ocid": lambda: "ocid1.instance.oc1.ap-tokyo-1." + s(LOWER + DIGITS, 60),
            "flagsmithclient": lambda: s(ALNUM, 22),
            "verceldpl": lambda: "dpl_" + s(ALNUM, 28),
            "lninvoice": lambda: (
                "lnbc"
                + self.r.choice(["10u", "250u", "1m", "50u"])
                + "1p"
                + s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 180)
            ),
            "cidv0": lambda: "Qm" + s(B58, 44),
            # added for the fourteenth split: a Taobao order number and an SF Express waybill
            "tborder": self._tborder,
            "sfwaybill": self._sfwaybill,
        }
        if kind.startswith("cardfail"):
            _, brand, fmt = kind.split(":")
            return self.card_fail(brand, fmt)
        if kind.startswith("ibanbad"):
            _, cc, fmt = kind.split(":")
            return self.iban(cc, fmt, bad=True)
        if kind.startswith("pemfake"):  # added for the holdout split: a PEM frame, no key
            _, label, body = kind.split(":", 2)
            return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        if kind in ("idbad", "iddate", "imei"):
            return table[kind]()  # these draw unique values themselves
        return self.unique(table[kind])


# ====================================================================== build

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The lines files are imported as ``benchmarks.masking.data.lines_*`` (the module names
# mypy gives them), so the repository root goes on the path when run as a script.
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.dont_write_bytecode = True  # importing lines_*.py leaves no __pycache__ beside the data

# A hand-written line: its text, or (text, note).
RawLine = str | tuple[str, str]


class Span(TypedDict):
    category: str
    value: str


class Record(TypedDict):
    text: str
    lang: str
    spans: list[Span]
    note: str
    _skeleton: str  # the line with each token replaced by <kind>; not written out


class Stats(TypedDict):
    lines: int
    negatives: int
    neg_share: float
    lines_per_cat: dict[str, int]
    spans_per_cat: dict[str, int]
    lang: dict[str, int]
    lang_per_cat: dict[str, dict[str, int]]


class StdChecks(NamedTuple):
    """python-stdnum's validators, the second opinion on the check digits."""

    luhn: Callable[[str], bool]
    ric: Callable[[str], bool]
    iban: Callable[[str], bool]


CATEGORIES = [
    "card_number",
    "national_id",
    "passport",
    "phone",
    "email",
    "api_key",
    "private_key",
    "password",
    "iban",
]
TOKEN_CAT = {
    "card": "card_number",
    "id": "national_id",
    "pp": "passport",
    "ph": "phone",
    "email": "email",
    "key": "api_key",
    "pem": "private_key",
    "pw": "password",
    "iban": "iban",
}
TOKEN = re.compile(r"⟦([^⟧]*)⟧")
SEEDS = {
    "dev": 20261204,
    "test": 7351902,
    "holdout": 91427063,
    "final": 60318245,
    "fresh": 38162957,
    "sixth": 52704619,
    "seventh": 83190457,
    "eighth": 29584731,
    "ninth": 71846293,
    "tenth": 16093847,
    "eleventh": 48271593,
    "twelfth": 65038172,
    "thirteenth": 30571948,
    "fourteenth": 57209316,
}
MIN_PER_CAT = {
    "dev": 12,
    "test": 25,
    "holdout": 25,
    "final": 25,
    "fresh": 25,
    "sixth": 25,
    "seventh": 25,
    "eighth": 25,
    "ninth": 25,
    "tenth": 25,
    "eleventh": 25,
    "twelfth": 25,
    "thirteenth": 25,
    "fourteenth": 25,
}
MIN_LINES = {
    "dev": 120,
    "test": 320,
    "holdout": 320,
    "final": 320,
    "fresh": 320,
    "sixth": 320,
    "seventh": 320,
    "eighth": 320,
    "ninth": 320,
    "tenth": 320,
    "eleventh": 320,
    "twelfth": 320,
    "thirteenth": 320,
    "fourteenth": 320,
}
# The final, fresh, sixth, seventh, eighth, ninth, tenth, eleventh, twelfth, thirteenth and
# fourteenth splits must also have English, Chinese and mixed lines in every category.
ALL_LANGS = {
    "final",
    "fresh",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
}
# No final sentence may be this similar (difflib ratio of the skeletons) to an older one.
FINAL_MAX_SIMILARITY = 0.8
# Nor any fresh sentence to one of dev, test, holdout or final.
FRESH_MAX_SIMILARITY = 0.8
# Nor any sixth sentence to one of dev, test, holdout, final or fresh.
SIXTH_MAX_SIMILARITY = 0.8
# Nor any seventh sentence to one of dev, test, holdout, final, fresh or sixth.
SEVENTH_MAX_SIMILARITY = 0.8
# Nor any eighth sentence to one of dev, test, holdout, final, fresh, sixth or seventh.
EIGHTH_MAX_SIMILARITY = 0.8
# Nor any ninth sentence to one of dev, test, holdout, final, fresh, sixth, seventh or eighth.
NINTH_MAX_SIMILARITY = 0.8
# Nor any tenth sentence to one of the nine older splits.
TENTH_MAX_SIMILARITY = 0.8
# Nor any eleventh sentence to one of the ten older splits.
ELEVENTH_MAX_SIMILARITY = 0.8
# Nor any twelfth sentence to one of the eleven older splits.
TWELFTH_MAX_SIMILARITY = 0.8
# Nor any thirteenth sentence to one of the twelve older splits.
THIRTEENTH_MAX_SIMILARITY = 0.8
# Nor any fourteenth sentence to one of the thirteen older splits.
FOURTEENTH_MAX_SIMILARITY = 0.8
SHUFFLE_SEED = 4242


def fill(body: str, g: Gen) -> tuple[str, str | None]:
    kind, sep, rest = body.partition("=")
    if sep and kind in ("email", "pw"):
        return rest, TOKEN_CAT[kind]
    kind, _, rest = body.partition(" ")
    args = rest.split()
    if kind == "card":
        return g.card(args[0], args[1]), "card_number"
    if kind == "id":
        if args and args[0] == "old15":  # added for the ninth split
            return g.ric15(), "national_id"
        return g.ric(args[0] if args else ""), "national_id"
    if kind == "pp":
        return g.passport(args[0]), "passport"
    if kind == "ph":
        return g.phone(args[0], ":".join(args[1:])), "phone"
    if kind == "key":
        return g.key(args[0]), "api_key"
    if kind == "pem":
        return g.pem(args[0]), "private_key"
    if kind == "iban":
        return g.iban(args[0], args[1]), "iban"
    if kind == "neg":
        return g.neg(rest), None
    raise ValueError(f"unknown token ⟦{body}⟧")


CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")  # 2-letter units (cm, kg, GB, ID) do not make a line mixed


def detect_lang(text: str, spans: list[Span]) -> str:
    rest = text
    for s in spans:
        rest = rest.replace(s["value"], " ")
    rest = re.sub(r"https?://\S+|[\w./~-]*/[\w./~-]+", " ", rest)  # URLs and paths
    has_cjk = bool(CJK.search(rest))
    n_latin = len(LATIN_WORD.findall(rest))
    if not has_cjk and not re.search(r"[A-Za-z]", rest):
        # a bare value: a resident ID belongs to the Chinese side, anything else to English
        return "zh" if any(s["category"] == "national_id" for s in spans) else "en"
    if has_cjk and n_latin >= 2:
        return "mixed"
    return "zh" if has_cjk else "en"


def render(raw: RawLine, g: Gen) -> Record:
    text_src, note = raw if isinstance(raw, tuple) else (raw, "")
    out: list[str] = []
    spans: list[Span] = []
    pos = 0
    for m in TOKEN.finditer(text_src):
        out.append(text_src[pos : m.start()])
        value, cat = fill(m.group(1), g)
        out.append(value)
        if cat:
            spans.append({"category": cat, "value": value})
        pos = m.end()
    out.append(text_src[pos:])
    text = "".join(out)
    return {
        "text": text,
        "lang": detect_lang(text, spans),
        "spans": spans,
        "note": note,
        "_skeleton": TOKEN.sub(lambda m: "<" + m.group(1).split()[0].split("=")[0] + ">", text_src),
    }


# ---------------------------------------------------------------- checks

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}")
PASSPORT_RE = re.compile(
    r"E\d{8}|E[A-HJ-NP-Z]\d{7}|G\d{8}|\d{9}|[A-Z]\d{7,8}|[A-Z]{2}\d{6,7}|[A-Z]{3}\d{6}"
    r"|\d{2}[A-Z]{2}\d{5}|[CFGHJK][CFGHJKLMNPRTVWXYZ0-9]{8}|[CNP]\d{6}"
    r"|[EK]\d{7}[A-Z]|[A-NP-Z]{2}[A-NP-Z0-9]{6}\d"  # SG, NL (holdout split)
    r"|\d{8}|P\d{7}[A-Z]"  # SE, CZ, IL, PH (seventh split)
)
PEM_RE = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.+-----END \1-----", re.S)
# a PuTTY key file (seventh split; the eighth adds version 2, with a 40-hex MAC)
PPK_RE = re.compile(
    r"PuTTY-User-Key-File-\d: \S+\n.+\nPrivate-MAC: (?:[0-9a-f]{64}|[0-9a-f]{40})", re.S
)
# keys that are not PEM blocks (eighth split): age, WireGuard, Ethereum (hex), Bitcoin (WIF)
RAW_KEY_RE = re.compile(
    r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"
    r"|[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]="
    r"|(?:0x)?[0-9a-f]{64}"
    r"|[KL][1-9A-HJ-NP-Za-km-z]{51}"
)
# more keys that are not PEM blocks (ninth split): Nostr nsec, BIP32 xprv, Solana (base58
# or the id.json byte array), Tezos edsk, a JWK "d", a PEM block base64-encoded
NINTH_RAW_KEY_RE = re.compile(
    r"nsec1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}"
    r"|xprv9[1-9A-HJ-NP-Za-km-z]{106}"
    r"|[1-9A-HJ-NP-Za-km-z]{87,88}"
    r"|\[\d{1,3}(?:,\d{1,3}){63}\]"
    r"|edsk[1-9A-HJ-NP-Za-km-z]{50}"
    r"|[A-Za-z0-9_-]{43}"
    r"|LS0tLS1CRUdJTi[A-Za-z0-9+/]+=*"
)
# a minisign secret key line (tenth split)
TENTH_RAW_KEY_RE = re.compile(r"RWRTY0Iy[A-Za-z0-9+/]{204}")
# more keys that are not PEM blocks (eleventh split): a Tor onion-service key file in
# base64, Sui, Aptos and an uncompressed Bitcoin WIF key
ELEVENTH_RAW_KEY_RE = re.compile(
    r"PT0gZWQyNTUxOXYxLXNlY3JldDogdHlwZTAgPT0AAA[A-D][A-Za-z0-9+/]{85}"
    r"|suiprivkey1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{59}"
    r"|ed25519-priv-0x[0-9a-f]{64}"
    r"|5[HJK][1-9A-HJ-NP-Za-km-z]{49}"
)
# more keys that are not PEM blocks (twelfth split): a cardano-cli signing key's cborHex
# and a Tendermint/CometBFT validator key (64 bytes in base64)
TWELFTH_RAW_KEY_RE = re.compile(r"5820[0-9a-f]{64}|[A-Za-z0-9+/]{86}==")
# more keys (thirteenth split): an SSH2 (Tectia) encrypted key, a Stellar secret seed, an
# XRP family seed, an Avalanche key, a NEAR key, a BIP84 zprv, a Lotus wallet export in
# hex and a PKCS#12 file in base64
THIRTEENTH_RAW_KEY_RE = re.compile(
    r"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n.+\n---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    r"|S[A-Z2-7]{55}"
    r"|s[rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz]{28}"
    r"|PrivateKey-[1-9A-HJ-NP-Za-km-z]{49}"
    r"|ed25519:[1-9A-HJ-NP-Za-km-z]{87,88}"
    r"|zprvA[1-9A-HJ-NP-Za-km-z]{106}"
    r"|7b2254797065223a22736563703235366b31222c22507269766174654b6579223a22[0-9a-f]+"
    r"|MII[A-Za-z0-9+/]{3}IBAzCC[A-Za-z0-9+/]+={0,2}",
    re.S,
)
DIGIT_RUN = re.compile(r"\d(?:[ -]?\d)*")
IBAN_LIKE = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}")
CN_MOBILE_LIKE = re.compile(r"(?<!\d)1[3-9]\d(?:[ -]?\d){8}(?!\d)")
PLACEHOLDER = "\u0000"


def _stdnum() -> StdChecks | None:
    try:
        from stdnum import iban as s_iban
        from stdnum import luhn as s_luhn
        from stdnum.cn import ric as s_ric

        return StdChecks(s_luhn.is_valid, s_ric.is_valid, s_iban.is_valid)
    except ImportError:  # pragma: no cover
        print("python-stdnum not installed: check digits verified by this script only")
        return None


def check_value(cat: str, v: str, g: Gen, std: StdChecks | None) -> None:
    assert v == v.strip() and v, (cat, v)
    if cat == "card_number":
        digits = re.sub(r"[ \u00a0-]", "", v)  # no-break spaces: seventh split
        digits = digits.translate(HALFWIDTH)  # full-width digits: fourteenth split
        assert digits.isdigit() and 13 <= len(digits) <= 19 and luhn_ok(digits), v
        # 65, 60, Maestro and Troy prefixes: eighth split
        # Elo, Hipercard, Dankort, Verve and UATP prefixes: ninth split
        # NAPAS, mada, UzCard and Humo prefixes: eleventh split
        # Meeza, Bancontact, Belkart and Cabal prefixes: twelfth split
        # GPN, Prostir, Shetab and Naranja prefixes: thirteenth split
        assert re.match(
            r"4|5[1-5]|2[2-7]|3[47]|62|35|6011|36|65|60|50[123]|6759|9792"
            r"|636368|504175|606282|5019|506|1"
            r"|9704|5888|9682|8600|9860"
            r"|5078|6703|9112|5896"
            r"|9360|9804|6104|5892|5895",
            digits,
        ), v
        if std:
            assert std.luhn(digits), v
    elif cat == "national_id":
        v = v.translate(HALFWIDTH)  # full-width digits: fourteenth split
        if len(v) == 15:  # a first-generation ID (ninth split): stdnum knows only 18 digits
            assert ric15_ok(v), v
            return
        assert ric_ok(v), v
        if std:
            assert std.ric(v.replace(" ", "").replace("-", "").upper()), v
    elif cat == "iban":
        assert iban_ok(v) and len(v.replace(" ", "")) == IBAN_LEN[v[:2].upper()], v
        if std:
            assert std.iban(v), v
    elif cat == "phone":
        import phonenumbers

        region = g.phone_region.get(v)
        p = phonenumbers.parse(v, region)
        assert phonenumbers.is_valid_number(p), v
    elif cat == "email":
        assert EMAIL_RE.fullmatch(v), v
    elif cat == "passport":
        assert PASSPORT_RE.fullmatch(v), v
    elif cat == "private_key":
        assert (
            PEM_RE.fullmatch(v)
            or PPK_RE.fullmatch(v)
            or RAW_KEY_RE.fullmatch(v)
            or NINTH_RAW_KEY_RE.fullmatch(v)
            or TENTH_RAW_KEY_RE.fullmatch(v)
            or ELEVENTH_RAW_KEY_RE.fullmatch(v)
            or TWELFTH_RAW_KEY_RE.fullmatch(v)
            or THIRTEENTH_RAW_KEY_RE.fullmatch(v)
        ), v
    elif cat == "api_key":
        assert len(v) >= 20 and not re.search(r"\s", v), v
    elif cat == "password":
        assert len(v) >= 4, v


def check_rest(rec: Record, std: StdChecks | None) -> list[str]:
    """Nothing outside the labelled spans may pass a card/ID/IBAN/e-mail check."""
    rest = rec["text"]
    for s in rec["spans"]:
        rest = rest.replace(s["value"], PLACEHOLDER)
    problems: list[str] = []
    for m in DIGIT_RUN.finditer(rest):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits) and "Luhn-valid" not in rec["note"]:
            problems.append(f"unlabelled Luhn-valid number {m.group()!r}")
    for m in re.finditer(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])", rest):
        if ric_ok(m.group()) or (std and std.ric(m.group().upper())):
            problems.append(f"unlabelled valid resident ID {m.group()!r}")
    for m in IBAN_LIKE.finditer(rest):
        cand = m.group().replace(" ", "")
        for end in range(len(cand), 14, -1):
            if iban_ok(cand[:end]):
                problems.append(f"unlabelled valid IBAN {m.group()!r}")
                break
    for m in EMAIL_RE.finditer(rest):
        problems.append(f"unlabelled e-mail {m.group()!r}")
    return problems


def build(
    split: str, raw_lines: list[RawLine], used: set[str], std: StdChecks | None
) -> tuple[list[Record], Gen]:
    g = Gen(SEEDS[split], used)
    recs = [render(raw, g) for raw in raw_lines]
    errors: list[str] = []
    for rec in recs:
        for s in rec["spans"]:
            if rec["text"].count(s["value"]) != 1:
                errors.append(
                    f"{split}: value not a unique substring: {s['value']!r} in {rec['text']!r}"
                )
            try:
                check_value(s["category"], s["value"], g, std)
            except AssertionError as e:
                errors.append(f"{split}: invalid {s['category']} {e}")
        for p in check_rest(rec, std):
            errors.append(f"{split}: {p} in {rec['text']!r}")
        if not rec["spans"]:
            for m in CN_MOBILE_LIKE.finditer(rec["text"]):
                if "mobile" not in rec["note"]:
                    errors.append(f"{split}: negative has mobile-like {m.group()!r} without a note")
    texts = [r["text"] for r in recs]
    dup = [t for t, n in collections.Counter(texts).items() if n > 1]
    errors += [f"{split}: duplicate line {t!r}" for t in dup]
    if errors:
        raise SystemExit("\n".join(errors))
    return recs, g


def stats(split: str, recs: list[Record]) -> Stats:
    per_cat_lines: collections.Counter[str] = collections.Counter()
    per_cat_spans: collections.Counter[str] = collections.Counter()
    per_cat_lang: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    for r in recs:
        cats = {s["category"] for s in r["spans"]}
        for c in cats:
            per_cat_lines[c] += 1
            per_cat_lang[c][r["lang"]] += 1
        for s in r["spans"]:
            per_cat_spans[s["category"]] += 1
    neg = sum(1 for r in recs if not r["spans"])
    return {
        "lines": len(recs),
        "negatives": neg,
        "neg_share": neg / len(recs),
        "lines_per_cat": dict(per_cat_lines),
        "spans_per_cat": dict(per_cat_spans),
        "lang": dict(collections.Counter(r["lang"] for r in recs)),
        "lang_per_cat": {c: dict(v) for c, v in per_cat_lang.items()},
    }


def cross_checks(splits: dict[str, list[Record]]) -> list[str]:
    """No value, sentence or text may be shared between any two splits."""
    errors: list[str] = []
    names = list(splits)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            a_vals = {s["value"] for r in splits[a] for s in r["spans"]}
            b_vals = {s["value"] for r in splits[b] for s in r["spans"]}
            errors += [f"value shared by {a} and {b}: {v!r}" for v in sorted(a_vals & b_vals)]
            a_skel = {r["_skeleton"] for r in splits[a]}
            errors += [
                f"sentence shared by {a} and {b}: {r['_skeleton']!r}"
                for r in splits[b]
                if r["_skeleton"] in a_skel
            ]
            a_text = {r["text"] for r in splits[a]}
            errors += [
                f"text shared by {a} and {b}: {r['text']!r}"
                for r in splits[b]
                if r["text"] in a_text
            ]
    return errors


def _name_pattern(name: str, flags: int = 0) -> re.Pattern[str]:
    # Latin names as whole words; Chinese names as substrings
    if CJK.search(name):
        return re.compile(re.escape(name))
    return re.compile(r"(?<![A-Za-z])" + re.escape(name) + r"(?![A-Za-z])", flags)


def names_check(
    label: str, names: list[str], older: dict[str, list[Record]], flags: int = 0
) -> list[str]:
    """The people named in the ``label`` lines appear in none of the ``older`` splits."""
    errors: list[str] = []
    text = "\n".join(r["text"] for recs in older.values() for r in recs)
    where = "/".join(older)
    for n in names:
        if _name_pattern(n, flags).search(text):
            errors.append(f"{label} name also used in {where}: {n!r}")
    return errors


def names_listed(label: str, names: list[str], recs: list[Record]) -> list[str]:
    """Every name in the list occurs in its own split (so the list is not stale)."""
    text = "\n".join(r["text"] for r in recs)
    return [
        f"{label} name listed but not used: {n!r}"
        for n in names
        if not _name_pattern(n, re.IGNORECASE).search(text)
    ]


def near_duplicates(
    new: str, splits: dict[str, list[Record]], threshold: float
) -> list[tuple[str, float, str, str]]:
    """Sentences of ``new`` whose skeleton is at least ``threshold`` similar to an older one."""
    import difflib

    out: list[tuple[str, float, str, str]] = []
    for other, recs in splits.items():
        if other == new:
            continue
        for t in splits[new]:
            sm = difflib.SequenceMatcher(None, b="")
            sm.set_seq2(t["_skeleton"])
            for d in recs:
                sm.set_seq1(d["_skeleton"])
                if sm.real_quick_ratio() < threshold or sm.quick_ratio() < threshold:
                    continue
                ratio = sm.ratio()
                if ratio >= threshold:
                    out.append((other, ratio, d["_skeleton"], t["_skeleton"]))
    return out


def main() -> None:
    from benchmarks.masking.data.lines_dev import DEV
    from benchmarks.masking.data.lines_eighth import EIGHTH, EIGHTH_NAMES
    from benchmarks.masking.data.lines_eleventh import ELEVENTH, ELEVENTH_NAMES
    from benchmarks.masking.data.lines_final import FINAL, FINAL_NAMES
    from benchmarks.masking.data.lines_fourteenth import FOURTEENTH, FOURTEENTH_NAMES
    from benchmarks.masking.data.lines_fresh import FRESH, FRESH_NAMES
    from benchmarks.masking.data.lines_holdout import HOLDOUT, HOLDOUT_NAMES
    from benchmarks.masking.data.lines_ninth import NINTH, NINTH_NAMES
    from benchmarks.masking.data.lines_seventh import SEVENTH, SEVENTH_NAMES
    from benchmarks.masking.data.lines_sixth import SIXTH, SIXTH_NAMES
    from benchmarks.masking.data.lines_tenth import TENTH, TENTH_NAMES
    from benchmarks.masking.data.lines_test import TEST
    from benchmarks.masking.data.lines_thirteenth import THIRTEENTH, THIRTEENTH_NAMES
    from benchmarks.masking.data.lines_twelfth import TWELFTH, TWELFTH_NAMES

    std = _stdnum()
    used: set[str] = set()
    # Order matters: dev, test, holdout, final, fresh, sixth, seventh, eighth, ninth, tenth,
    # eleventh, twelfth, thirteenth, then fourteenth share ``used``; each has its own seed,
    # so each later split leaves the files of the earlier ones unchanged.
    dev, _ = build("dev", DEV, used, std)
    test, _ = build("test", TEST, used, std)
    holdout, _ = build("holdout", HOLDOUT, used, std)
    final, _ = build("final", FINAL, used, std)
    fresh, _ = build("fresh", FRESH, used, std)
    sixth, _ = build("sixth", SIXTH, used, std)
    seventh, _ = build("seventh", SEVENTH, used, std)
    eighth, _ = build("eighth", EIGHTH, used, std)
    ninth, _ = build("ninth", NINTH, used, std)
    tenth, _ = build("tenth", TENTH, used, std)
    eleventh, _ = build("eleventh", ELEVENTH, used, std)
    twelfth, _ = build("twelfth", TWELFTH, used, std)
    thirteenth, _ = build("thirteenth", THIRTEENTH, used, std)
    fourteenth, _ = build("fourteenth", FOURTEENTH, used, std)
    older_than_sixth = {
        "dev": dev,
        "test": test,
        "holdout": holdout,
        "final": final,
        "fresh": fresh,
    }
    older_than_seventh = {**older_than_sixth, "sixth": sixth}
    older_than_eighth = {**older_than_seventh, "seventh": seventh}
    older_than_ninth = {**older_than_eighth, "eighth": eighth}
    older_than_tenth = {**older_than_ninth, "ninth": ninth}
    older_than_eleventh = {**older_than_tenth, "tenth": tenth}
    older_than_twelfth = {**older_than_eleventh, "eleventh": eleventh}
    older_than_thirteenth = {**older_than_twelfth, "twelfth": twelfth}
    older_than_fourteenth = {**older_than_thirteenth, "thirteenth": thirteenth}
    splits = {**older_than_fourteenth, "fourteenth": fourteenth}

    errors = cross_checks(splits)
    errors += names_check("holdout", HOLDOUT_NAMES, {"dev": dev, "test": test})
    # The final split: its people in no other split (case-insensitive, so an e-mail
    # local part counts too), the holdout people not in it, and near-copies of
    # older sentences refused as well as exact ones.
    older = {"dev": dev, "test": test, "holdout": holdout}
    errors += names_check("final", FINAL_NAMES, older, re.IGNORECASE)
    errors += names_check("holdout", HOLDOUT_NAMES, {"final": final})
    errors += names_listed("final", FINAL_NAMES, final)
    errors += [
        f"final sentence close to {other} ({ratio:.2f}): {old!r} ~ {new!r}"
        for other, ratio, old, new in near_duplicates(
            "final", {**older, "final": final}, FINAL_MAX_SIMILARITY
        )
    ]
    # From fresh on, each split is held to the same rules against every older one: its
    # people appear in none of them and theirs not in it (holdout on), it names every
    # person it lists, and no sentence is a near-copy of an older one.
    named = {
        "fresh": (FRESH_NAMES, FRESH_MAX_SIMILARITY),
        "sixth": (SIXTH_NAMES, SIXTH_MAX_SIMILARITY),
        "seventh": (SEVENTH_NAMES, SEVENTH_MAX_SIMILARITY),
        "eighth": (EIGHTH_NAMES, EIGHTH_MAX_SIMILARITY),
        "ninth": (NINTH_NAMES, NINTH_MAX_SIMILARITY),
        "tenth": (TENTH_NAMES, TENTH_MAX_SIMILARITY),
        "eleventh": (ELEVENTH_NAMES, ELEVENTH_MAX_SIMILARITY),
        "twelfth": (TWELFTH_NAMES, TWELFTH_MAX_SIMILARITY),
        "thirteenth": (THIRTEENTH_NAMES, THIRTEENTH_MAX_SIMILARITY),
        "fourteenth": (FOURTEENTH_NAMES, FOURTEENTH_MAX_SIMILARITY),
    }
    people = {"holdout": HOLDOUT_NAMES, "final": FINAL_NAMES}
    split_order = list(splits)
    for label, (names, max_similarity) in named.items():
        recs = splits[label]
        position = split_order.index(label)
        older_splits = {name: splits[name] for name in split_order[:position]}
        errors += names_check(label, names, older_splits, re.IGNORECASE)
        for other, other_names in people.items():
            errors += names_check(other, other_names, {label: recs}, re.IGNORECASE)
        errors += names_listed(label, names, recs)
        errors += [
            f"{label} sentence close to {other} ({ratio:.2f}): {old!r} ~ {new!r}"
            for other, ratio, old, new in near_duplicates(
                label, {**older_splits, label: recs}, max_similarity
            )
        ]
        people[label] = names
    for split, recs in splits.items():
        st = stats(split, recs)
        if st["lines"] < MIN_LINES[split]:
            errors.append(f"{split}: only {st['lines']} lines")
        if st["neg_share"] < 0.40:
            errors.append(f"{split}: negatives only {st['neg_share']:.1%}")
        for c in CATEGORIES:
            n = st["lines_per_cat"].get(c, 0)
            if n < MIN_PER_CAT[split]:
                errors.append(f"{split}: {c} has {n} lines < {MIN_PER_CAT[split]}")
            langs = st["lang_per_cat"].get(c, {})
            if not (langs.get("en") and (langs.get("zh") or langs.get("mixed"))):
                errors.append(f"{split}: {c} is not bilingual: {langs}")
            if split in ALL_LANGS and not all(langs.get(k) for k in ("en", "zh", "mixed")):
                errors.append(f"{split}: {c} lacks English, Chinese or mixed lines: {langs}")
    if errors:
        raise SystemExit("\n".join(errors))
    if "--similar" in sys.argv:
        import difflib

        pairs = [(a, b) for i, b in enumerate(splits) for a in list(splits)[:i]]
        for a, b in pairs:
            for t in splits[b]:
                for d in splits[a]:
                    ratio = difflib.SequenceMatcher(None, t["_skeleton"], d["_skeleton"]).ratio()
                    if ratio > 0.7:
                        print(
                            f"similar {a}/{b} {ratio:.2f}: {d['_skeleton']!r} ~ {t['_skeleton']!r}"
                        )

    for split, recs in splits.items():
        order = list(range(len(recs)))
        random.Random(SHUFFLE_SEED).shuffle(order)
        path = os.path.join(HERE, f"{split}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for i in order:
                r = recs[i]
                f.write(
                    json.dumps(
                        {
                            "text": r["text"],
                            "lang": r["lang"],
                            "spans": r["spans"],
                            "note": r["note"],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        st = stats(split, recs)
        share = f"{st['neg_share']:.1%}"
        print(
            f"{path}: {st['lines']} lines, negatives {st['negatives']} ({share}),",
            f"langs {st['lang']}",
        )
        for c in CATEGORIES:
            n_lines, n_spans = st["lines_per_cat"].get(c, 0), st["spans_per_cat"].get(c, 0)
            print(f"  {c:12s} lines {n_lines:3d}  spans {n_spans:3d}  {st['lang_per_cat'].get(c)}")


if __name__ == "__main__":
    main()
