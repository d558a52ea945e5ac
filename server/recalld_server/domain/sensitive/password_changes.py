"""A secret changed from one value to another: both values are passwords.

"changed the shop alarm from 5391 to 8426", "swapped Vosburgh2024! for
Hiring-Heron-88 on the ATS login", "the door code was 2931, now 8054", "把门锁从 551276
改成了 903847". The old value is as much a secret as the new one (people reuse them),
and neither follows a word that says what it is, so the rules that read "password is"
find at most one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_codes import NOT_A_SECRET_CODE
from recalld_server.domain.sensitive.password_values import (
    DASHED_COMBINATION,
    LETTERED_CODE,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import Detection, Rule, any_word, line_around

# A value between spaces, or ended by Chinese or list punctuation.
_VALUE = r"[^\s，。,;；、()（）\"“”]{3,40}?"
# "!", "?" and "." end a value only where a sentence ends: "now it's Westray!Lass24".
_END = r"(?=[\s,;:，。；：！？]|[.!?](?:\s|$)|$)"
# In Chinese the value may touch the characters around it: "从551276改成了903847".
_LATIN_VALUE = r"[\x21-\x7e]{3,40}(?![\x21-\x7e])"
_CHANGES = (
    # "from 5391 to 8426", "went from 4412 to 7780", "from Prime-wq-2021 into …".
    re.compile(
        rf"(?i)\bfrom\s+(?:the\s+)?(?:(?:factory|default|old|original|previous)\s+(?:one\s+)?)?"
        rf"(?P<old>{_VALUE}){_END}[,]?\s+(?:to|into)\s+(?P<new>{_VALUE}){_END}"
    ),
    # "l'ancien lise1962beauce, le nouveau Sirop!Erable#63", "old Carer-Shift-01，new …".
    re.compile(
        rf"(?i)(?:\bl['’]ancien|\bancien|\bold|\balt|旧的?|舊的?)\s*[:：]?\s*(?P<old>{_VALUE}){_END}"
        r"\s*[,，;；]\s*(?:\ble nouveau|\bnouveau|\bnew|\bneu|新的?)\s*[:：]?\s*"
        rf"(?P<new>{_VALUE}){_END}"
    ),
    # "swapped Vosburgh2024! for Hiring-Heron-88", "replaced the old code 0193 with 7264".
    re.compile(
        rf"(?i)\b(?:swapped|swap|traded|replaced|replace)\s+(?:[\w'-]+\s+){{0,4}}?"
        rf"(?P<old>{_VALUE}){_END}"
        rf"\s+(?:for|with)\s+(?:a\s+new\s+one,?\s+)?(?P<new>{_VALUE}){_END}"
    ),
    # "was 2931, now 8054", "used to be 1144; it's 6702 now".
    re.compile(
        rf"(?i)\b(?:was|used to be)\s+(?P<old>{_VALUE}){_END}[,;]?\s+(?:and\s+|but\s+)?"
        rf"(?:it'?s\s+|is\s+)?now\s+(?P<new>{_VALUE}){_END}"
    ),
    re.compile(
        rf"(?i)\bused to be\s+(?P<old>{_VALUE}){_END}[,;]\s+(?:it'?s|it is)\s+(?P<new>{_VALUE})"
        rf"\s+now\b"
    ),
    # "was ferry2023 until the auditors saw it; now it's Westray!Lass24".
    re.compile(
        rf"(?i)\b(?:was|used to be)\s+(?P<old>{_VALUE}){_END}\s+until\b[^\n;.]{{1,60}}?[;,.]\s*"
        r"(?:and\s+|but\s+)?(?:now\s+(?:it'?s|it is)\s+|it'?s\s+now\s+|now\s+)"
        rf"(?P<new>{_VALUE}){_END}"
    ),
    # "从 551276 改成了 903847", "由 cq888888 换成 Huoguo#2027".
    re.compile(
        rf"(?:从|由)\s*(?P<old>{_LATIN_VALUE})\s*(?:改成|换成|改为|换为|变成|变为|改到|更新为|更新成)了?"
        rf"\s*(?P<new>{_LATIN_VALUE})"
    ),
    # "原来是 admin123，现在改成 Szfab@0912", "旧的 gaowq2016home 作废，新的 Tregarthen@5G".
    re.compile(
        rf"(?:原来是?|以前是?|之前是?|旧的?(?:是|为)?)\s*(?P<old>{_LATIN_VALUE})\s*[，,；;]?"
        rf"[^\n。；;]{{0,8}}?(?:现在|新的?)(?:改成|换成|改为|换为|是|为)?了?\s*[:：]?\s*"
        rf"(?P<new>{_LATIN_VALUE})"
    ),
    # "思茗不再用 siming123456 了，新的登录密码是 Sm!Jm_Tea_07", "she stopped using
    # Kettle1987 and the new one is Heron!Moor_24": a value given up, then its successor.
    re.compile(
        rf"(?:不再用|不用了?|停用了?|弃用了?|棄用了?)\s*(?P<old>{_LATIN_VALUE})\s*了?[，,；;]?"
        rf"[^\n。；;]{{0,8}}?新的?[^\n。；;\x21-\x7e]{{0,10}}?(?:是|为|為|[:：])\s*(?P<new>{_LATIN_VALUE})"
    ),
    re.compile(
        rf"(?i)\b(?:no longer uses?|stopped using|retired|dropped)\s+(?P<old>{_VALUE}){_END}"
        r"(?:\s+(?:for|on|as)\s+[^\n,;.]{1,40}?)?[,;.]?\s+(?:and\s+)?(?:the\s+|her\s+|his\s+|their\s+)?new\s+"
        rf"(?:one|password|passcode|pin|code)?\s*(?:is\b|:)\s*(?P<new>{_VALUE}){_END}"
    ),
)
# What the values must be the values of, said in the same line.
_SECRET = re.compile(
    r"(?i)\b(?:passwords?|passcodes?|passphrases?|passwd|pwd|pins?|codes?|combination|combo"
    r"|logins?|log-ins?|sign-ins?|admin|locks?|padlocks?|alarms?|safes?|gates?|doors?|keypads?"
    r"|lock ?box(?:es)?|key ?safes?|key ?box(?:es)?|wi-?fi|wpa2?|router|mot de passe)\b"
    r"|密码|口令|锁|门禁|无线|wifi|WiFi"
)
# What else changes from one number to another: times, prices, scores, rooms, versions.
_NOT_A_SECRET = re.compile(
    r"(?i)\b(?:score|price|prices|rate|rates|cost|fee|rent|salary|budget|room|seat|gate [A-Z]"
    r"|flight|platform|version|release|build|phone|mobile|number|extension|size|weight"
    r"|temperature|speed|limit|time|meeting|appointment|order|ticket|invoice|case|firmware)\b"
    r"|价格|房间|航班|版本|电话|手机号|号码|订单|时间"
)
_YEAR = re.compile(r"(?:19|20)\d\d")
# A version ("v2.1.8", "14.4.1") is no secret, whatever changed to it.
_VERSION = re.compile(r"(?i)v?\d+(?:\.\d+)+[a-z]?")


def _value(value: str) -> str | None:
    """The value as a password, without what ends a sentence; None if it is not one."""
    value = value.rstrip(TRAILING)
    if _VERSION.fullmatch(value):
        return None
    if value.isdigit():
        return value if 4 <= len(value) <= 8 else None
    if DASHED_COMBINATION.fullmatch(value) or LETTERED_CODE.fullmatch(value):
        return value
    # Made up: "Hiring-Heron-88", "Tregarthen@5G", "admin123".
    return value if looks_made_up(value) and could_be_a_password(value) else None


def _changed_secrets(text: str) -> Iterator[Detection]:
    """The old and the new value of a password, a PIN or a lock's code that changed."""
    if not _SECRET.search(text):
        return  # each value's line must name a secret: none does
    for pattern in _CHANGES:
        for match in pattern.finditer(text):
            line = line_around(text, match.start(), match.end())
            if not _SECRET.search(line) or _NOT_A_SECRET.search(line):
                continue
            if NOT_A_SECRET_CODE.search(line):
                continue
            old, new = _value(match.group("old")), _value(match.group("new"))
            if old is None or new is None:
                continue
            if _YEAR.fullmatch(old) and _YEAR.fullmatch(new):
                continue  # "the alarm was fitted in 2019, now 2024 …"
            yield Detection(Category.PASSWORD, match.start("old"), match.start("old") + len(old))
            yield Detection(Category.PASSWORD, match.start("new"), match.start("new") + len(new))


_CHANGE_WORDS = (
    "from",
    "swap",
    "replace",
    "traded",
    "now",
    "从",
    "由",
    "原来",
    "以前",
    "之前",
    "旧",
    "舊",
    "不再",
    "不用",
    "停用",
    "弃用",
    "棄用",
    "no longer",
    "stopped",
    "retired",
    "dropped",
)
_CHANGE_WORD = any_word(_CHANGE_WORDS)

RULES: tuple[Rule, ...] = (
    (
        lambda text, low: (
            _CHANGE_WORD.search(low) is not None
            or (
                ("old" in low or "alt" in low or "ancien" in low)
                and ("new" in low or "neu" in low or "nouveau" in low)
            )
        ),
        _changed_secrets,
    ),
)
