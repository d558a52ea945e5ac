"""Check digits, alphabets and issuer tables the masking data's generators draw from.

Luhn, the Chinese resident ID's ISO 7064 check, IBAN mod 97 and national bank
checks, phone prefixes and card BINs (see build_labelled.py for what uses them).
"""

from __future__ import annotations

import datetime as dt
import re
import string

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
