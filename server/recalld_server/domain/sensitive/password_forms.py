"""Passwords stated without their word right before them.

Before the word ("X is the wifi password"), as a sign-in pair ("mail / X", "admin:X"),
in basic auth, KeePass exports and Wi-Fi settings, as a lock's code, a passphrase of
plain words, an app password, or the PIN that answers a question about a code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_values import (
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import Detection, answered_below

# The value before the word: "uses sunflower1988 as the password", "X is the wifi password".
_PASSWORD_BEFORE_WORD = re.compile(
    rf"(?<![^\s\"'“‘`(（:：])(?P<value>{PASSWORD_CHARS}{{6,}})\s+(?:is|was|as)\s+"
    r"(?:(?:the|my|his|her|our|their|its)\s+)?(?:[\w-]+\s+){0,2}?(?:password|passcode|passphrase)\b"
    # "Gr33nhouse-Tomat0 — Bartholomew's Bitwarden master password".
    rf"|(?:^|(?<=\n))(?P<led>{PASSWORD_CHARS}{{6,}})\s+[—–]\s+(?:[\w'’-]+\s+){{0,4}}?"
    r"(?:master\s+)?(?:password|passcode|passphrase)\b"
    # "Lx19980212 这个是我邮箱密码".
    rf"|(?P<zh_before>{PASSWORD_CHARS}{{6,}})\s*(?:这个?|这)?就?是(?:我|他|她|我们|他们)?的?"
    r"[\u4e00-\u9fffA-Za-z]{0,8}密码"
    # "sunflower-attic-02 — that's the new Wi-Fi code".
    rf"|(?:^|(?<=\n))(?P<thats>{PASSWORD_CHARS}{{6,}})\s+[—–-]+\s+that'?s\s+(?:the|my|our|his|her)"
    r"\s+(?:(?:new|old|current|real)\s+)?(?:(?:password|passcode|passphrase|pin)\b"
    r"|(?:wi-?fi|wlan|router|door|gate|alarm)\s+(?:password|code|key|pin)\b)",
    re.IGNORECASE,
)
# A question about a code or a PIN, answered on the next line ("what's the garage door
# code again?\nA: 7391 then the hash key").
_CODE_QUESTION = re.compile(
    r"(?im)^[^\n]*(?:\bcode\b|\bpin\b|passcode|密码|暗証番号|비밀번호)[^\n]{0,40}[?？]"
    r"|^[^\n]*\bremind me\b[^\n]{0,40}(?:\bcode\b|\bpin\b|passcode)[^\n]*"
)
# Codes that are not secrets: what a shop, a parcel or a sign-in sends.
_NOT_A_SECRET_CODE = re.compile(
    r"(?i)promo|discount|coupon|voucher|gift|tracking|zip|postal|post ?code|area|country"
    r"|error|status|verification|confirm|booking|reference|referral|invite|invitation|tax"
    r"|product|dial|region|qr|bar ?code|验证码|邮编|区号"
)
# A login written as user / password ("ops@vance-studio.io / Aws#Vance2026"), after a
# word that says so or with a default administrator's name ("admin/Fuwu2024x").
_LOGIN_WORD = re.compile(
    r"(?i)\b(?:login|log-in|credentials?|creds|admin|account|sign-in)\b"
    r"|账号密码|账号和密码|用户名和密码|账密|账号|帐号|账户"
)
# HTTP basic auth written as user:password ("basic auth: mlflow_admin:Runs-and-Metrics-5").
_BASIC_AUTH = re.compile(
    r"(?i)\bbasic[ -]?auth\w*\b[^\n]{0,30}?[:=]?\s*[\w.@+-]+:"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# An Apple app-specific password: four groups of four letters with dashes.
_APPLE_APP_PASSWORD = re.compile(
    r"(?i:apple|icloud|app[- ]specific|app password|应用专用密码)[^\n]{0,80}?"
    r"(?<![A-Za-z-])(?P<value>[a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4})(?![A-Za-z-])"
)
_LOGIN_PAIR = re.compile(
    rf"(?<![^\s:：(（])[^\s/:：,]*[A-Za-z0-9][^\s/:：,]*\s?[/,]\s?(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# Or the login's password given alone: "new laptop login is Marchbanks1887!", "Windows
# login Bureau!Walnut2" (a symbol, a digit and letters: not a user name).
_LOGIN_VALUE = re.compile(
    rf"(?i)\blogin\b(?:\s+(?:is|was)|\s+(?:for|of)\s+[\w'’.-]+(?:\s+[\w'’.-]+){{0,3}}(?=\s*[:：])"
    r"|\s*\([^)\n]{1,60}\)(?=\s*[:：]))?"
    rf"\s*[:：]?\s+(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# Or after a clause about the login, then a colon, at the end of the line: "office PC
# login, IT makes us change it every quarter: Ht@20260301", "the practice software
# login for the front desk: Smile2026front".
_LOGIN_CLAUSE_VALUE = re.compile(
    r"(?im)\b(?:login|log-in|sign-in)\b(?P<clause>[^\n:：.?!]{4,80}|[^\n:：]{4,80}?\))"
    rf"[ \t]*[:：][ \t]*(?P<value>{PASSWORD_CHARS}{{6,40}})[ \t]*$"
)
# A login told in prose, the user named by what it is: "the ParentPay login is my email
# plus lunchmoney-Eli7", "the router login page wants admin and Tplink-Grandpa-3".
_LOGIN_IN_PROSE = re.compile(
    r"(?i)\b(?:login|log-in|sign-in|credentials?)\b[^\n.;]{0,60}?"
    r"\b(?:e-?mail(?: address)?|username|user name|admin|phone number|mobile number)"
    r"\s+(?:plus|and|\+|with)\s+(?:the\s+password\s+)?"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# A login set to a value: "Ruaridh set the club treasurer login to Caman&Ball1893".
_LOGIN_SET_TO = re.compile(
    r"(?i)\b(?:set|changed|reset|updated)\s+(?:the\s+|my\s+|his\s+|her\s+|our\s+|their\s+)?"
    r"(?:[\w'’-]+\s+){0,4}?(?:login|log-in|sign-in|password|passcode)\s+to\s+"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# A password asked about, then told: "Mum asked what her Yahoo password is. It's X".
_ASKED_THEN_TOLD = re.compile(
    r"(?i)\b(?:password|passcode|passwort)\s+(?:is|was)\s*[.?]\s+(?:it'?s|it is|it was)\s+"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)
_LOGIN_SYMBOLS = frozenset("!#$%^&*+=?~")
# A sign-in written as an e-mail address and its password: "crispin@gmail.com /
# Murloc!Mrgl55", "ana@example.com | Sunny#2024", a combo line "ana@example.com:Sunny#24".
_EMAIL_PAIR = re.compile(
    r"(?<![\w.+:/%-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?:[ \t]+/[ \t]*|[ \t]*/[ \t]+|[ \t]+\|[ \t]+"
    r"|:(?=\S))"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)
# A service's sign-in written as "Label: user / password" on its own line ("Instagram:
# lena.k / Sommer#2024", "- 淘宝：18612345678 / tb@2024xyz", "Netflix — familie.berg /
# Kino2023!"): no word names a login, so both sides must look like one.
_LABELLED_PAIR = re.compile(
    r"(?m)^[ \t]*(?:[-*•·][ \t]+)?(?P<label>[^\s:：/|—–][^:：/|\n—–]{0,30}?)"
    r"[ \t]*(?:[:：]|[ \t][—–-]{1,2})[ \t]*"
    r"(?P<user>[\w.+-]+(?:@[\w-]+(?:\.[\w-]+)+)?)[ \t]+[/|][ \t]+"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})[ \t]*$"
)
# A value alone after a short label on its own line ("PayPal: Pp!Fiachra1995", "- 钉钉：
# Dd_lxm0601!", "Disney+ for the kids: Frozen-Elsa-88"): no word names a password, so
# the value must be shaped like one that a person made up (see _labelled_values). A
# space after an ASCII colon: "recalld:v1:lock:*" and .pgpass lines are no labels.
_LABELLED_VALUE = re.compile(
    r"(?m)^[ \t]*(?:[-*•·][ \t]+)?(?P<label>[^\s:：/|#][^:：/|\n]{0,30}?)[ \t]*(?::[ \t]+|：[ \t]*)"
    r"(?P<value>[\x21\x23-\x26\x28-\x39\x3b-\x5f\x61-\x7e]{6,40})[ \t]*$"
)
# Capitalised words joined by dashes or underscores, a number at the end: "Sofa-Night-31".
_JOINED_WORDS = re.compile(r"[A-Z][a-z]{1,15}(?:[-_][A-Z]?[a-z]{1,15}){1,3}[-_]?[0-9]{1,4}")
_SIGN_IN_CONTEXT = re.compile(
    r"(?i)pass|\bpw\b|log ?in|sign[- ]?in|account|credential|admin|wi-?fi|密码|账号|帐号|口令|登录"
)
# Labels of fields that hold something else than a password.
_NOT_A_PASSWORD_LABEL = re.compile(
    r"(?i)user|name|\bid\b|e-?mail|mail|account|login id|phone|mobile|tel|order|ticket|ref"
    r"|sku|model|version|build|release|track|invoice|booking|flight|plate|serial|part|item"
    r"|code name|handle|tag|branch|commit|host|server|url|address"
    r"|title|subject|event|project|theme|topic|room|location|venue|date|time|status|type|file"
    r"|channel|campaign|coupon|promo|discount|voucher|gift|sale|hashtag|note"
    r"|账号|帐号|用户|手机|电话|订单|单号"
)
# A KeePass XML export: <Key>Password</Key><Value ProtectInMemory="True">…</Value>.
_KEEPASS_ENTRY = re.compile(
    r"<Key>\s*Password\s*</Key>\s*<Value(?:\s[^>]*)?>(?P<value>[^<\n]{1,128})</Value>"
)
_ADMIN_PAIR = re.compile(
    r"(?i)(?<![\w/.:@-])(?:admin|administrator|root)(?:(?:/| / )"
    r"(?P<value>[\x21\x23-\x26\x28-\x2e\x30-\x5f\x61-\x7e]{6,})(?![/\w])"
    # "admin:ricoh-3rd-floor", not a passwd line ("root:x:0:0:…").
    r"|:(?P<colon>[\x21\x23-\x26\x28-\x2e\x30-\x39\x3b-\x5f\x61-\x7e]{6,})(?![:/\w]))"
)
# A lock's code: "the code for the garage door is 5512", "the safe combination:
# 12-34-56", "her locker opens with 3391", "the archive unlocks with Tax2024!Rivera".
_LOCK = r"(?:alarm|lock|padlock|safe|locker|door|gate|garage|keypad|shed|vault|lockbox|keybox)s?"
# A Chinese safe or lock, a colon, its combination: "衣帽间保险柜：48-17-33".
_CHINESE_LOCK = re.compile(
    r"(?:保险柜|保险箱|密码箱|密码锁|挂锁|门锁)[^\n，。；]{0,12}?[:：]\s*"
    r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-])|[0-9]{4,8}(?![\w-]))"
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
    # "the padlock on the storage unit is 3-7-21": a combination's dashed shape only;
    # digits alone are a locker's number as often as its code ("locker number is 9902").
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?\b(?:is|was)\s+"
        r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-]))"
    ),
    # "the hotel room safe is set to 2404": a code is what a lock is set to.
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?\b(?:is\s+|was\s+)?(?:set|changed|reset)\s+to\s+"
        r"(?P<value>[0-9]{3,8}(?![\w-])|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-]))"
    ),
    # "the key safe at the spaniel's house is 7249, back gate latch sticks": a box that
    # only a code opens, and digits that end the clause ("the safe was 1500 dollars" is
    # a price).
    re.compile(
        r"(?i)\b(?:key ?safe|lock ?box|key ?box|padlock|safe)\b[^.\n;:]{0,40}?\b(?:is|was)\s+"
        r"(?P<value>[0-9]{4,8})(?=\s*(?:[,.;!)]|$|—|–|\s(?:and|then|but|so)\b))"
    ),
    # "clubhouse alarm: key in 1966 then OFF": what is keyed into a panel.
    re.compile(
        r"(?i)\b(?:alarm|keypad|key ?safe|lock ?box|door|gate)\b[^.\n;]{0,30}?"
        r"\b(?:key in|punch in|type in|tap in|enter)\s+(?P<value>[0-9]{4,8})(?![\w-])"
    ),
    # "the lock box at 14 Glenfarg Road: code 2719", "key safe by the back door, code 2803".
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?[:：,]\s*(?:the\s+)?(?:code|pin|combination|combo)\b"
        rf"\s*(?:\b(?:is|was)\b|:|=)?\s*{_LOCK_VALUE}"
    ),
    re.compile(
        rf"(?i)\b(?:{_LOCK}|zip|archive|pdf|rar|7z)\b[^.\n;]{{0,40}}?\b(?:opens|unlocks)\s+with"
        rf"\s+(?:the\s+(?:code|combination|password)\s+)?{_LOCK_VALUE}"
    ),
    # "the zip with the tenant's references is protected: Refs_Flat3_2026".
    re.compile(
        r"(?i)\b(?:zip|archive|pdf|rar|7z|file|folder|document|spreadsheet)s?\b[^.\n;]{0,40}?"
        rf"\b(?:password[- ])?protected\b(?:\s+with)?\s*[:：]?\s+{_LOCK_VALUE}"
    ),
)
# The words that name what a lock code opens (the trigger of _lock_codes).
_LOCK_WORDS = (
    "code", "combination", "combo", "opens", "unlocks", "lock", "safe", "protected", "alarm",
    "keypad", "box", "door", "gate",
)  # fmt: skip
_COMBINATION = re.compile(r"[0-9]{3,8}|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}")
# A passphrase of plain words: "the passphrase for the drive is purple monkey
# dishwasher.", "his master password is Lisbon tram at dusk 1998."; to the sentence end.
_PASSPHRASE = re.compile(
    r"(?i)(?:\b(?:pass ?phrase|master password)\b"
    # "passphrase, four words with spaces: velvet orbit cactus ladder".
    r"(?:[^\n.;:]{0,50}?\s(?:is|was)\s+|[^\n.;:]{0,50}?[:：]\s*)"
    # What an encrypted volume or vault opens with: "VeraCrypt volume on the stick: …".
    r"|\b(?:veracrypt|truecrypt|luks|keepass(?:xc)?|cryptomator)\b[^\n.;:]{0,50}?[:：]\s*)"
    r"(?P<value>[\w'-]+(?:[ ][\w'-]+){2,5})(?=[.;!?,]?\s*$|[.;!?,]\s|\s[—–]\s)"
)
_NOT_A_PHRASE_START_WORDS = """
    a an the my your his her our their its this that not no in on at of for to with from
    by stored saved written kept sent still now also being too very really same different
    long short hard easy empty blank required needed missing unknown hidden encrypted
    somewhere something what why how one
"""
_NOT_A_PHRASE_START = frozenset(_NOT_A_PHRASE_START_WORDS.split())
_NOT_IN_A_PHRASE_WORDS = """
    i you he she it we they me him them is was are be been will would should could can
    can't won't don't didn't doesn't isn't wasn't has have had do does did never but so
    because if when then which who what where words characters chars letters digits long
    key manager vault app file
"""
_NOT_IN_A_PHRASE = frozenset(_NOT_IN_A_PHRASE_WORDS.split())
# After "password is" (not "passphrase is"), plain words are a sentence as often as a
# password: none of these may be among them.
_FUNCTION_WORDS_LIST = """
    a an the my your his her our their its this that these those not no in on at of for
    to with from by and or as same usually always just still also only all any every
    some more most less than like about into over after before again here there now
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_LIST.split())
# A Chinese passphrase (口令, a spoken password) may be Chinese words alone: 口令是山高月小.
_CHINESE_PASSPHRASE = re.compile(
    r"口令\s*(?:是|为|為|：|:)\s*(?P<value>[\u4e00-\u9fff]{3,12})(?=[\s，。,；;！!？?）)、]|$)"
)
# Where it is or what it is like, not what it is: 口令：见群公告, 口令是什么, 口令已经改了.
_NOT_A_CHINESE_PASSPHRASE = re.compile(
    r"[见在的了是有没不请问找发给用和或吗呢啥哪什么多少忘错已另同]"
)
_WIFI_KEY_STEMS = (
    "key", "schlüssel", "clave", "chave", "clé", "chiave", "sleutel", "klucz", "nyckel",
    "nøgle", "nøkkel", "ключ", "anahtar", "kunci",
)  # fmt: skip
# A Wi-Fi network's key: "wifi Tallinn-5G, key kohvik-2024", "WLAN key: …".
_WIFI_KEY = re.compile(
    r"(?i)\b(?:wi-?fi|wlan|ssid)\b[^\n]{0,60}?\b(?:network |wpa2? |wi-?fi )?"
    # The key in German, Spanish, Portuguese, French, Italian, Dutch, Polish, Swedish,
    # Danish and Norwegian, Russian, Turkish, Indonesian.
    r"(?:key|schlüssel|clave|chave|clé|chiave|sleutel|klucz|nyckel|nøgle|nøkkel|ключ"
    r"|anahtar[ıi]?|kunci)\b"
    # Where the network is, before a colon: "WLAN-Schlüssel in der Ferienwohnung: …".
    r"(?:\s+(?:in|at|for|im|in der|bei|für|au|à|en|del?|na|no|w)\s+[^\n:：=]{1,40}?(?=\s*[:：=]))?"
    r"(?:\s*(?:\bis\b|:|=))?\s+(?P<value>[^\s\"'`]{6,64})"
    # "WPA2 key saunailta", "WPA passphrase: …", and a Wi-Fi QR code's "P:" field.
    r"|(?i:\bwpa[23]?(?:-psk)?\s+(?:key|passphrase|psk)\b)\s*[:=]?\s*(?P<wpa>[^\s\"'`,;]{6,64})"
    # "SSID Fenwick_5G / WPA2 hobnob-teapot": a made-up value right after "WPA2".
    rf"|(?i:\bwpa[23]?\b)\s*[:=]?\s+(?P<after_wpa>{PASSWORD_CHARS}{{6,64}})"
    r"|WIFI:[^\n]*?(?<=[:;])P:(?P<qr>(?:\\.|[^;\\\n])+);"
)


def passwords_elsewhere(text: str) -> Iterator[Detection]:
    """Passwords not stated after their word: before it, as an answer, as a pair, a lock code."""
    lowered = text.lower()
    for applies, rule in _RULES:
        if applies(text, lowered):
            yield from rule(text)


def _named_values(pattern: re.Pattern[str], text: str) -> Iterator[Detection]:
    """The value in whichever named group of the pattern matched."""
    for match in pattern.finditer(text):
        named = {k: v for k, v in match.groupdict().items() if v is not None}
        group = next(iter(named))
        value = named[group].rstrip(TRAILING)
        # The key of a WPA network or a Wi-Fi QR code is what the format says.
        given = group in ("wpa", "qr")
        if not ((given or looks_made_up(value)) and could_be_a_password(value)):
            continue
        if "://" not in value and not value.upper().startswith(("WPA", "WEP")):
            start = match.start(group)
            yield Detection(Category.PASSWORD, start, start + len(value))


def _before_the_word(text: str) -> Iterator[Detection]:
    return _named_values(_PASSWORD_BEFORE_WORD, text)


def _admin_pairs(text: str) -> Iterator[Detection]:
    return _named_values(_ADMIN_PAIR, text)


def _wifi_keys(text: str) -> Iterator[Detection]:
    return _named_values(_WIFI_KEY, text)


def _login_pairs(text: str) -> Iterator[Detection]:
    """The password of a "user / password" pair after a word that names a login."""
    for word in _LOGIN_WORD.finditer(text):
        # "admin" and "account" name many things: a digit or a symbol marks a password.
        loose = word.group().casefold() in ("admin", "account", "sign-in", "账号", "帐号", "账户")
        for pair in _LOGIN_PAIR.finditer(text, word.end(), min(len(text), word.end() + 80)):
            value = pair.group("value").rstrip(TRAILING)
            # Written as "user / password", spaced: not a path or a URL's "27017/?a=b".
            marked = " / " in pair.group() and (
                any(c.isdigit() for c in value) or _LOGIN_SYMBOLS.intersection(value)
            )
            if looks_made_up(value) and could_be_a_password(value) and (marked or not loose):
                start = pair.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))
                break


def _login_values(text: str) -> Iterator[Detection]:
    """A password-looking value right after "login"."""
    for match in _LOGIN_VALUE.finditer(text):
        value = match.group("value").rstrip(TRAILING.replace("!", ""))
        # A symbol, or a capitalised made-up value with a dash or an underscore
        # ("car-rental login Aotearoa-Drive-6"), and a digit: not a user name.
        symbols = _LOGIN_SYMBOLS.intersection(value) or (
            len(value) >= 8 and value[0].isupper() and ("-" in value or "_" in value)
        )
        digit = any(c.isdigit() for c in value)
        if symbols and digit and "@" not in value and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


def _labelled_pairs(text: str) -> Iterator[Detection]:
    """The password of a "Label: user / password" line, both sides shaped like a sign-in.

    The user is an e-mail address, a phone number, or a name with a digit, a dot or an
    underscore in it; the password has letters and digits and a symbol, or both cases.
    "Berlin: Mitte / Kreuzberg2" and "Sizes: small / Medium2" name no user; a plain
    name in lower case counts only in a text about sign-ins.
    """
    for match in _LABELLED_PAIR.finditer(text):
        user = match.group("user")
        value = match.group("value").rstrip(".,;")
        sign_in = (
            "@" in user
            or any(c.isdigit() or c in "._" for c in user)
            # "logins for the temp:\n- payroll: jmarsh / Bluejay-Pay-08".
            or (user.islower() and _SIGN_IN_CONTEXT.search(text) is not None)
        )
        digits = any(c.isdigit() for c in value)
        symbols = bool(_LOGIN_SYMBOLS.intersection(value)) or "@" in value
        cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
        if not (sign_in and digits and (symbols or cases)) or value.isdigit():
            continue
        if (
            "/" in value
            or "://" in value
            or not (looks_made_up(value) and could_be_a_password(value))
        ):
            continue
        start = match.start("value")
        yield Detection(Category.PASSWORD, start, start + len(value))


def _labelled_values(text: str) -> Iterator[Detection]:
    """A made-up value alone after a short label on its own line.

    Letters, digits and a symbol people put in passwords (not "#4521A", a ticket), or
    capitalised words joined with a number at the end in a text about sign-ins; never
    an e-mail address, a URL or a label that names another field ("Username: Anna_K!",
    "Order: …").
    """
    for match in _LABELLED_VALUE.finditer(text):
        value = match.group("value").rstrip(".,;")
        if len(match.group("label").split()) > 4 or _NOT_A_PASSWORD_LABEL.search(match["label"]):
            continue
        if "/" in value or re.search(r"@[\w-]+\.[A-Za-z]", value):
            continue
        letters = any(c.isalpha() for c in value)
        digits = any(c.isdigit() for c in value)
        symbols = _LOGIN_SYMBOLS.intersection(value) or "@" in value
        strong = letters and digits and symbols and not value.startswith("#")
        # Joined words name teams and recipes too ("Red-Sox-2004"): only among sign-ins.
        joined = _JOINED_WORDS.fullmatch(value) and _SIGN_IN_CONTEXT.search(text)
        if (strong or joined) and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


# A question about the Wi-Fi, answered on one of the next lines: "what's the wifi?\n
# it's Bergblick-55", "家里wifi是啥？\n妈：hx@2024home". Not one about its name.
_WIFI_QUESTION = re.compile(r"(?im)^[^\n]*(?:\bwi-?fi\b|\bwlan\b|无线|wifi)[^\n]{0,40}[?？]")
_ABOUT_ITS_NAME = re.compile(r"(?i)\bcalled\b|\bname\b|\bnetwork\b|\bssid\b|名")


def _wifi_answered(text: str) -> Iterator[Detection]:
    """A made-up value answering a question about the Wi-Fi, not a network's name."""
    for question in _WIFI_QUESTION.finditer(text):
        if _ABOUT_ITS_NAME.search(question.group()):
            continue
        for start, end in answered_below(text, question.end() - 1):
            value = text[start:end].rstrip(TRAILING)
            if _NETWORK_NAME.search(value) or not any(c.isdigit() for c in value):
                continue
            if looks_made_up(value) and could_be_a_password(value) and value.isascii():
                yield Detection(Category.PASSWORD, start, start + len(value))
                break


_NOT_THE_LOGINS = re.compile(r"(?i)method|page|screen|error|fee|contact|link|attempt|count")


def _login_clause_values(text: str) -> Iterator[Detection]:
    """A made-up value after a clause about a login and a colon, at the end of the line.

    A symbol with a digit, or both cases with a digit: "login for the kids: mia2015" may
    be a user name, so a value in lower case is left alone.
    """
    for match in _LOGIN_CLAUSE_VALUE.finditer(text):
        value = match.group("value").rstrip(".,;")
        if _NOT_A_PASSWORD_LABEL.search(match["clause"]) or _NOT_THE_LOGINS.search(match["clause"]):
            continue  # "login page (new URL): …", "login method for the office: Okta-SSO-2"
        # Not a path, an address or a form body ("POST /login body: user=…&pwd=…").
        if "/" in value or "=" in value or ("@" in value[1:] and "." in value):
            continue
        digits = any(c.isdigit() for c in value)
        symbols = _LOGIN_SYMBOLS.intersection(value) or "@" in value
        cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
        if digits and (symbols or cases) and looks_made_up(value) and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


def _told_in_prose(text: str) -> Iterator[Detection]:
    """A made-up value with a digit after a login told in prose, or a question answered."""
    for pattern in (_LOGIN_IN_PROSE, _ASKED_THEN_TOLD, _LOGIN_SET_TO):
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            digit = any(c.isdigit() for c in value)
            if digit and "@" not in value and looks_made_up(value) and could_be_a_password(value):
                start = match.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))


def _security_answers(text: str) -> Iterator[Detection]:
    for match in _SECURITY_ANSWER.finditer(text):
        group = "value" if match.group("value") else "zh"
        if could_be_a_password(match.group(group)):
            yield Detection(Category.PASSWORD, match.start(group), match.end(group))


def _basic_auth(text: str) -> Iterator[Detection]:
    for match in _BASIC_AUTH.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if looks_made_up(value) and could_be_a_password(value) and "@" not in value:
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
            )


def _apple_app_passwords(text: str) -> Iterator[Detection]:
    for match in _APPLE_APP_PASSWORD.finditer(text):
        yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _keepass_entries(text: str) -> Iterator[Detection]:
    for match in _KEEPASS_ENTRY.finditer(text):
        if could_be_a_password(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _chinese_lock_codes(text: str) -> Iterator[Detection]:
    for match in _CHINESE_LOCK.finditer(text):
        yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _names_wifi_and_its_key(lowered: str) -> bool:
    network = any(w in lowered for w in ("wifi", "wi-fi", "wlan", "ssid"))
    return network and any(w in lowered for w in _WIFI_KEY_STEMS)


# A made-up value right after "Wi-Fi" is what people share: its password ("…, Wi-Fi
# Offshore-Wind-12, phone …", "Wi-Fi i klubbhuset: hoppbakke2026"). A network's name
# is told apart by its maker's prefix or its band ("TP-LINK_5G_8F2A", "Fenwick_5G").
_WIFI_VALUE = re.compile(
    r"(?i)(?<!ssid )\bwi-?fi\b(?:[ \t]+(?:i|in|im|en|på|at|bei|chez|del?)[ \t]+[\w'-]{1,20})?"
    rf"[ \t]*[:：—–]?[ \t]+(?P<value>{PASSWORD_CHARS}{{8,63}})(?=[\s,;。，]|$)"
)
_NETWORK_NAME = re.compile(
    r"(?i)^(?:tp-?link|netgear|fritz|vodafone|livebox|xfinity|eduroam|linksys|asus|d-?link"
    r"|huawei|zte|mercury|tenda|xiaomi|sky|virgin|orange|freebox|bbox|telekom|spectrum|att)"
    r"|[-_ ](?:2\.?4|5)g(?:hz)?$|[-_]ext$"
)


def _wifi_values(text: str) -> Iterator[Detection]:
    """A made-up value with a digit right after "Wi-Fi", not a network's name."""
    for match in _WIFI_VALUE.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if not any(c.isdigit() for c in value) or _NETWORK_NAME.search(value):
            continue
        if looks_made_up(value) and could_be_a_password(value):
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
            )


# The answer to a bank's security question is a password of plain words.
_SECURITY_ANSWER = re.compile(
    r"(?i)\b(?:security|secret) answer\b[^\n.;]{0,60}?(?:\bis\b|[:：])[ \t]*[\"'“‘]?"
    r"(?P<value>[^\s\"'”’.,;。，]{3,40})"
    r"|(?:密保答案|安全问题答案|密保问题的?答案)\s*(?:是|为|[:：])\s*(?P<zh>[^\s，。,;；]{2,20})"
)


def _email_pairs(text: str) -> Iterator[Detection]:
    """The password after an e-mail address and a slash, a bar or a colon.

    Letters with digits, or a symbol people put in passwords: not a team's name
    ("sales@acme.com / Sales-Team"), a path ("git@host:group/repo") or an address.
    """
    for match in _EMAIL_PAIR.finditer(text):
        value = match.group("value").rstrip(TRAILING.replace("!", ""))
        if "@" in value or "/" in value or not could_be_a_password(value):
            continue
        letters = any(c.isalpha() for c in value)
        digits = any(c.isdigit() for c in value)
        if letters and (digits or _LOGIN_SYMBOLS.intersection(value)):
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
            )


_KEYED_PIN = re.compile(r"[*#]?[0-9]{4,8}[*#]?")


def _codes_answered(text: str) -> Iterator[Detection]:
    """A PIN-length number answering a question about a code on the line before."""
    for question in _CODE_QUESTION.finditer(text):
        if _NOT_A_SECRET_CODE.search(question.group()):
            continue
        for start, end in answered_below(text, question.start()):
            value = text[start:end].rstrip(".,;:!?)]}>”’\"'`。，；：！？）」")
            # Digits, with the keys pressed around them: "*2961#".
            if _KEYED_PIN.fullmatch(value):
                yield Detection(Category.PASSWORD, start, start + len(value))
            break  # only the next line answers it


def _lock_codes(text: str) -> Iterator[Detection]:
    """The code, combination or password that opens a lock, a safe or an archive."""
    for pattern in _LOCK_CODES:
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            # Digits ("3391", "12-34-56"), or a made-up word with digits in it; not a
            # date ("2024-05-01") or a program ("opens with Adobe-Reader").
            made_up = looks_made_up(value) and any(c.isdigit() for c in value)
            if _COMBINATION.fullmatch(value) or (made_up and could_be_a_password(value)):
                start = match.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))


# Plain words after "password is" only when there are four or more, all in lower case,
# none a function word, an -ed, -ing or -ly word: "my password is correct horse battery
# staple", not "the password is expiring next week" or "is usually my dog's name".
_WORDS_AS_PASSWORD = re.compile(
    r"(?i)\bpassword\s+(?:is|was)\s+(?P<value>[a-z]+(?:[ ][a-z]+){3,5})(?=[.;!?,]?\s*$|[.;!?,]\s)"
)


def _plain_words_as_password(value: str) -> bool:
    words = value.split()
    if value != value.lower() or words[0] in _NOT_A_PHRASE_START:
        return False
    if any(w in _NOT_IN_A_PHRASE or w in _FUNCTION_WORDS for w in words):
        return False
    return not any(len(w) > 4 and w.endswith(("ed", "ing", "ly")) for w in words)


def _passphrases(text: str) -> Iterator[Detection]:
    """Passphrases of plain words, in English or in Chinese."""
    if "password" in text.lower():
        for match in _WORDS_AS_PASSWORD.finditer(text):
            if _plain_words_as_password(match.group("value")):
                yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    for match in _PASSPHRASE.finditer(text):
        words = match.group("value").casefold().split()
        if words[0] in _NOT_A_PHRASE_START or any(w in _NOT_IN_A_PHRASE for w in words):
            continue
        if words[0].endswith("ed"):
            continue  # "the passphrase was generated by diceware"
        yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    for match in _CHINESE_PASSPHRASE.finditer(text):
        if not _NOT_A_CHINESE_PASSPHRASE.search(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# Each rule beside the literal words it needs: it runs only where they are, since most
# memories have none. A trigger is given the text and its lower-cased copy.
_Trigger = Callable[[str, str], bool]
_RULES: tuple[tuple[_Trigger, Callable[[str], Iterator[Detection]]], ...] = (
    (lambda text, low: "pass" in low or "密码" in text or "that" in low, _before_the_word),
    (
        lambda text, low: ("/" in text or ":" in text) and ("admin" in low or "root" in low),
        _admin_pairs,
    ),
    (
        lambda text, low: _names_wifi_and_its_key(low) or "wpa" in low or "WIFI:" in text,
        _wifi_keys,
    ),
    (lambda text, low: "wi-fi" in low or "wifi" in low, _wifi_values),
    (lambda text, low: _LOGIN_WORD.search(text) is not None, _login_pairs),
    (lambda text, low: "login" in low, _login_values),
    (
        lambda text, low: any(w in low for w in ("login", "log-in", "sign-in")),
        _login_clause_values,
    ),
    (
        lambda text, low: any(
            w in low for w in ("login", "log-in", "sign-in", "credential", "pass")
        ),
        _told_in_prose,
    ),
    (lambda text, low: "@" in text, _email_pairs),
    (lambda text, low: " / " in text or " | " in text, _labelled_pairs),
    (lambda text, low: ":" in text or "：" in text, _labelled_values),
    (lambda text, low: ("?" in text or "？" in text) and "\n" in text, _wifi_answered),
    (
        lambda text, low: "answer" in low or "密保" in text or "安全问题" in text,
        _security_answers,
    ),
    (lambda text, low: "auth" in low, _basic_auth),
    (
        lambda text, low: "-" in text and any(w in low for w in ("apple", "icloud", "app", "应用")),
        _apple_app_passwords,
    ),
    (lambda text, low: "<Key>" in text, _keepass_entries),
    (lambda text, low: any(w in low for w in _LOCK_WORDS), _lock_codes),
    (lambda text, low: "锁" in text or "保险" in text or "密码箱" in text, _chinese_lock_codes),
    (
        lambda text, low: "\n" in text and ("?" in text or "？" in text or "remind me" in low),
        _codes_answered,
    ),
    (
        lambda text, low: (
            "phrase" in low
            or "password is" in low
            or "password was" in low
            or "master password" in low
            or "口令" in text
            or any(w in low for w in ("crypt", "luks", "keepass"))
        ),
        _passphrases,
    ),
)
