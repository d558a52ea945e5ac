"""Passwords given as part of a sign-in, with or without a word for a password.

A "user / password" pair after a word for a login, an e-mail address and its password,
basic auth, a "Label: user / password" line, a made-up value alone after a service's
label, a value after a clause about a login, or a login told in prose ("my email plus
…", "set the login to …").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_values import (
    CLAUSE_END,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import Detection, Rule

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
# Signed in with a made-up value: "Thora signs in as trendall with Hoy-Sound-1987", "the
# agency laptop logs in with NorthShore!Care7", "Yulia's laptop is locked with
# Baikal2020", "Chenxi's login became Uetliberg#2025", "one shared login,
# couttet.glisse with PowderDay!2025", "登入 admin 用 Oyster@NAS21".
_SIGNED_IN_WITH = re.compile(
    r"(?i)\b(?:signs?|signed|logs?|logged)\s+(?:in|on)\s+(?:as\s+[\w.@+-]+\s+)?(?:with|using)\s+"
    r"|\b(?:locked|secured)\s+with\s+(?:the\s+password\s+)?"
    r"|\b(?:login|log-in|sign-in|password)\s+(?:became|is now|has become)\s+"
    r"|\b(?:login|account)\b[^\n.;]{0,40}?[,:：]\s*[\w.@+-]{3,40}\s+with\s+"
    # "Temi's Paystack dashboard login is her work address with Eko-Bridge#1990".
    r"|\blogin\s+is\s+[^\n.;]{1,40}?\s+with\s+"
    r"|登[入录錄陆陸][^\n，。,;；]{0,12}?用\s*"
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
    r"(?m)^[ \t]*(?:[-*•·][ \t]+)?(?P<label>[^\s:：/|—–][^:：/|\n—–]{0,50}?)"
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


_WIFI_LABEL = re.compile(r"(?i)wi-?fi|wlan|无线|网络")
# A device one signs in to: "Thorvald's workshop PC — thorvald / Spoke.Wrench.31".
_DEVICE_LABEL = re.compile(
    r"(?i)\b(?:pc|laptop|computer|nas|server|router|printer|tablet|desktop|workstation"
    r"|console|dvr|nvr|imac|macbook|app|portal|software|account|login|website|site|banking)\b"
    r"|电脑|電腦|路由器|打印机"
)


def _symbol_digit_letter(value: str) -> bool:
    digits = any(c.isdigit() for c in value)
    letters = any(c.isalpha() for c in value)
    return digits and letters and bool(_LOGIN_SYMBOLS.intersection(value))


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
            # "logins for the temp:\n- payroll: jmarsh / Bluejay-Pay-08", "thermostat app:
            # kenver / WarmHouse-55!": a plain name, among sign-ins or before a symbol.
            or (
                user.islower()
                and (_SIGN_IN_CONTEXT.search(text) is not None or _symbol_digit_letter(value))
            )
            # "new office Wi-Fi: Halyard-Guest / sailsUp2026": the network and its key.
            or _WIFI_LABEL.search(match.group("label")) is not None
            or _DEVICE_LABEL.search(match.group("label")) is not None
        )
        digits = any(c.isdigit() for c in value)
        symbols = bool(_LOGIN_SYMBOLS.intersection(value)) or "@" in value
        cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
        # A Wi-Fi's key may be lower case and digits: "office Wi-Fi: OjaPay-Staff /
        # jollofrice2024".
        wifi = _WIFI_LABEL.search(match.group("label")) is not None
        if not (sign_in and digits and (symbols or cases or wifi)) or value.isdigit():
            continue
        if (
            "/" in value
            or "://" in value
            or not (looks_made_up(value) and could_be_a_password(value))
        ):
            continue
        start = match.start("value")
        yield Detection(Category.PASSWORD, start, start + len(value))


# A made-up value, with a digit, alone after a clause that names what one signs in to,
# ending the line: "Kezia's inspection laptop: Apis.Mellifera.88", "the radio-programming
# laptop in the comms cupboard: repeater147", "Gerald's credit-union online banking:
# Pardy$CU-63", "the international admissions shared mailbox: Firth-of-Forth-2025".
_SIGN_IN_THING_VALUE = re.compile(
    r"(?im)^(?P<label>[^\n:：]{0,80}?\b(?P<thing>laptop|pc|computer|app|portal|login|banking"
    r"|mailbox|inbox|software|tablet|nas|router|printer|console|website|workstation)\b"
    r"[^\n:：]{0,60}?)[:：][ \t]*"
    r"(?P<value>[\x21\x23-\x26\x28-\x39\x3b-\x5f\x61-\x7e]{6,40})[ \t]*$"
)
# What such a label names when the value is not a password.
_NOT_A_SIGN_IN_VALUE = re.compile(
    r"(?i)user ?name|\bid\b|e-?mail address|phone|mobile|order|ticket|\bref|sku|model"
    r"|version|\bbuild\b|serial|invoice|booking|flight|plate|\bpart\b|host|server|url|address"
    r"|\bip\b|\bport\b|date|time|status|type|file|handle|tag|branch|commit|number|\bno\b"
    r"|iban|sort code|member|licen[cs]e|key\b|token|plan|price|cost|balance|brand|make"
)
# A device's make and model: "laptop: ThinkPad-X1", "tablet: iPad10".
_MAKE = re.compile(
    r"(?i)(?:thinkpad|macbook|imac|ipad|iphone|galaxy|pixel|surface|dell|hp|lenovo|asus|acer"
    r"|xps|huawei|xiaomi|redmi|kindle|fire|chromebook|synology|qnap|tp-?link|netgear|windows"
    r"|ubuntu|android|ios|macos)"
)


_REFERENCE = re.compile(r"[A-Z]{2,5}-?[0-9]{5,}|[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}")


def _sign_in_thing_values(text: str) -> Iterator[Detection]:
    for match in _SIGN_IN_THING_VALUE.finditer(text):
        value = match.group("value").rstrip(".,;")
        if _NOT_A_SIGN_IN_VALUE.search(match.group("label")) or _MAKE.match(value):
            continue
        if "/" in value or _AN_ADDRESS.search(value) or not any(c.isdigit() for c in value):
            continue
        if "=" in value or _REFERENCE.fullmatch(value):
            continue  # "user=kowalski&pwd=…" (read as a field), a ticket "INC0012345"
        if match.group("thing").casefold() == "login" and value.isalnum():
            continue  # "login for the kids: mia2015" may be the user's name
        if looks_made_up(value) and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


_SIGNED_IN_STEMS = ("sign", "log", "lock", "secured", "became", "is now", "account", "登")
_SIGNED_IN_TRIGGER = re.compile(
    r"(?:sign|log)(?:s|ged|ed)? (?:in|on)\b|locked with|secured with|became|is now|登"
    r"|(?:login|account)\b[^\n]{0,40}? with "
)


def _signed_in_with(text: str) -> Iterator[Detection]:
    """A made-up value a person signs in with, or that a device is locked with."""
    for match in _SIGNED_IN_WITH.finditer(text):
        value = _VALUE_AFTER.match(text, match.end())
        if value is None:
            continue
        found = value.group().rstrip(TRAILING.replace("!", ""))
        if "/" in found or _AN_ADDRESS.search(found):
            continue  # "signs in with anna@example.com", "logs in with SSO/Okta"
        if looks_made_up(found) and could_be_a_password(found):
            yield Detection(Category.PASSWORD, value.start(), value.start() + len(found))


# The value ends its clause: "logs in with Google2FA every day" names a method.
_VALUE_AFTER = re.compile(rf"{PASSWORD_CHARS}{{6,40}}(?![\x21-\x7e])(?={CLAUSE_END}|[，。；])")
_AN_ADDRESS = re.compile(r"@[\w-]+\.[A-Za-z]{2,}")


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


_NOT_THE_LOGINS = re.compile(r"(?i)method|page|screen|error|fee|contact|link|attempt|count")


def _login_clause_values(text: str) -> Iterator[Detection]:
    """A made-up value after a clause about a login and a colon, at the end of the line.

    A symbol with a digit, or both cases with a digit: "login for the kids: mia2015" may
    be a user name, so a value in lower case is left alone.
    """
    for match in _LOGIN_CLAUSE_VALUE.finditer(text):
        value = match.group("value").rstrip(".,;")
        clause = match["clause"]
        other = _NOT_A_PASSWORD_LABEL.search(clause) or _NOT_THE_LOGINS.search(clause)
        # "login page (new URL): …", "login method for the office: Okta-SSO-2"; but a
        # value with a symbol, a digit and letters is the password whatever the clause
        # names ("laptop login, according to the IT ticket she forwarded: Kassab#Laptop9").
        if other and not _symbol_digit_letter(value):
            continue
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


def _basic_auth(text: str) -> Iterator[Detection]:
    for match in _BASIC_AUTH.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if looks_made_up(value) and could_be_a_password(value) and "@" not in value:
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
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


# Each rule beside the literal words it needs (see password_forms.passwords_elsewhere).
RULES: tuple[Rule, ...] = (
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
    (lambda text, low: "auth" in low, _basic_auth),
    (
        lambda text, low: (
            any(w in low for w in _SIGNED_IN_STEMS) and _SIGNED_IN_TRIGGER.search(low) is not None
        ),
        _signed_in_with,
    ),
    (lambda text, low: ":" in text or "：" in text, _sign_in_thing_values),
)
