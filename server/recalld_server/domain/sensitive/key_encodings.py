"""Private keys recognised by how they are encoded: a checksum or a file's structure.

A shape that carries its own check needs no word around it: a Stellar secret seed
(base32, version byte "S", CRC16), an XRP family seed (Ripple's base58 alphabet,
double SHA-256 checksum), a PKCS#12 key store in base64 (its DER header and the
PKCS#7 data OID), a key file written as hex-encoded JSON with a "PrivateKey" member
(Filecoin's `lotus wallet export`). Public keys and addresses of the same chains have
other version bytes and fail these checks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.spans import Detection

_STELLAR_SEED = re.compile(r"(?<![A-Z2-7])S[A-Z2-7]{55}(?![A-Za-z0-9])")
_XRP_SEED = re.compile(r"(?<![A-Za-z0-9])s[1-9A-HJ-NP-Za-km-z]{27,29}(?![A-Za-z0-9])")
_RIPPLE_ALPHABET = "rpshnaf39wBUDNEGHJKLM4PQRST7VWXYZ2bcdeCg65jkm8oFqi1tuvAxyz"
_PKCS12 = re.compile(r"(?<![A-Za-z0-9+/])MII[A-Za-z0-9+/]{200,}={0,2}")
_PKCS7_DATA_OID = bytes.fromhex("2a864886f70d010701")  # 1.2.840.113549.1.7.1
_HEX_JSON = re.compile(r"(?<![0-9a-fA-F])7b22[0-9a-fA-F]{60,}(?![0-9a-fA-F])")


def keys_by_encoding(text: str) -> Iterator[Detection]:
    """Every private key whose encoding's checksum or structure holds."""
    if "S" in text:
        for match in _STELLAR_SEED.finditer(text):
            if _stellar_seed(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    for match in _XRP_SEED.finditer(text):
        if _xrp_seed(match.group()):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if "MII" in text:
        for match in _PKCS12.finditer(text):
            if _pkcs12(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if "7b22" in text:
        for match in _HEX_JSON.finditer(text):
            if b'"PrivateKey"' in bytes.fromhex(match.group()[: len(match.group()) // 2 * 2]):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())


def _crc16_xmodem(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def _stellar_seed(value: str) -> bool:
    """A Stellar secret seed: version byte 18 << 3, 32 bytes, CRC16-XModem (little-endian)."""
    try:
        raw = base64.b32decode(value)
    except (binascii.Error, ValueError):
        return False
    if len(raw) != 35 or raw[0] != 18 << 3:
        return False
    return _crc16_xmodem(raw[:-2]).to_bytes(2, "little") == raw[-2:]


def _xrp_seed(value: str) -> bool:
    """An XRP family seed: version byte 0x21, 16 bytes, a double SHA-256 checksum."""
    number = 0
    for char in value:
        position = _RIPPLE_ALPHABET.find(char)
        if position < 0:
            return False
        number = number * 58 + position
    raw = number.to_bytes(21, "big") if number.bit_length() <= 168 else b""
    if len(raw) != 21 or raw[0] != 0x21:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:17]).digest()).digest()[:4] == raw[17:]


def _pkcs12(value: str) -> bool:
    """A PKCS#12 store: a DER SEQUENCE, version 3, then PKCS#7 data (its key bags)."""
    head = value[:96]
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw[:1] == b"\x30" and b"\x02\x01\x03\x30" in raw[:12] and _PKCS7_DATA_OID in raw
