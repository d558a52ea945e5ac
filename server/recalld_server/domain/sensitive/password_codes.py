"""Codes that open something: a lock, a safe, a key safe, an alarm panel, an archive.

Stated with what they open ("the code for the garage door is 5512", "office safe:
31-07-55", "the zip … is protected: …"), keyed in ("key in 1966"), in Chinese
("保险柜：48-17-33"), or given as the answer to a question about a code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_values import (
    CLAUSE_END,
    DASHED_COMBINATION,
    KEYED_PIN,
    LETTERED_CODE,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import (
    Detection,
    Rule,
    answered_below,
    any_word,
    cells_under,
    line_around,
)

# A question about a code or a PIN, answered on the next line ("what's the garage door
# code again?\nA: 7391 then the hash key").
_CODE_QUESTION = re.compile(
    r"(?im)^[^\n]*(?:\bcode\b|\bpin\b|passcode|combination|密码|门锁|门禁|挂锁|暗証番号|비밀번호)"
    r"[^\n]{0,40}[?？]"
    r"|^[^\n]*\bremind me\b[^\n]{0,40}(?:\bcode\b|\bpin\b|passcode)[^\n]*"
)
# Codes that are not secrets: what a shop, a parcel or a sign-in sends.
NOT_A_SECRET_CODE = re.compile(
    r"(?i)promo|discount|coupon|voucher|gift|tracking|zip|postal|post ?code|area|country"
    r"|error|status|verification|confirm|booking|reference|referral|invite|invitation|tax"
    r"|product|dial|region|qr|bar ?code|验证码|邮编|区号"
)
# A lock's code: "the code for the garage door is 5512", "the safe combination:
# 12-34-56", "her locker opens with 3391", "the archive unlocks with Tax2024!Rivera".
_LOCK = (
    r"(?:alarm|lock|padlock|safe|locker|door|gate|garage|keypad|shed|vault|lockbox|keybox"
    r"|barrier|cabinet|cupboard|drawer)s?"
)
# A Chinese safe or lock (simplified or traditional), a colon or a space, its
# combination: "衣帽间保险柜：48-17-33", "冷库门上的挂锁 4719", "冷凍庫的大鎖 9053",
# "手機螢幕鎖 168529"; a door with a code and the hash key ("辦公室的門 1105#").
_CHINESE_LOCK = re.compile(
    r"(?:(?:保[险險](?:柜|櫃|箱)|密[码碼](?:箱|[锁鎖])|[挂掛][锁鎖]|[门門][锁鎖]|[门門]禁|指[纹紋][锁鎖]"
    r"|智能[锁鎖]|[卷捲][帘簾]?[门門]|[车車]庫?库?[门門]|[储儲]物(?:柜|櫃)|更衣(?:柜|櫃)|大[锁鎖]"
    r"|(?:屏幕|螢幕|萤幕|荧幕)[锁鎖]|[锁鎖]屏|儿童[锁鎖]|兒童[锁鎖]|童[锁鎖])"
    r"(?:[^\n，。；]{0,12}?[:：]\s*|\s*(?:是|为|為)\s*|\s+)"
    r"|(?<=[的间間室])[门門]\s+(?=[0-9]{4,8}#)"
    # "boot room 门 code 2597#": the door's code in words of both languages.
    r"|[门門][ \t]*(?i:code|pin)[ \t]*(?:是|为|為|[:：])?[ \t]*)"
    r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-])|[0-9]{4,8}#?(?![\w-]))"
    # Not a count or an amount: "保险箱 2000 元".
    r"(?!\s*[年月日号號点點岁歲个個次位份元块塊万萬开開关關到至])"
)
# What one presses at a lock: "卷帘门按 170825 再按确认键", "门禁按 4471#".
_PRESSED_AT_A_LOCK = re.compile(
    r"(?:[门門]|[锁鎖]|门禁|門禁|卷帘|捲門)[^\n，。；,;]{0,4}?按\s*(?P<value>[0-9]{4,8}#?)(?![0-9])"
    r"(?!\s*[年月日号號点點岁歲个個次位份元块塊万萬楼樓层層])"
)
# What a lock or a freezer's code was changed to: "冷凍庫換成 7140", "门锁改成了 5820".
_CHINESE_CODE_CHANGED = re.compile(
    r"(?:[锁鎖]|[门門]禁|冷[冻凍]庫|冷[冻凍]库|冷库|冷庫|冰柜|冰櫃|保[险險](?:柜|櫃|箱))"
    r"(?:的?密[码碼])?(?:[换換改]成了?|[改设設][为為]|[设設]成)\s*"
    r"(?P<value>[0-9]{4,8}#?)(?![0-9.])(?!\s*[年月日号號点點度岁歲个個次位份元块塊万萬])"
)
# A code spelled out in Chinese numerals: "教研室门锁改成八八六六二零了", "密码是幺三五七九二".
_CHINESE_NUMERAL_CODE = re.compile(
    r"(?:密码|口令|门锁|门禁|挂锁|保险柜|保险箱|密码锁)[^\n，。；？?]{0,6}?"
    r"(?:是|为|改成了?|换成了?|设成了?|设为|[:：])\s*[“\"「]?"
    r"(?P<value>[零〇一二三四五六七八九幺两]{4,8})(?![零〇一二三四五六七八九十百千万亿年月日号个位次])"
)
_LOCK_VALUE = r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-])|[\x21\x23-\x26\x28-\x7e]{3,})"
_LOCK_CODES = (
    re.compile(
        rf"(?i)\b(?:code|combination|combo)\s+(?:for|to|of|on)\s+(?:[\w'-]+\s+){{0,3}}?{_LOCK}\b"
        # Where the lock is: "the code for the key safe at the holiday cottage is 6184".
        r"(?:\s+(?:at|in|on|by|near|behind|outside|inside|of|by)\s+(?:[\w'-]+\s+){0,4}?[\w'-]+)?"
        rf"\s*(?:\b(?:is|was)\b|:|=|[—–])\s*{_LOCK_VALUE}"
    ),
    re.compile(
        rf"(?i)\b{_LOCK}\s+(?:combination|combo)\b\s*(?:\b(?:is|was)\b|:|=)?\s*{_LOCK_VALUE}"
    ),
    # "office safe: 31-07-55 (left, right, left)": a combination's dashed shape only.
    re.compile(rf"(?i)\b{_LOCK}[:：]\s*(?P<value>[0-9]{{1,3}}(?:-[0-9]{{1,3}}){{2,3}}(?![\w-]))"),
    # "Disney+ profile lock for the kids' profile: 6648", "street door: 2413A": a PIN, or
    # one with a letter, right after a colon; a locker's number is left alone.
    re.compile(
        r"(?i)\b(?:alarm|lock|padlock|safe|door|gate|garage|keypad|shed|vault|lock ?box"
        r"|key ?box|key ?safe|barrier)s?\b[^.\n;:：]{0,60}?[:：][ \t]*"
        r"(?P<value>[0-9]{4,8}|(?=[0-9A-Z]{5,7}(?![\w-]))[0-9]*[A-Z][0-9]*"
        # "the cold store padlock behind the kitchen: 3-7-1-9".
        r"|[0-9]{1,3}(?:-[0-9]{1,3}){2,3})(?![\w-])"
    ),
    # "the padlock on the storage unit is 3-7-21": a combination's dashed shape only;
    # digits alone are a locker's number as often as its code ("locker number is 9902").
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?\b(?:is|was)\s+"
        r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-]))"
    ),
    # "the hotel room safe is set to 2404": a code is what a lock is set to.
    # "the hotel safe in Lisbon, we set it to 240815", "hotel safe in Kyoto 设成了 0811".
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?(?:\b(?:is\s+|was\s+)?(?:set|changed|reset)"
        r"(?:\s+it)?\s+to\s+|(?:设成了?|设为|設成了?|設為|改成了?|设的是|設的是)\s*)"
        r"(?P<value>[0-9]{3,8}(?![\w-])|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-]))"
    ),
    # "Chenxi set the hotel-room safe in Vancouver to 1127": set, the lock, then its code.
    re.compile(
        rf"(?i)\b(?:set|changed|reset)\s+(?:the\s+|her\s+|his\s+|my\s+|our\s+)?"
        # Not an alarm: "we set the alarm to 0630" is a clock's.
        rf"(?:[\w'-]+\s+){{0,3}}?(?!alarm){_LOCK}\b(?:\s+(?:in|at|on)\s+[\w'-]+(?:\s+[\w'-]+){{0,2}}?)?"
        r"\s+to\s+(?P<value>[0-9]{4,8}(?![\w-])|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-]))"
    ),
    # "the key safe at the spaniel's house is 7249, back gate latch sticks": a box that
    # only a code opens, and digits that end the clause ("the safe was 1500 dollars" is
    # a price).
    re.compile(
        r"(?i)\b(?:key ?safe|lock ?box|key ?box|padlock|safe)\b[^.\n;:]{0,40}?\b(?:is|was)\s+"
        # "Walter's key safe at his bungalow is on 1415": the number its dials are on.
        rf"(?:on\s+)?(?P<value>[0-9]{{4,8}})(?={CLAUSE_END})"
    ),
    # "safe 的 code 是 281947": a lock's code in Chinese word order.
    re.compile(
        rf"(?i)\b{_LOCK}\s*的?\s*(?:code|pin|combination|密码|口令)\s*(?:是|为|[:：])\s*"
        r"(?P<value>[0-9]{4,8}(?![\w-])|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-])"
        # "defibrillator cabinet 的 code 是 C129X": a letter before or after the digits.
        r"|(?=[0-9A-Z]{4,7}(?![\w-]))[A-Z]?[0-9]{3,6}[A-Z]?)"
    ),
    # "base door now C5830", "the side gate is now 4471", "bait freezer now 8163": what
    # the code of a door, or of what is kept locked, changed to.
    re.compile(
        r"(?i)\b(?:door|gate|shed|garage|barrier|padlock|key ?safe|lock ?box|freezer|locker"
        r"|cabinet|cupboard|storeroom|store room|safe)\s+(?:is\s+)?now\s+"
        r"(?P<value>[0-9]{4,8}|(?=[0-9A-Z]{4,7}(?![\w-]))[A-Z]?[0-9]{3,6}[A-Z]?)"
        rf"(?={CLAUSE_END})"
    ),
    # "keeps the office safe at 19-84-07": a combination's dashed shape, what it is set at.
    re.compile(
        r"(?i)\b(?:safe|padlock|lock|combination)\s+(?:is\s+|was\s+)?(?:set\s+|kept\s+|left\s+)?"
        r"at\s+(?P<value>[0-9]{1,2}(?:-[0-9]{1,2}){2,3})(?![\w-])"
    ),
    # "the engineer menu on the ticket machine opens with 58315": a PIN that opens a
    # device's menu or an app, ending its clause ("the file opens with 2024 data" is none).
    # "the instructors' ski room at the lift opens with 1924B": a room kept locked, with
    # a keypad's code, a letter at either end.
    re.compile(
        r"(?i)\b(?:menu|machine|app|tablet|laptop|phone|screen|terminal|till|kiosk|cabinet"
        r"|cupboard|drawer|locker|folder|room|storeroom|freezer|pc|computer|payslips?|i?mac"
        r"|macbook|ipad|desktop|workstation|console"
        r"|pdfs?|files?)\b[^.\n;]{0,50}?"
        r"\b(?:opens?|unlocks?)\s+with\s+(?:the\s+(?:code|pin|passcode|password)\s+)?"
        # A PIN, a keypad's code with a letter, or a made-up value ("the assessment-day
        # laptop unlocks with Assess!Day19"; _lock_codes wants a digit in it).
        r"(?P<value>[0-9]{4,8}|(?-i:(?=[0-9A-Z]{4,7}(?![\w-]))[A-Z]?[0-9]{3,6}[A-Z]?)"
        r"|(?-i:(?=[0-9A-Z]{5,7}(?![\w-]))[0-9]*[A-Z][0-9]*)"
        r"|(?-i:(?=[A-Za-z0-9!#$%&*+.@^_~-]*[0-9])(?=[A-Za-z0-9!#$%&*+.@^_~-]*[A-Za-z])"
        r"[A-Za-z0-9!#$%&*+.@^_~-]{6,40}))"
        rf"(?={CLAUSE_END}|\s+on\s+the\s+(?:[\w-]+\s+)?keypad\b)"
    ),
    # "garage 8831 then the star key; side-gate padlock 0720": a PIN right after what it
    # opens, ending its clause.
    re.compile(
        r"(?i)\b(?:garage|padlock|keypad|alarm|lock ?box|key ?safe)\s+(?P<value>[0-9]{4,8})"
        rf"(?={CLAUSE_END})"
    ),
    # "clubhouse alarm: key in 1966 then OFF", "the server room door takes 935171": what
    # is keyed into a panel.
    re.compile(
        r"(?i)\b(?:alarm|keypad|key ?safe|lock ?box|door|gate)\b[^.\n;]{0,30}?"
        r"\b(?:key in|punch in|type in|tap in|enter|takes)\s+(?P<value>[0-9]{4,8})(?![\w-])"
    ),
    # "the lock box at 14 Glenfarg Road: code 2719", "key safe by the back door, code 2803".
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?[:：,，]\s*(?:the\s+)?(?:code|pin|combination|combo)\b"
        rf"\s*(?:\b(?:is|was)\b|:|=)?\s*{_LOCK_VALUE}"
    ),
    re.compile(
        rf"(?i)\b(?:{_LOCK}|zip|archive|pdf|rar|7z)s?\b[^.\n;]{{0,50}}?\b(?:opens?|unlocks?)\s+with"
        rf"\s+(?:the\s+(?:code|combination|password)\s+)?{_LOCK_VALUE}"
    ),
    # "the zip with the tenant's references is protected: Refs_Flat3_2026".
    re.compile(
        r"(?i)\b(?:zip|archive|pdf|rar|7z|file|folder|document|spreadsheet)s?\b[^.\n;]{0,40}?"
        rf"\b(?:password[- ])?protected\b(?:\s+with)?\s*[:：]?\s+{_LOCK_VALUE}"
    ),
)
# What sets or unsets an alarm: "full set is 5180 then the tick button", "set and unset
# with 9150", "to unset the house alarm type 6730", "normal disarm 8306".
_ALARM_SETTING = re.compile(
    r"(?i)\b(?:unset|disarm|set and unset|arm and disarm|full set|part set|night set)\b"
    r"[^.\n;:]{0,30}?(?:\b(?:with|type|enter|key in|punch in|is|using)\b|:)?\s*"
    rf"(?P<value>[0-9]{{4,8}})(?={CLAUSE_END})"
)
_ALARM = re.compile(r"(?i)\balarm|\bpanel\b|\bkeypad\b|\bduress\b")


_SETS_AN_ALARM = re.compile(r"unset|disarm|(?:full|part|night) set|set and")


def _alarm_settings(text: str) -> Iterator[Detection]:
    """A PIN that sets or unsets an alarm, in a line about one ("the unset values" are not)."""
    for match in _ALARM_SETTING.finditer(text):
        if _ALARM.search(line_around(text, match.start(), match.end())):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# The words that name what a lock code opens (the trigger of _lock_codes).
_LOCK_WORDS = (
    "code", "combination", "combo", "open", "unlock", "lock", "safe", "protected", "alarm",
    "keypad", "box", "door", "gate", "cabinet", "cupboard", "drawer", "shed", "garage", "barrier",
)  # fmt: skip
_LOCK_WORD = any_word(_LOCK_WORDS)


_CHINESE_LOCK_WORDS = (
    "锁",
    "鎖",
    "保险",
    "保險",
    "密码",
    "密碼",
    "门禁",
    "口令",
    "门",
    "門",
    "柜",
    "櫃",
    "冷",
)
_CHINESE_LOCK_WORD = any_word(_CHINESE_LOCK_WORDS)
_COMBINATION = re.compile(r"[0-9]{3,8}|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}")


def _chinese_lock_codes(text: str) -> Iterator[Detection]:
    for pattern in (
        _CHINESE_LOCK,
        _CHINESE_NUMERAL_CODE,
        _CHINESE_CODE_CHANGED,
        _PRESSED_AT_A_LOCK,
    ):
        for match in pattern.finditer(text):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# Digits one must key in, in Chinese: "现在输 0523 然后按井号", "收银台要输 883322 才能退款".
_KEYED_IN_CHINESE = re.compile(
    r"输(?:入)?\s*[:：]?\s*(?P<value>[0-9]{4,8})(?![0-9.,:/])"
    # Not a count or a date: "输 2024 年的报表", "输 1000 个".
    r"(?!\s*[年月日号点岁个次位份元块])"
)
# What else is keyed in: a code sent for one use, a phone number, an amount, a room.
_KEYED_NOT_A_SECRET = re.compile(
    r"验证|校验|动态|短信|一次性|手机|电话|号码|金额|[元块]|订单|单号|快递|取件|房号|房间|门牌|楼号|工号|学号"
)


# A made-up value keyed in to start or sign in to something: "学习电脑，开机要输 Yinuo0905",
# "登微信要输 Yjh@cd1968".
_SIGN_IN_KEYED = re.compile(
    r"(?:开机|開機|登录|登錄|登入|登|解锁|解鎖|进入|進入)[^\n，。；,;]{0,10}?要?输(?:入)?\s*[:：]?\s*"
    r"(?P<value>[\x21\x23-\x26\x28-\x7e]{6,40})(?![\x21-\x7e])"
)


def _keyed_in_chinese(text: str) -> Iterator[Detection]:
    for match in _SIGN_IN_KEYED.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if looks_made_up(value) and could_be_a_password(value):
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
            )
    for match in _KEYED_IN_CHINESE.finditer(text):
        clause_start = max(text.rfind(mark, 0, match.start()) for mark in "\n。；;，,") + 1
        clause_end = min(
            (at for at in (text.find(mark, match.end()) for mark in "\n。；;，,") if at >= 0),
            default=len(text),
        )
        if not _KEYED_NOT_A_SECRET.search(text, clause_start, clause_end):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _codes_answered(text: str) -> Iterator[Detection]:
    """A PIN-length number answering a question about a code on the line before."""
    for question in _CODE_QUESTION.finditer(text):
        if NOT_A_SECRET_CODE.search(question.group()):
            continue
        for start, end in answered_below(text, question.start()):
            value = text[start:end].rstrip(".,;:!?)]}>”’\"'`。，；：！？）」")
            # Digits, with the keys pressed around them: "*2961#".
            if KEYED_PIN.fullmatch(value):
                yield Detection(Category.PASSWORD, start, start + len(value))
            break  # only the next line answers it


# A keypad's code with a letter at either end: "C129X", "B7712".
_EDGE_LETTERS = re.compile(r"(?=.{4,7}$)(?=.*[A-Z])[A-Z]?[0-9]{3,6}[A-Z]?")
_MORE_DIGITS = re.compile(r"[ \u00a0][0-9]")


def _lock_codes(text: str) -> Iterator[Detection]:
    """The code, combination or password that opens a lock, a safe or an archive."""
    for pattern in _LOCK_CODES:
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            # Digits ("3391", "12-34-56"), or a made-up word with digits in it; not a
            # date ("2024-05-01") or a program ("opens with Adobe-Reader").
            made_up = looks_made_up(value) and any(c.isdigit() for c in value)
            lettered = bool(LETTERED_CODE.fullmatch(value) or _EDGE_LETTERS.fullmatch(value))
            start = match.start("value")
            end = start + len(value)
            if value.isdigit() and _MORE_DIGITS.match(text, end):
                continue  # the first group of a longer number: "alarm …: 07956 210943"
            if (
                _COMBINATION.fullmatch(value)
                or lettered
                or (made_up and could_be_a_password(value))
            ):
                yield Detection(Category.PASSWORD, start, end)


# A table of codes: "| room | code |\n|---|---|\n| sample room | 8526 |". The column's
# header names a code; it is a lock's where the header names the lock, or another
# header names the place it opens ("room", "door", "site").
_CODE_HEADER = re.compile(
    r"(?i)(?:door|gate|lock|keypad|alarm|safe|key ?safe|lock ?box|entry|access|padlock)?"
    r"[ _]?(?:code|pin|combo|combination)s?|门禁|门锁|密码|門禁|門鎖|密碼"
    # A Chinese code of a role or a lock: "收银主管码", "开门码"; not a number one is
    # sent or shown (验证码, 取件码, 条码, 号码).
    r"|(?![^|,\t;]*(?:验证|驗證|取件|条|條|二维|二維|号|號|邮|郵|区|區|付款|收款))"
    r"[\u4e00-\u9fff]{0,6}[码碼]"
)
_NAMES_THE_LOCK = re.compile(
    r"(?i)door|gate|lock|keypad|alarm|safe|box|entry|access|padlock|门|門|锁|鎖|密"
)
_PLACE_HEADER = re.compile(
    r"(?i)^\s*(?:room|door|gate|site|building|entrance|unit|location|where|place|shed|locker"
    r"|box|safe|store|office|block|house|flat|property|cabin|branch|shop|门|門|房|室|仓|倉"
    r"|地点|位置|门店|門店|店|分店|网点)s?\s*$"
)
_HEADER_WORD = re.compile(
    r"(?i)\b(?:code|pin|combo|combination)s?\b|门禁|门锁|密码|門禁|門鎖|密碼|[\u4e00-\u9fff][码碼]"
)


def _names_a_place_code(cell: str) -> bool:
    return _CODE_HEADER.fullmatch(cell.strip()) is not None


def _names_a_lock_code(cell: str) -> bool:
    return _names_a_place_code(cell) and _NAMES_THE_LOCK.search(cell) is not None


def _code_columns(text: str) -> Iterator[Detection]:
    """The PINs under a header cell that names a lock's code."""
    for word in _HEADER_WORD.finditer(text):
        line_start = text.rfind("\n", 0, word.start()) + 1
        line_end = text.find("\n", word.end())
        header = text[line_start : line_end if line_end >= 0 else len(text)]
        cells = re.split(r"[,\t;|]", header)
        names_it = (
            _names_a_place_code if any(map(_PLACE_HEADER.match, cells)) else _names_a_lock_code
        )
        for start, end in cells_under(text, word.start(), word.end(), names_it):
            value = text[start:end]
            if KEYED_PIN.fullmatch(value) or DASHED_COMBINATION.fullmatch(value):
                yield Detection(Category.PASSWORD, start, end)


# Each rule beside the literal words it needs (see password_forms.passwords_elsewhere).
RULES: tuple[Rule, ...] = (
    (lambda text, low: _LOCK_WORD.search(low) is not None, _lock_codes),
    (
        lambda text, low: _CHINESE_LOCK_WORD.search(text) is not None,
        _chinese_lock_codes,
    ),
    (lambda text, low: "输" in text, _keyed_in_chinese),
    (
        lambda text, low: (
            ("set" in low or "disarm" in low) and _SETS_AN_ALARM.search(low) is not None
        ),
        _alarm_settings,
    ),
    (
        lambda text, low: "\n" in text and ("|" in text or "," in text or "\t" in text),
        _code_columns,
    ),
    (
        lambda text, low: "\n" in text and ("?" in text or "？" in text or "remind me" in low),
        _codes_answered,
    ),
)
