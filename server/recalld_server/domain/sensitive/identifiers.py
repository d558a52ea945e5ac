"""Identifiers: card numbers, Chinese resident IDs, IBANs and passport numbers."""

from __future__ import annotations

import datetime
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
    SENTENCE_END,
    TO_ASCII,
    Detection,
    any_word,
    cells_under,
)

# --- identifiers -----------------------------------------------------------------------

# Digits in groups split by single spaces or dashes; a card is a run of whole groups.
_DIGIT_RUN = re.compile(rf"{BEFORE}[{DIGIT}]+(?:[ \-][{DIGIT}]+)*{AFTER}")
_GROUP = re.compile(rf"[{DIGIT}]+")
# 6-8-4, whole or in groups split by spaces or dashes (as forms print it).
_NATIONAL_ID = re.compile(
    rf"{BEFORE}[1-9１-９][{DIGIT}]{{5}}(?:[ ]?[{DIGIT}]{{8}}[ ]?|-[{DIGIT}]{{8}}-)"
    rf"[{DIGIT}]{{3}}[{DIGIT}Xx](?![A-Za-z{DIGIT}_])"
)
# The first-generation ID (before 1999): 15 digits, region, YYMMDD, sequence, no check
# digit; only after a word for it, since any 15 digits could pass.
_OLD_NATIONAL_ID = re.compile(rf"{BEFORE}[1-8][0-9]{{14}}(?![A-Za-z{DIGIT}_-])")
_ID_WORD = re.compile(
    r"(?i)身份证|身份證|证件|證件|sfz|居民|户口本|户口簿|户籍|\bid\b|identity|resident"
    # "Grandpa's first-generation number off an old photocopy: 6101…", "一代证".
    r"|first[- ]generation|一代证|一代身份证|一代證"
)
_PROVINCES = frozenset(
    {
        "11", "12", "13", "14", "15", "21", "22", "23", "31", "32", "33", "34", "35", "36",
        "37", "41", "42", "43", "44", "45", "46", "50", "51", "52", "53", "54", "61", "62",
        "63", "64", "65", "71", "81", "82",
    }
)  # fmt: skip
_IBAN_AFTER_WORD = re.compile(
    r"(?i)\biban\b\s*(?:no\.?|number|nr\.?)?"
    # What happened to it before a colon: "the IBAN in lower case in the booking form: de69 …".
    r"(?:[^\n:：.;]{1,50}?(?=[:：]))?\s*(?:[:：=]|is|是|为|為|ist|est|es|é)?\s*"
    r"(?P<value>[A-Za-z]{2}[0-9]{2}(?:[ ]?[A-Za-z0-9]){11,30})(?![A-Za-z0-9])"
)
IBAN_SHAPE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_PASSPORT_WORD = re.compile(
    r"(?i)(?:passports?|reisepass|passeport|pasaporte|passaporte|passaporto|paspoort|paszport"
    r"|reisepassnummer|passnummer|pass-nr\.?|hộ chiếu|(?:загран)?паспорт|διαβατήριο|护照|護照"
    r"|旅券|パスポート|여권"
    # Indonesian/Malay, Turkish, Finnish, Hungarian, Czech/Slovak, Danish/Norwegian.
    r"|\bpaspor\b|\bpasaport\w*|\bpassi\b|útlevél\w*|cestovní pas\b|\bpas\s?nr\.?"
    # Romanian, Croatian/Bosnian, Serbian, Slovenian, Slovak, Lithuanian, Latvian,
    # Icelandic, Albanian, Catalan/Maltese, Welsh, Basque, Azerbaijani/Uzbek, Swahili.
    r"|pa[șş]aport\w*|пашпарт\w*|putovnic\w*|paso[šs]\b|пасош\w*|potn\w* list\w*|cestovn\w* pas\b"
    r"|\bpas(?:as|o|e|es|ą|ui)\b|vegabréf\w*|pasaport[eë]?\b|passaport\b|pasbort\b"
    r"|pasaportea\b|\bpasport\b|pasipoti\b"
    # Thai, Arabic, Persian, Hebrew, Hindi/Nepali, Bengali, Tamil, Georgian, Armenian,
    # Amharic, Kazakh.
    r"|หนังสือเดินทาง|พาสปอร์ต|جواز (?:ال)?سفر|گذرنامه|پاسپورت|דרכון|पासपोर्ट|राहदानी"
    r"|পাসপোর্ট|கடவுச்சீட்டு|პასპორტ\w*|անձնագիր\w*|ፓስፖርት|төлқұжат"
    # "travel document", and the short forms: "PP# …", "PPT no. …", "Eesti pass K…".
    r"|travel document|(?-i:\bPPT?\b)\s*(?=(?:#|no\b|nr\b|num)|\s*[A-Z]{0,2}[0-9]{6,9}\b)"
    r"|\bpass(?=\s+(?:(?:nr|no|number)\.?\s*|#\s*)?[A-Z]{1,2}[0-9]{6,8}\b)"
    # Swedish "pass för Ragnhild: 99230137": a passport, whose number may be digits alone.
    r"|\bpass(?=\s+för\s)"
    # "Rupert travels on 760522509": what one travels on is a passport.
    r"|\btravel(?:s|led|ling)? on(?=\s+(?:[0-9]{9}|[A-Z]{1,2}[0-9]{6,8})(?![A-Za-z0-9])))"
)
# What every word above holds (lower-cased): without one, no word is looked for.
_PASSPORT_STEMS = (
    "pas", "útlev", "hộ chiếu", "паспорт", "διαβατ", "护照", "護照", "旅券", "パスポート", "여권",
    "paș", "paş", "пашпарт", "putovn", "пасош", "potn", "cestovn", "vegabr", "หนังสือเดินทาง",
    "พาสปอร์ต",
    "جواز", "گذرنامه", "پاسپورت", "דרכון", "पासपोर्ट", "राहदानी", "পাসপোর্ট", "கடவுச்சீட்டு",
    "პასპორტ", "անձնագիր", "ፓስፖርት", "төлқұжат", "travel", "pass ",
)  # fmt: skip
_PASSPORT_STEM = any_word(_PASSPORT_STEMS)
# "173825112 (passport)", "E12345678 就是他现在的护照号": the number right before the word.
_PASSPORT_BEFORE = re.compile(
    r"(?<![A-Za-z0-9])([A-Z0-9]{6,9})\s*"
    r"(?:[(（]|(?:is|was)\s+(?:the|my|his|her|their|our)\s+|就?是(?:[\u4e00-\u9fff]{1,8}的)?"
    # "J7YC980M0 ist meine Passnummer".
    r"|ist\s+(?:meine|seine|ihre|die)\s+"
    # "277213558 — that's Clemency's passport".
    r"|[—–-]+\s*that'?s\s+(?:the|my|his|her|their|our|[A-Z][\w'’-]{1,30}'s)\s+)?\s*$"
)
# Passport numbers: letters and digits (China E12345678, EA1234567, Germany C2Z2LCGKK,
# France 87ZL44099) or digits alone (US, UK); upper case, six to nine characters.
_PASSPORT_NUMBER = re.compile(
    r"(?<![A-Za-z0-9])(?:[0-9]{8,9}"
    r"|(?=[A-Z0-9]*[0-9][A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,9}"
    r"|(?=[A-Z0-9]*[0-9])[A-Z][A-Z0-9]{8})(?![A-Za-z0-9])"
)
# A travel document of ICAO type P (a passport) with its number, in XML or JSON.
_ICAO_PASSPORT = re.compile(
    r"(?i)\b(?:doc(?:ument)?[_ ]?)?type[\"']?\s*[=:]\s*[\"']P[\"'][^<>{}\n]{0,80}?"
    r"\b(?:number|num|no|nr)[\"']?\s*[=:]\s*[\"'](?P<value>[A-Z0-9]{6,9})[\"']"
)
_NEXT_LINE_NUMBER = re.compile(
    r"[^\n]*\n[ \t]*(?:[\w .'-]{1,20}[:：][ \t]*)?([A-Z0-9]{6,9})[ \t]*(?:\n|$)"
)
# A passport number with letters, shortly before the word in the same sentence:
# "travels on A79903740 — the green South African passport".
_LETTERED_NUMBER = re.compile(r"(?<![A-Za-z0-9])[A-Z]{1,2}[0-9]{6,8}(?![A-Za-z0-9])")
_DATE_DIGITS = re.compile(r"(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])")


def national_ids(text: str) -> Iterator[Detection]:
    """Every Chinese resident ID number with a valid date and check digit."""
    for match in _NATIONAL_ID.finditer(text):
        number = match.group().replace(" ", "").replace("-", "").translate(TO_ASCII).upper()
        if ric.is_valid(number):
            yield Detection(Category.NATIONAL_ID, match.start(), match.end())
    for match in _OLD_NATIONAL_ID.finditer(text):
        if _ID_WORD.search(text, max(0, match.start() - 90), match.start()) and _old_id_valid(
            match.group()
        ):
            yield Detection(Category.NATIONAL_ID, match.start(), match.end())


def _old_id_valid(number: str) -> bool:
    """A first-generation ID: a province's region code and a real date of birth (19YY)."""
    if number[:2] not in _PROVINCES:
        return False
    try:
        datetime.date(1900 + int(number[6:8]), int(number[8:10]), int(number[10:12]))
    except ValueError:
        return False
    return True


_CARD_WORD = re.compile(r"(?i)\bcard\b|卡号|银行卡|信用卡|借记卡")
_NAMES_A_NUMBER = re.compile(r"(?i)\b(?:no|number|num|nr|code|id)\b|号")


def _card_named_before(text: str, start: int, label: str) -> bool:
    """The card word earlier in the clause, and the label names no number of its own."""
    if _NAMES_A_NUMBER.search(label):
        return False
    before = text[max(0, start - 80) : start]
    clause = SENTENCE_END.split(before)[-1] if SENTENCE_END.search(before) else before
    return _CARD_WORD.search(clause) is not None


def cards(text: str) -> Iterator[Detection]:
    """Every payment card number (issuer range, length, Luhn) not named as something else."""
    # Copied from web pages, numbers come with no-break spaces (same length).
    text = text.replace("\xa0", " ").replace("\u202f", " ")
    ibans: list[tuple[int, int]] | None = None  # found once, when a card needs it
    for run in _DIGIT_RUN.finditer(text):
        groups = [(g.start(), g.end()) for g in _GROUP.finditer(text, run.start(), run.end())]
        for start, end in _card_spans(text, groups):
            label = NOT_AN_IDENTIFIER_BEFORE.search(text, max(0, start - 24), start)
            # "Kasimira's card for the fleece order: 4437 …" names a card, and the order
            # only what it pays; "order number: …" names the number itself.
            if label is not None and not _card_named_before(text, start, label.group()):
                continue
            # Digits inside an IBAN-shaped string (valid or not) are its account number.
            if ibans is None:
                ibans = [(m.start(), m.end()) for m in IBAN_SHAPE.finditer(text)]
            if any(s < start and end <= e for s, e in ibans):
                continue
            yield Detection(Category.CARD_NUMBER, start, end)


def ibans(text: str) -> Iterator[Detection]:
    """Every IBAN that passes mod 97 (in lower case too, right after the word "IBAN")."""
    if "iban" in text.lower():
        for named in _IBAN_AFTER_WORD.finditer(text):
            value = named.group("value")
            end = _valid_iban_length(value.upper())
            if value != value.upper() and end:
                yield Detection(Category.IBAN, named.start("value"), named.start("value") + end)
    position = 0
    while (match := IBAN_SHAPE.search(text, position)) is not None:
        position = match.start() + 1
        end = _valid_iban_length(match.group())
        if end:
            yield Detection(Category.IBAN, match.start(), match.start() + end)
            position = match.start() + end


def _valid_iban_length(raw: str) -> int:
    """The length of the longest prefix that is a valid IBAN (0: none).

    The shape may run on into the next word or the next IBAN; the search goes on
    right after the IBAN found.
    """
    for end in range(len(raw), 14, -1):
        if raw[end - 1] != " " and stdnum_iban.is_valid(raw[:end].replace(" ", "")):
            return end
    return 0


def passports(text: str) -> Iterator[Detection]:
    """Every passport number near a word that says it is one, or in a passport column."""
    if "P" in text:
        for match in _ICAO_PASSPORT.finditer(text):
            yield Detection(Category.PASSPORT, match.start("value"), match.end("value"))
    if "<<" in text:
        yield from _machine_readable(text)
    lowered = text.lower()
    if _MANIFEST_STEM.search(lowered):
        yield from _listed_with_names(text)
    if _CHINESE_PASSPORT_SHAPE.search(text):
        yield from _chinese_passports(text)
    if "PP" not in text and not _PASSPORT_STEM.search(lowered):
        return
    for word in _PASSPORT_WORD.finditer(text):
        # The numbers that follow the word in its sentence ("passports E29799765 and
        # G88040687"), within a short reach, or the one right before it.
        reach = text[word.end() : word.end() + 80]
        end = SENTENCE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        numbers = list(_PASSPORT_NUMBER.finditer(text, word.end(), window_end))
        before = _PASSPORT_BEFORE.search(text, max(0, word.start() - 48), word.start())
        if before is not None:
            numbers.extend(_PASSPORT_NUMBER.finditer(text, before.start(1), before.end(1)))
        numbers.extend(_in_its_column(text, word))
        # The number alone on the next line: "用户：我护照号你记一下\n用户：EM9120857",
        # or the one number of an answer ("which passport did I use?\nYou told me X").
        following = _NEXT_LINE_NUMBER.match(text, window_end)
        if following is not None:
            numbers.extend(_PASSPORT_NUMBER.finditer(text, following.start(1), following.end(1)))
        elif (answer := _answer_line(text, word.start())) is not None:
            found = list(_PASSPORT_NUMBER.finditer(text, *answer))
            numbers.extend(found if len(found) == 1 else ())
        if before is None:
            numbers.extend(_shortly_before(text, word.start()))
        for number in numbers:
            value = number.group()
            if value.isdigit() and (len(set(value)) < 3 or _DATE_DIGITS.fullmatch(value)):
                continue
            yield Detection(Category.PASSPORT, number.start(), number.end())


# A crew list, a guest file, a passenger manifest: each person's name, then the number
# of the document they travel on ("crew list: Wouter SGHMZW9A3, …", "guest file: 尚文斌
# E24886958, 尤佩玲 EB7694348"), with no word for a passport.
_MANIFEST = re.compile(
    r"(?i)\b(?:crew|guests?|passengers?|manifest|travell?ers?|boarding list|check-in list)\b"
    r"|乘客|旅客|客人|住客|船员|机组|名单|入住登记"
)
_MANIFEST_STEMS = (
    "crew", "guest", "passenger", "manifest", "travel", "boarding", "check-in", "乘客", "旅客",
    "客人", "住客", "船员", "机组", "名单", "入住登记",
)  # fmt: skip
_MANIFEST_STEM = any_word(_MANIFEST_STEMS)
_NAME_THEN_NUMBER = re.compile(
    r"(?:(?<![\w'’])(?-i:[A-Z][a-z]{1,20})|(?<![\u4e00-\u9fff])[\u4e00-\u9fff]{2,4})[ \t]+"
    # Lettered and with two digits: "E24886958", "SGHMZW9A3"; not all digits (a phone's end).
    r"(?P<value>(?=[A-Z0-9]*[0-9][A-Z0-9]*[0-9])(?=[A-Z0-9]*[A-Z])[A-Z0-9]{8,9})(?![A-Za-z0-9])"
)


def _listed_with_names(text: str) -> Iterator[Detection]:
    """The passport numbers of a manifest's line: a name, then a number of a passport's shape."""
    for manifest in _MANIFEST.finditer(text):
        line_end = text.find("\n", manifest.end())
        line_end = len(text) if line_end < 0 else line_end
        for match in _NAME_THEN_NUMBER.finditer(text, manifest.end(), line_end):
            if NOT_AN_IDENTIFIER_BEFORE.search(
                text, max(0, match.start() - 4), match.start("value")
            ):
                continue  # "guests: Booking BK2024117": not a name before it
            yield Detection(Category.PASSPORT, match.start("value"), match.end("value"))


# A Chinese passport's number (E and eight digits, or E, a letter and seven) has a shape of
# its own: it is one right after a person's name ("学生表：邢梓淇 E47300860", "buyer
# file: Sheng Hailong, E50885338") or in an identity check ("KYC：3502…1937，E22996676").
# Hong Kong's and Macao's SAR passports: K or H (Hong Kong), MA (Macao) and digits.
_CHINESE_PASSPORT = (
    r"(?P<value>(?:E(?:[0-9]{8}|[A-HJ-NP-Z][0-9]{7})|[GKH][0-9]{8}|MA[0-9]{7}))(?![A-Za-z0-9])"
)
# The common Chinese surnames (simplified and traditional): a name starts with one.
_SURNAMES = (
    "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何高林罗羅郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧"
    "曹彭曾肖萧蕭田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范範金石廖贾賈"
    "夏韦韋付傅方白邹鄒孟熊秦邱江尹薛闫閆段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔"
    "向汤湯邢费費荀翁俸游阮柳欧歐司诸諸上尚尤易乔喬裴庞龐樊兰蘭殷施洪甘左祝纪紀季温溫岳鲁魯葛伍"
    "单單聂聶章鲍鮑舒安齐齊童包卓蒙凌辜麦麥庞龐冼區区岑霍关關伍翟戚鄺邝"
)
# A name: a given name and a surname, or two to four characters from a Chinese surname
# ("欧阳明月"). Not a number that is a date ("取号单 E20260318": a queue ticket of 18
# March 2026).
_CHINESE_PASSPORT_SHAPE = re.compile(r"[EGKHM][0-9A-Z][0-9]{7}")
_CHINESE_PASSPORT_AFTER_A_NAME = re.compile(
    rf"(?:(?<![\w'’])[A-Z][a-z]{{1,20}} [A-Z][a-z]{{1,20}}"
    rf"|(?<![\u4e00-\u9fff])[{_SURNAMES}][\u4e00-\u9fff]{{1,3}})"
    rf"[ \t]*[,，]?[ \t]*{_CHINESE_PASSPORT}"
)
_CHINESE_PASSPORT_IN_AN_IDENTITY_CHECK = re.compile(
    rf"(?i:\bKYC\b|实名|证件|身份)[^\n。；]{{0,40}}?(?<![A-Za-z0-9]){_CHINESE_PASSPORT}"
)


def _chinese_passports(text: str) -> Iterator[Detection]:
    for pattern in (_CHINESE_PASSPORT_AFTER_A_NAME, _CHINESE_PASSPORT_IN_AN_IDENTITY_CHECK):
        for match in pattern.finditer(text):
            if NOT_AN_IDENTIFIER_BEFORE.search(
                text, max(0, match.start() - 4), match.start("value")
            ):
                continue  # "订单 E20240117", "Order E12345678": not a name before it
            if _DATE_DIGITS.fullmatch(match.group("value")[1:]):
                continue  # "取号单 E20260318": a ticket named by its day
            yield Detection(Category.PASSPORT, match.start("value"), match.end("value"))


def _answer_line(text: str, word_start: int) -> tuple[int, int] | None:
    """The span of the three lines after the word's line, when the word's line asks a question.

    The answer may come after another turn (the assistant asks "the Irish one?", the user
    answers "yes — YC9847776"); the caller takes it only if it is the one number there.
    """
    line_start = text.rfind("\n", 0, word_start) + 1
    line_end = text.find("\n", word_start)
    if line_end < 0 or not _ASKS.search(text, line_start, line_end):
        return None
    end = line_end
    for _ in range(3):
        next_end = text.find("\n", end + 1)
        end = next_end if next_end >= 0 else len(text)
        if next_end < 0:
            break
    return line_end + 1, end


_ASKS = re.compile(r"[?？]|(?i:\b(?:need|give me|tell me|confirm|provide) your\b)")


# The machine-readable zone of a passport (ICAO 9303, TD3): line 1 "P<KEN…", line 2
# the number (9 characters, "<"-padded), a check digit, nationality, birth date …
_MRZ = re.compile(
    r"(?m)^P[A-Z<][A-Z<]{3}[A-Z<]{30,45}[ \t]*\r?\n"
    r"(?P<number>[A-Z0-9<]{9})[0-9][A-Z<]{3}[0-9]{6}[0-9][MFX<][0-9]{6}[0-9]"
)


def _machine_readable(text: str) -> Iterator[Detection]:
    """The passport number of a machine-readable zone (line 1 "P<…", line 2 its number).

    Both lines' shapes are specific enough: a number whose check digit fails (a typo,
    a retyped scan) is still the passport's and is masked.
    """
    for match in _MRZ.finditer(text):
        value = match.group("number").rstrip("<")
        start = match.start("number")
        yield Detection(Category.PASSPORT, start, start + len(value))


def _shortly_before(text: str, word_start: int) -> Iterator[re.Match[str]]:
    """The last lettered passport number in the 60 characters before the word, same sentence."""
    window_start = max(0, word_start - 60)
    ends = [end.end() for end in SENTENCE_END.finditer(text, window_start, word_start)]
    start = ends[-1] if ends else window_start
    numbers = list(_LETTERED_NUMBER.finditer(text, start, word_start))
    if numbers and not NOT_AN_IDENTIFIER_BEFORE.search(
        text, max(0, numbers[-1].start() - 24), numbers[-1].start()
    ):
        yield numbers[-1]


def _in_its_column(text: str, word: re.Match[str]) -> Iterator[re.Match[str]]:
    """The passport numbers under a header cell that names them (CSV, TSV, a table)."""

    def names_passports(cell: str) -> bool:
        return _PASSPORT_WORD.search(cell) is not None

    for start, end in cells_under(text, word.start(), word.end(), names_passports):
        number = _PASSPORT_NUMBER.fullmatch(text, start, end)
        if number is not None:
            yield number


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
    ((60, 60), 2, frozenset({16})),  # RuPay (and Discover's 6011)
    ((82, 82), 2, frozenset({16})),
    ((508, 508), 3, frozenset({16})),
    ((9792, 9792), 4, frozenset({16})),  # Troy
    ((8600, 8600), 4, frozenset({16})),  # UzCard
    ((9860, 9860), 4, frozenset({16})),  # Humo
    ((636, 639), 3, frozenset({16, 17, 18, 19})),  # InterPayment, InstaPayment
    ((1, 1), 1, frozenset({15})),  # UATP (airline accounts)
)
# A word that names a payment card, in the 40 characters before the number: then any
# issuer range counts (new or national schemes), with the Luhn check.
_CARD_WORD = re.compile(
    r"(?i)\b(?:cards?|karte|carte|tarjeta|cart[ãa]o|carta|kart\w*|karty?|kaart|kortti|kort"
    r"|kártya|debit|credit|visa|mastercard|amex|rupay|troy|elo|verve|unionpay|jcb|maestro"
    r"|discover|diners|uatp|pan|thẻ|atm|bancontact|girocard|interac|eftpos|meeza|belkart|cabal"
    r"|napas|mada|mir|gpn|prostir)\b|κάρτα|карт[аыуе]|картк[аиуі]|картц|ПРОСТІР|بطاقة|כרטיס|บัตร|卡|카드|カード"
)
# Cards that are not payment cards: SIM cards (ICCIDs start with 89), library cards.
_NOT_A_PAYMENT_CARD = re.compile(r"(?i)\b(?:sim|iccid|library|membership|loyalty)\b|sim卡")


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
            if not _grouped_like_a_card(raw):
                continue
            if not (_is_card_number(number) or _named_card(text, start, number)):
                continue
            if taken and taken[-1][0] == start:
                taken[-1] = (start, end)  # the longest card from the same first group
            elif all(end <= s or start >= e for s, e in taken):
                taken.append((start, end))
    yield from sorted(taken, key=lambda span: span[0])


def _named_card(text: str, start: int, digits: str) -> bool:
    """A number the text calls a card, whatever its issuer range, that passes Luhn."""
    if not 13 <= len(digits) <= 19 or not digits.isdigit() or digits.startswith("89"):
        return False
    before = text[max(0, start - 60) : start]
    if not _CARD_WORD.search(before) or _NOT_A_PAYMENT_CARD.search(before):
        return False
    return bool(luhn.is_valid(digits))


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
