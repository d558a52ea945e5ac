"""Build the labelled bilingual data set for measuring the sensitive-data detector.

    python benchmarks/masking/data/build_labelled.py

rewrites one ``SPLIT.jsonl`` beside this file for every split in ``SEEDS``, in that
order: ``dev`` (for tuning), ``test`` (held out, since looked at during tuning), then
``holdout``, ``final``, ``fresh`` and ``sixth`` to ``twentyseventh``, each a further
held-out measurement written the same way as the one before it, after the rules it
measures (and looked at only once measured). The sentences are hand-written in
``lines_SPLIT.py`` (the list ``SPLIT`` in upper case, and from holdout on the people
it names, ``SPLIT_NAMES``); this script fills the ``⟦...⟧`` tokens in them with values
it generates (fixed seeds, so re-running
rewrites identical files) and labels them:

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
                          waybill number), neither Luhn-valid; fifteenth adds ytwaybill
                          (a YTO Express waybill number, not Luhn-valid) and jdorder (a
                          12-digit JD.com order number))

Every line is checked before anything is written: each value is an exact,
unique substring of its text; card numbers pass Luhn, resident IDs pass
ISO 7064 MOD 11-2 with a real date, IBANs pass MOD 97-10 (and python-stdnum
agrees when it is installed); phones are valid for phonenumbers; nothing
outside the spans looks like a valid card, ID, IBAN or e-mail; no two splits
share a value, a sentence or a text, and no person named in ``HOLDOUT_NAMES``
appears in dev or test. From final on, each split is held to the same rules against
all the splits before it: no person it names appears in any of them (case-insensitive,
so an e-mail's local part counts too), no person named by an older split from holdout
on appears in it, every person it names appears in it (from fresh on), no sentence is
a near-copy of an older one (``MAX_SIMILARITY``), and every category has English,
Chinese and mixed lines. The splits are built in ``SEEDS`` order from one set of used
values, each with its own seed, so a later split (and the generator kinds added for
it) leaves the earlier files byte-identical.
Random-looking secrets use the alphabets and lengths of ``secrets.token_*`` but
come from a seeded ``random.Random`` so the build is reproducible.

The generators are ``Gen`` in ``gen_lookalikes.py`` (the hard negatives), built on
``gen_secrets.py`` (vendor keys from the ninth split on), ``gen_tokens.py`` (JWTs and
the earlier vendors' keys), ``gen_private_keys.py``, ``gen_contacts.py`` (phones,
IBANs), ``gen_numbers.py`` (cards, IDs, passports) and ``gen_base.py``, one class each,
the later on the earlier; check digits, alphabets and issuer tables are in
``value_rules.py``. This file holds
the splits: their seeds, limits and checks, and the build.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import random
import re
import sys
from collections.abc import Callable
from typing import NamedTuple, TypedDict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The generators and the lines files are imported as ``benchmarks.masking.data.*`` (the
# module names mypy gives them), so the repository root goes on the path when run as a
# script.
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.dont_write_bytecode = True  # importing lines_*.py leaves no __pycache__ beside the data

from benchmarks.masking.data.gen_lookalikes import Gen  # noqa: E402  (the root is on the path first)
from benchmarks.masking.data.value_rules import (  # noqa: E402  (after the path)
    HALFWIDTH,
    IBAN_LEN,
    iban_ok,
    luhn_ok,
    ric15_ok,
    ric_ok,
)

# ====================================================================== build


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
# Every split, in the order it is built, with its seed.
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
    "fifteenth": 84615027,
    "sixteenth": 73950486,
    "seventeenth": 46183729,
    "eighteenth": 62817394,
    "nineteenth": 39527164,
    "twentieth": 58403176,
    "twentyfirst": 27493618,
    "twentysecond": 20702477,
    "twentythird": 83537919,
    "twentyfourth": 61938274,
    "twentyfifth": 47261905,
    "twentysixth": 73019458,
    "twentyseventh": 58820419,
}
# Every category has at least this many lines, and a split at least this many lines;
# dev, the tuning split, is smaller.
MIN_PER_CAT = {split: 12 if split == "dev" else 25 for split in SEEDS}
MIN_LINES = {split: 120 if split == "dev" else 320 for split in SEEDS}
# From final on, every category also has English, Chinese and mixed lines.
ALL_LANGS = set(list(SEEDS)[list(SEEDS).index("final") :])
# No sentence from final on may be this similar (difflib ratio of the skeletons) to one
# of an older split.
MAX_SIMILARITY = 0.8
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


def _lines(split: str) -> tuple[list[RawLine], list[str] | None]:
    """A split's hand-written lines, and the people it names (none for dev and test)."""
    module = importlib.import_module(f"benchmarks.masking.data.lines_{split}")
    names: list[str] | None = getattr(module, f"{split.upper()}_NAMES", None)
    return getattr(module, split.upper()), names


def main() -> None:
    std = _stdnum()
    used: set[str] = set()
    # The splits share ``used`` in ``SEEDS`` order; each has its own seed, so each later
    # split leaves the files of the earlier ones unchanged.
    splits: dict[str, list[Record]] = {}
    people_of: dict[str, list[str]] = {}
    for split in SEEDS:
        lines, names = _lines(split)
        splits[split], _ = build(split, lines, used, std)
        if names is not None:
            people_of[split] = names
    dev, test, holdout, final = (splits[s] for s in ("dev", "test", "holdout", "final"))

    errors = cross_checks(splits)
    errors += names_check("holdout", people_of["holdout"], {"dev": dev, "test": test})
    # The final split: its people in no other split (case-insensitive, so an e-mail
    # local part counts too), the holdout people not in it, and near-copies of
    # older sentences refused as well as exact ones.
    older = {"dev": dev, "test": test, "holdout": holdout}
    errors += names_check("final", people_of["final"], older, re.IGNORECASE)
    errors += names_check("holdout", people_of["holdout"], {"final": final})
    errors += names_listed("final", people_of["final"], final)
    errors += [
        f"final sentence close to {other} ({ratio:.2f}): {old!r} ~ {new!r}"
        for other, ratio, old, new in near_duplicates(
            "final", {**older, "final": final}, MAX_SIMILARITY
        )
    ]
    # From fresh on, each split is held to the same rules against every older one: its
    # people appear in none of them and theirs not in it (holdout on), it names every
    # person it lists, and no sentence is a near-copy of an older one.
    named = [split for split in people_of if split not in ("holdout", "final")]
    people = {"holdout": people_of["holdout"], "final": people_of["final"]}
    split_order = list(splits)
    for label in named:
        names, recs = people_of[label], splits[label]
        position = split_order.index(label)
        older_splits = {name: splits[name] for name in split_order[:position]}
        errors += names_check(label, names, older_splits, re.IGNORECASE)
        for other, other_names in people.items():
            errors += names_check(other, other_names, {label: recs}, re.IGNORECASE)
        errors += names_listed(label, names, recs)
        errors += [
            f"{label} sentence close to {other} ({ratio:.2f}): {old!r} ~ {new!r}"
            for other, ratio, old, new in near_duplicates(
                label, {**older_splits, label: recs}, MAX_SIMILARITY
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
