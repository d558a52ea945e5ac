"""Identifiers: card numbers, Chinese resident IDs, IBANs and passport numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.cn import ric

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.spans import (
    AFTER,
    BEFORE,
    DIGIT,
    NOT_AN_IDENTIFIER_BEFORE,
    TO_ASCII,
    Detection,
)

# --- identifiers -----------------------------------------------------------------------

# Digits in groups split by single spaces or dashes; a card is a run of whole groups.
_DIGIT_RUN = re.compile(rf"{BEFORE}[{DIGIT}]+(?:[ \-][{DIGIT}]+)*{AFTER}")
_GROUP = re.compile(rf"[{DIGIT}]+")
_NATIONAL_ID = re.compile(
    rf"{BEFORE}[1-9１-９][{DIGIT}]{{5}}[ ]?[{DIGIT}]{{8}}[ ]?[{DIGIT}]{{3}}[{DIGIT}Xx]"
    rf"(?![A-Za-z{DIGIT}_])"
)
IBAN_SHAPE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_PASSPORT_WORD = re.compile(
    r"(?i)(?:passports?|reisepass|passeport|pasaporte|passaporte|passaporto|paspoort|paszport"
    r"|reisepassnummer|passnummer|pass-nr\.?|hộ chiếu|(?:загран)?паспорт|διαβατήριο|护照|護照"
    r"|旅券|パスポート|여권"
    # Indonesian/Malay, Turkish, Finnish, Hungarian, Czech/Slovak, Danish/Norwegian.
    r"|\bpaspor\b|\bpasaport\w*|\bpassi\b|útlevél\w*|cestovní pas\b|\bpas\s?nr\.?)"
)
# What every word above holds (lower-cased): without one, no word is looked for.
_PASSPORT_STEMS = (
    "pas", "útlev", "hộ chiếu", "паспорт", "διαβατ", "护照", "護照", "旅券", "パスポート", "여권",
)  # fmt: skip
# "173825112 (passport)", "E12345678 就是他现在的护照号": the number right before the word.
_PASSPORT_BEFORE = re.compile(
    r"(?<![A-Za-z0-9])([A-Z0-9]{6,9})\s*"
    r"(?:[(（]|(?:is|was)\s+(?:the|my|his|her|their|our)\s+|就?是(?:[\u4e00-\u9fff]{1,8}的)?)?\s*$"
)
# Passport numbers: letters and digits (China E12345678, EA1234567, Germany C2Z2LCGKK,
# France 87ZL44099) or digits alone (US, UK); upper case, six to nine characters.
_PASSPORT_NUMBER = re.compile(
    r"(?<![A-Za-z0-9])(?:[0-9]{8,9}"
    r"|(?=[A-Z0-9]*[0-9][A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,9}"
    r"|(?=[A-Z0-9]*[0-9])[A-Z][A-Z0-9]{8})(?![A-Za-z0-9])"
)
_SENTENCE_END = re.compile(r"[。；\n]|(?<!\b[Nn]o)(?<![Nn]um)(?<![Nn]r)(?<!\b[Nn])\.\s")
_DATE_DIGITS = re.compile(r"(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])")


def national_ids(text: str) -> Iterator[Detection]:
    """Every Chinese resident ID number with a valid date and check digit."""
    for match in _NATIONAL_ID.finditer(text):
        number = match.group().replace(" ", "").translate(TO_ASCII).upper()
        if ric.is_valid(number):
            yield Detection(Category.NATIONAL_ID, match.start(), match.end())


def cards(text: str) -> Iterator[Detection]:
    """Every payment card number (issuer range, length, Luhn) not named as something else."""
    # Copied from web pages, numbers come with no-break spaces (same length).
    text = text.replace("\xa0", " ").replace("\u202f", " ")
    ibans: list[tuple[int, int]] | None = None  # found once, when a card needs it
    for run in _DIGIT_RUN.finditer(text):
        groups = [(g.start(), g.end()) for g in _GROUP.finditer(text, run.start(), run.end())]
        for start, end in _card_spans(text, groups):
            if NOT_AN_IDENTIFIER_BEFORE.search(text, max(0, start - 24), start):
                continue
            # Digits inside an IBAN-shaped string (valid or not) are its account number.
            if ibans is None:
                ibans = [(m.start(), m.end()) for m in IBAN_SHAPE.finditer(text)]
            if any(s < start and end <= e for s, e in ibans):
                continue
            yield Detection(Category.CARD_NUMBER, start, end)


def ibans(text: str) -> Iterator[Detection]:
    """Every IBAN that passes mod 97."""
    position = 0
    while (match := IBAN_SHAPE.search(text, position)) is not None:
        raw = match.group()
        position = match.start() + 1
        # The pattern may run on into the next word or the next IBAN: the longest
        # valid prefix is the IBAN, and the search goes on right after it.
        for end in range(len(raw), 14, -1):
            candidate = raw[:end]
            if candidate[-1] == " ":
                continue
            if stdnum_iban.is_valid(candidate.replace(" ", "")):
                yield Detection(Category.IBAN, match.start(), match.start() + end)
                position = match.start() + end
                break


def passports(text: str) -> Iterator[Detection]:
    """Every passport number near a word that says it is one, or in a passport column."""
    lowered = text.lower()
    if not any(stem in lowered for stem in _PASSPORT_STEMS):
        return
    for word in _PASSPORT_WORD.finditer(text):
        # The numbers that follow the word in its sentence ("passports E29799765 and
        # G88040687"), within a short reach, or the one right before it.
        reach = text[word.end() : word.end() + 80]
        end = _SENTENCE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        numbers = list(_PASSPORT_NUMBER.finditer(text, word.end(), window_end))
        before = _PASSPORT_BEFORE.search(text, max(0, word.start() - 28), word.start())
        if before is not None:
            numbers.extend(_PASSPORT_NUMBER.finditer(text, before.start(1), before.end(1)))
        numbers.extend(_in_its_column(text, word))
        for number in numbers:
            value = number.group()
            if value.isdigit() and (len(set(value)) < 3 or _DATE_DIGITS.fullmatch(value)):
                continue
            yield Detection(Category.PASSPORT, number.start(), number.end())


def _in_its_column(text: str, word: re.Match[str]) -> Iterator[re.Match[str]]:
    """The passport numbers under a header cell that names them (CSV, TSV, a table)."""
    line_start = text.rfind("\n", 0, word.start()) + 1
    line_end = text.find("\n", word.end())
    if line_end < 0:
        return
    header = text[line_start:line_end]
    delimiter = next((d for d in ",\t;|" if d in header), None)
    if delimiter is None:
        return
    cells = header.split(delimiter)
    column = header[: word.start() - line_start].count(delimiter)
    if not _PASSPORT_WORD.search(cells[column]) or len(cells[column].strip()) > 24:
        return  # the word in a cell of prose, not a header
    position = line_end + 1
    for row in text[position:].split("\n"):
        row_cells = row.split(delimiter)
        if len(row_cells) != len(cells):
            break  # the table ends
        cell_start = position + sum(len(c) + 1 for c in row_cells[:column])
        cell = row_cells[column]
        stripped = cell.strip().strip("\"'")
        offset = cell_start + cell.index(stripped) if stripped else cell_start
        number = _PASSPORT_NUMBER.fullmatch(text, offset, offset + len(stripped))
        if stripped and number is not None:
            yield number
        position += len(row) + 1


_CARD_BRANDS: tuple[tuple[tuple[int, int], int, frozenset[int]], ...] = (
    # (IIN range as integers of `width` leading digits, width, allowed lengths)
    ((4, 4), 1, frozenset({13, 16, 19})),  # Visa
    ((51, 55), 2, frozenset({16})),  # Mastercard
    ((2221, 2720), 4, frozenset({16})),  # Mastercard 2-series
    ((34, 34), 2, frozenset({15})),  # American Express
    ((37, 37), 2, frozenset({15})),
    ((62, 62), 2, frozenset({16, 17, 18, 19})),  # UnionPay
    ((81, 81), 2, frozenset({16, 17, 18, 19})),  # UnionPay 81-series
    ((3528, 3589), 4, frozenset({16, 17, 18, 19})),  # JCB
    ((6011, 6011), 4, frozenset({16, 17, 18, 19})),  # Discover
    ((644, 649), 3, frozenset({16, 17, 18, 19})),
    ((65, 65), 2, frozenset({16, 17, 18, 19})),
    ((300, 305), 3, frozenset({14, 16, 17, 18, 19})),  # Diners Club
    ((36, 36), 2, frozenset({14, 16, 17, 18, 19})),
    ((38, 39), 2, frozenset({16, 17, 18, 19})),
    ((50, 50), 2, frozenset({16, 17, 18, 19})),  # Maestro
    ((56, 58), 2, frozenset({16, 17, 18, 19})),
    ((6759, 6759), 4, frozenset({16, 18, 19})),
    ((2200, 2204), 4, frozenset({16, 17, 18, 19})),  # Mir
)


def _card_spans(text: str, groups: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The card numbers among runs of whole digit groups (leftmost first, none overlapping)."""
    taken: list[tuple[int, int]] = []
    for first in range(len(groups)):
        digits = 0
        for last in range(first, len(groups)):
            digits += groups[last][1] - groups[last][0]
            if digits > 19:
                break
            if digits < 13:
                continue
            start, end = groups[first][0], groups[last][1]
            raw = text[start:end]
            number = raw.replace(" ", "").replace("-", "").translate(TO_ASCII)
            if not (_is_card_number(number) and _grouped_like_a_card(raw)):
                continue
            if taken and taken[-1][0] == start:
                taken[-1] = (start, end)  # the longest card from the same first group
            elif all(end <= s or start >= e for s, e in taken):
                taken.append((start, end))
    yield from sorted(taken, key=lambda span: span[0])


def _is_card_number(digits: str) -> bool:
    """A payment card: a known issuer range, a length it issues, and the Luhn check."""
    if not 13 <= len(digits) <= 19 or not digits.isdigit():
        return False
    for (low, high), width, lengths in _CARD_BRANDS:
        if low <= int(digits[:width]) <= high and len(digits) in lengths:
            return bool(luhn.is_valid(digits))
    return False


def _grouped_like_a_card(raw: str) -> bool:
    """Written whole, or in groups the way cards are printed (4-4-4-4, 4-6-5, 4-4-4-4-3)."""
    groups = re.split(r"[ \-]", raw)
    if len(groups) == 1:
        return True
    if len({sep for sep in raw if sep in " -"}) > 1:
        return False
    sizes = [len(group) for group in groups]
    return (all(size == 4 for size in sizes[:-1]) and 1 <= sizes[-1] <= 4) or sizes in (
        [4, 6, 5],
        [4, 6, 4],
        [4, 4, 5],
        [6, 13],
        [6, 12],
        [4, 4, 4, 4, 3],
    )
