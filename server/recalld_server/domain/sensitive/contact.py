"""Contact details: e-mail addresses and phone numbers (libphonenumber's metadata)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import phonenumbers

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.identifiers import IBAN_SHAPE
from recalld_server.domain.sensitive.spans import (
    DIGIT,
    NOT_AN_IDENTIFIER_BEFORE,
    PLACEHOLDER,
    Detection,
    blanked,
    standalone,
)

# --- contact -----------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
# Units right after a number that make it a count ("15873920461 字节", "13800 rows").
_UNIT_AFTER = re.compile(
    r"\s?(?:字节|个|次|元|块|条|行|件|人|张|位|字|秒|毫秒|bytes?|items?|rows?|times|yuan|words"
    r"|files?|records?|users?|ms|seconds?|embeddings|vectors|tokens|requests|queries|documents"
    r"|chunks|entries|events|views|clicks|downloads|visits)(?![A-Za-z])",
    re.IGNORECASE,
)


# "2^34 = 17179869184": a result; "phone=090-2093-6560" assigns a value (a letter before
# "=") and is no sum.
_ARITHMETIC = re.compile(r"(?:[0-9)]\s*=|[\^*×÷])\s*$|^\s*[=^*×÷]")
_PHONE_REGIONS = ("CN", "US")
# British, French, Dutch, Japanese, Taiwanese, Irish, Swiss and Australian mobiles are
# read without a word for a phone: their national shape ("07823 537922", "06 28 03 33
# 86", "06-68565018", "070-8688-8203", "0953-332-839", "086 560 6348", "076 429 86 63",
# "0414 458 138") is theirs alone, unlike a landline's.
_MOBILE_REGIONS = ("GB", "FR", "NL", "JP", "TW", "IE", "CH", "AU")
_MOBILE_START = re.compile(
    r"(?<![0-9])0(?:[67][ .\-]?[0-9]|[789]0[ \-]?[0-9]"
    r"|[49][0-9]{2}[ \-]?[0-9]{3}[ \-]?[0-9]{3}(?![0-9])|8[35-9][ ]?[0-9]{3}[ ]?[0-9]{4}(?![0-9]))"
)
_MOBILE_SHAPE = re.compile(
    r"07[1-9][0-9]{2}[ ]?[0-9]{6}|0[67](?:[ .]?[0-9]{2}){4}|06-[0-9]{8}"
    r"|0[789]0([ \-]?)[0-9]{4}\1[0-9]{4}|09[0-9]{2}([ \-]?)[0-9]{3}\2[0-9]{3}"
    r"|08[35-9]([ ]?)[0-9]{3}\3[0-9]{4}|07[5-9]([ ]?)[0-9]{3}\4[0-9]{2}\4[0-9]{2}"
    r"|04[0-9]{2}([ ]?)[0-9]{3}\5[0-9]{3}"
)
# Numbers written the national way of another country ("07823 619930", "070-9938-7253")
# count where the text says it is a phone number: read in these regions too.
_PHONE_CUE = re.compile(
    r"(?i)(?:phone|mobile|cell|tel|call|text me|number|desk|office|landline|whatsapp|handy"
    r"|büro|telefon|portable|móvil|telemóvel|celular|werk|mobiel|携帯|電話|番号|手机|电话"
    r"|号码|座机|联系|手機|電話|휴대폰|전화|телефон|моб|contact|reception|hotline|前台|就打|打给"
    r"|(?:support|help|phone|direct|office) ?line"
    r"|wa\.me/"
    # "Aroha is on 027 555 0142", "ring her on 0412 …": how British, Irish, Australian and
    # New Zealand English give a phone number.
    r"|\b(?:is|are|am|'m|'s|ring \w+|reach \w+) on(?=\s+[+(0-9]))"
)
_CUED_REGIONS = (
    "GB", "DE", "FR", "JP", "AU", "SG", "HK", "TW", "IN", "NL", "RU", "IT", "ES", "KR",
    "BR", "CA", "PT", "CH", "SE", "MY", "TH", "VN", "PH", "ID", "MX", "AE", "NZ", "IE",
    "ZA", "NG", "KE", "GH",
)  # fmt: skip
"""Regions numbers without a country code are read in: mainland China, then NANP."""
# Dots separate phone groups only as 415.555.0199 (or +1.415.555.0199), never as versions.
_DOTTED_PHONE = re.compile(
    # A country code with its plus, or NANP's bare 1: "4.11.1111.1111" is a version.
    r"(?:\+[0-9]{1,3}[ .]|1[ .])?\(?[0-9]{2,4}\)?\.[0-9]{3,4}\.[0-9]{4}"
    r"|(?:\+33[ .]?|0)[1-9](?:\.[0-9]{2}){4}"  # France: 07.36.92.41.96
    r"|\+[0-9]{1,3}\.[0-9]{7,12}"  # a country code, a dot, the number: +86.18542042671
)
# The shortest phone number libphonenumber accepts here has seven digits; a text without
# seven digits close together is not worth its matcher (the costliest rule by far).
_PHONE_SHAPE = re.compile(rf"[{DIGIT}](?:[ ().\-–]{{0,2}}[{DIGIT}]){{6}}")


def emails(text: str) -> Iterator[Detection]:
    """Every e-mail address."""
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        yield Detection(Category.EMAIL, match.start(), match.end())


def phones(text: str) -> Iterator[Detection]:
    """Every phone number: CN and NANP always, other regions where the text says "phone"."""
    # Copied from web pages, numbers come with no-break spaces (same length).
    text = text.replace("\xa0", " ").replace("\u202f", " ")
    if not _PHONE_SHAPE.search(text):
        return
    # IBAN-shaped text (valid or not) holds no phone number.
    ibans = [Detection(Category.IBAN, m.start(), m.end()) for m in IBAN_SHAPE.finditer(text)]
    # "[PHONE ••••8000]" left by masking is no cue that a number is a phone.
    cues = PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
    cued = _PHONE_CUE.search(cues) is not None
    mobiles = _MOBILE_START.search(text) is not None  # the matcher is costly: only if one may be
    # The matcher can take two adjacent numbers for one candidate and keep only
    # the inner one it recognises ("+1 415 555 0132 13800138000"): scan again
    # with what it found blanked out, until a pass finds nothing new.
    found: list[Detection] = list(_whatsapp_links(text)) if "wa.me/" in text else []
    for _ in range(3):
        scanned = blanked(text, [*ibans, *found])
        new = list(_phone_pass(scanned, _PHONE_REGIONS))
        if mobiles:
            taken = [*ibans, *found, *new]
            new.extend(
                d for d in _phone_pass(blanked(text, taken), _MOBILE_REGIONS) if _mobile(text, d)
            )
        if cued:
            taken = [*ibans, *found, *new]
            new.extend(
                d
                for d in _phone_pass(blanked(text, taken), _CUED_REGIONS)
                if _PHONE_CUE.search(cues, max(0, d.start - 40), min(len(text), d.end + 12))
            )
        if not new:
            break
        found.extend(new)
    yield from found


# A WhatsApp link holds the number it opens a chat with, in international form without
# its plus: "wa.me/8615908863313".
_WHATSAPP_LINK = re.compile(r"(?<![\w.])wa\.me/\+?(?P<number>[1-9][0-9]{7,14})(?![0-9])")


def _whatsapp_links(text: str) -> Iterator[Detection]:
    for match in _WHATSAPP_LINK.finditer(text):
        try:
            number = phonenumbers.parse("+" + match.group("number"))
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            yield Detection(Category.PHONE, match.start("number"), match.end("number"))


def _mobile(text: str, detection: Detection) -> bool:
    return _MOBILE_SHAPE.fullmatch(text[detection.start : detection.end]) is not None


def _phone_pass(text: str, regions: Sequence[str]) -> Iterator[Detection]:
    seen: set[tuple[int, int]] = set()
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(
            text, region, leniency=phonenumbers.Leniency.VALID
        ):
            span = (match.start, match.end)
            if any(match.start < end and start < match.end for start, end in seen):
                continue
            if not standalone(text, match.start, match.end):
                continue
            if "." in match.raw_string and not _DOTTED_PHONE.fullmatch(match.raw_string):
                continue  # "1.0.13800138" is a version
            before = text[max(0, match.start - 5) : match.start]
            if _ARITHMETIC.search(before) or _ARITHMETIC.match(text, match.end):
                continue  # "2^34 = 17179869184"
            # A number with its country code is dialled, whatever names it ("from the
            # booking confirmation: +971 …"); without one it may be the booking's own.
            international = match.raw_string.startswith("+")
            if _UNIT_AFTER.match(text, match.end) or (
                not international
                and NOT_AN_IDENTIFIER_BEFORE.search(text, max(0, match.start - 24), match.start)
            ):
                continue
            seen.add(span)
            yield Detection(Category.PHONE, match.start, match.end)
