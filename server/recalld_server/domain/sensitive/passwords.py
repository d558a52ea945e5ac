"""Passwords stated in text: after their word, before it, as an answer, as a lock's code."""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_syntax import passwords_in_syntax
from recalld_server.domain.sensitive.password_values import (
    NOT_A_PASSWORD_FIELD,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import (
    SENTENCE_END,
    Detection,
    answered_below,
    cells_under,
    listed_under,
)

# "password", also inside a config key (DB_PASSWORD, mysql-root-pwd, "wifi_pass", psk=).
# The word in the languages people write to an assistant in: Chinese, Japanese, Korean,
# Russian and Serbian, Greek, Turkish, Thai, Arabic, Hebrew, Hindi, then in Latin
# script German, Dutch, Swedish, Norwegian, Danish, Finnish, Polish, Czech and
# Slovak, Hungarian, Romanian, Spanish, Portuguese, French, Vietnamese, Indonesian.
_PASSWORD_WORD = re.compile(
    r"(?:密码|密碼|口令|PIN ?码|pin ?码|提取码|提取碼|登录码|登入码|暗証番号|パスワード"
    r"|비밀번호|암호|пароль|парол[яюем]|лозинк[аеу]|κωδικός|şifre(?:si|m|niz)?|รหัสผ่าน"
    r"|كلمة (?:المرور|السر)|סיסמ[הא]|पासवर्ड)"
    r"|(?<![A-Za-z0-9_/\\])(?<![A-Za-z0-9]-)(?:[A-Za-z0-9]+[_-])*"
    r"(?:passwords|password|passwort|kennwort|wachtwoord|l[öo]senord|passord|adgangskode|salasana"
    r"|has[łl]o|heslo|jelsz[óo]|parol[ăa]|contrase[ñn]a|senha|palavra-passe|mot de passe"
    r"|mật khẩu|kata sandi|passwd|passcode|pass ?phrase|pwd|pw|pass|psk|pin(?: ?code)?"
    # Typed in a hurry: "pasword", "passwrod", "passowrd".
    r"|pas+w(?:or|ro|o)d|passowrd|pssword"
    # "alarm panel code", "door entry code": a word may stand between.
    r"|(?:door|gate|alarm|lock(?:-screen)?|entry|access|unlock|lockbox|key ?safe|key ?box)"
    r"(?: (?:panel|keypad|entry|system|box))?"
    r" code|keypad(?: code)?)"
    r"(?:[_-][A-Za-z0-9]+)*(?![A-Za-z])(?:[\"'](?!s\b))?",
    re.IGNORECASE,
)
# After the word: "is", ":", "=" (with what it is for in between: "password for the
# portal: …", "密码（新）是 …", "password (she asked me to keep it): …"), "set/changed
# to", or a dash.
_PASSWORD_STATED = re.compile(
    r"(?i)(?:\s+(?:for|of|on|to|at|in|from|with|the|that|which|we|i|you|he|she|they|my|his"
    # ... and in French, Spanish, Portuguese, Italian, German, Swedish, Polish.
    r"|her|our|de|del|du|des|da|do|di|per|für|von|vom|zum|zur|för|dla)\s+[^\n,;:：。=—]{0,40}?|\s*[（(][^）)\n]{0,80}[）)]"
    r"|[^\s，。,；;！!？?：:=\x21-\x7e]{1,6}?"
    # Any words before a colon: "passphrase (the 25th word) Joaquim uses: …".
    r"|\s*(?P<clause>[^\s\n,;:：。=—.!?\"][^\n,;:：。=—.!?\"]{0,59}?)(?=\s*[:：])"
    # An aside between dashes: "The password — he told me after I promised — is X".
    r"|\s+[—–]\s[^—–\n]{1,160}?\s[—–])??"
    r"(?:\s*(?:\b(?:is|was|will be|are|ist|lautet|war|est|était|es|era|é|è|är|jest)(?!\w)"
    r"|=|:|：|->"
    # "密码还是 root 的": 还是 and 或是 ask "or", they do not state.
    # Japanese and Korean mark the topic after the word: "パスワードは …", "비밀번호는 …".
    r"|(?<![还或])是|为|為|は|는|은|改成了?|改为了?|换成了?|设为|设置为|设置成)\s*"
    # "to", but not "read it to me: …".
    r"|\s+(?:(?:set|changed|reset|updated)\s+)?to\s+(?!(?:me|him|her|them|us|you)\b)"
    r"|\s+(?P<dash>[—–]\s*|--?\s+))"
    # Fillers of speech: "the password is, um, Greenfinch_22".
    r",?\s*(?:(?:now|still|actually|just|simply|it's|it is|um+|uh+|erm?|ah)\b,?\s+)*"
    # Google's app passwords: four groups of four letters.
    r"(?:(?P<groups>[a-z]{4}(?: [a-z]{4}){3})(?![A-Za-z])"
    # Quoted, a password may hold spaces or any script ("velvet moth", “晴天2025”).
    r"|[\"“「'‘](?P<quoted>[^\"”」'’\n]{3,64})[\"”」'’]"
    # After the Chinese word, Chinese characters with digits or letters (晓峰2025).
    r"|(?P<mixed>[\u4e00-\u9fff]{1,8}[0-9A-Za-z!@#$%^&*_.-]{2,})"
    rf"|[\"'“‘`「]?(?P<value>{PASSWORD_CHARS}{{3,}}))"
)
# "her password's just sunshine88".
_PASSWORD_POSSESSIVE = re.compile(
    rf"'s\s+(?:(?:just|simply|still|now)\s+)?(?P<value>{PASSWORD_CHARS}{{3,}})"
)
# Or the value right after the word: "console password Stg-Console!88", "密码 147258".
_PASSWORD_BARE = re.compile(rf"(?:\s+[\"'“‘`「]?|[\"'“‘`「])(?P<value>{PASSWORD_CHARS}{{3,}})")
# After the Chinese word, the value may follow without a space ("无线网密码yy20180808"),
# or be a name with digits after a space ("密码 李春燕1990"), as a whole word.
_PASSWORD_BARE_CJK = re.compile(
    r"\s+(?P<mixed>[\u4e00-\u9fff]{2,4}(?=[A-Za-z!#$%^&*_.-]*[0-9])[0-9A-Za-z!#$%^&*_.-]{2,})"
    r"(?=[\s，。,；;！!？?）)]|$)"
    rf"|\s*[\"'“‘`「]?(?P<value>{PASSWORD_CHARS}{{3,}})"
)
# Words between the password's word and a colon that say the colon is not before it.
_NOT_ABOUT_THE_VALUE = re.compile(
    r"(?i)hash|salt|policy|reset|file|length|hint|expir|strength|rule|field|prompt|label"
    r"|manager|vault|keeper|generator|require|change|recover|forg[eo]t|link|url|page"
    r"|screen|form|menu|option|setting|format|example|e\.g|sample|type"
)
_PASSPORT_SHAPE = re.compile(r"[A-Z]{1,2}[0-9]{6,8}")
# An e-mail address or a path, not a password: "reset link sent to: ana@example.com".
_ADDRESS = re.compile(r"/|@[\w-]+\.[A-Za-z]{2,}")
# An app password (Google's, Apple's): four groups of four letters, even with no "is"
# or colon before them ("Gmail 应用专用密码 xkcd pqrs tuvw mnop").
_APP_PASSWORD_WORD = re.compile(r"(?i)\bapp|应用|gmail|google|icloud|apple|アプリ|앱")
# Random letters, not words: "the app password that will come back".
_COMMON_FOUR_LIST = """
    that this with from have been will your they them then than what when were here
    must just also does done into only over some such very make like used uses same
    sent said each more most much need once well want went come came back take took
    give gave goes gone keep kept know knew made mine ours love life work time days
    year week next last left long look good best part real sure true open shut lost
    safe easy hard note card name user code text mail sign copy save send read told
    """
_COMMON_FOUR = frozenset(_COMMON_FOUR_LIST.split())
_FOUR_GROUPS = re.compile(r"[ \t]*[:：]?[ \t]*(?P<groups>[a-z]{4}(?: [a-z]{4}){3})(?![A-Za-z])")
_TO = re.compile(r"\s+(?:(?:set|changed|reset|updated)\s+)?to\s+", re.IGNORECASE)
_PIN_WORDS = ("pin", "码", "密", "口令", "code", "keypad", "番号", "暗証")


# What every word above holds (case-folded): without one, no word is looked for.
_PASSWORD_STEMS = (
    "pass", "pasw", "pssw", "pw", "pin", "psk", "code", "keypad", "登录", "登入", "kennwort",
    "wachtwoord", "senord",
    "adgangskode", "salasana", "has", "heslo", "jelsz", "parol", "contrase", "senha",
    "mật khẩu", "kata sandi", "密", "口令", "提取", "暗証", "パスワード", "비밀번호", "암호",
    "парол", "лозинк", "κωδικ", "şifre", "รหัสผ่าน", "كلمة", "סיסמ", "पासवर्ड",
)  # fmt: skip


def passwords(text: str) -> Iterator[Detection]:
    """Every password the text states, in a sentence, a config line or a command."""
    lowered = text.casefold()
    words = (
        _PASSWORD_WORD.finditer(text)
        if any(stem in lowered for stem in _PASSWORD_STEMS)
        else iter(())
    )
    for word in words:
        if text[max(0, word.start() - 2) : word.start()] == "${":
            continue  # "${DB_PASSWORD:?missing}" names a variable
        found = _after_the_word(text, word) or _stated_after_a_clause(text, word)
        if found is not None:
            yield found
        else:
            yield from _changed_later(text, word)
        if "\n" in text:
            yield from _in_its_column(text, word)
            yield from _listed_or_answered(text, word)
    yield from _passwords_elsewhere(text)
    yield from passwords_in_syntax(text)


def _after_the_word(text: str, word: re.Match[str]) -> Detection | None:
    """The password stated right after one of its words, if any."""
    if _APP_PASSWORD_WORD.search(text, max(0, word.start() - 24), word.end()):
        groups = _FOUR_GROUPS.match(text, word.end())
        if groups is not None and not _COMMON_FOUR.intersection(groups.group("groups").split()):
            return Detection(Category.PASSWORD, groups.start("groups"), groups.end("groups"))
    chinese = not word.group()[0].isascii()
    stated = _PASSWORD_POSSESSIVE.match(text, word.end()) or _PASSWORD_STATED.match(
        text, word.end()
    )
    if stated is None and chinese:
        spaced = _PASSWORD_BARE_CJK.match(text, word.end())
        stated = spaced if spaced is not None and spaced.group("mixed") else None
    named = stated.groupdict() if stated is not None else {}
    clause = named.get("clause")
    # "password manager: 1Password", "password reset link sent to: ana@example.com":
    # not this reading; the value right after the word may still be one ("密码 147258 …").
    if clause is not None and (
        _NOT_ABOUT_THE_VALUE.search(clause) or _ADDRESS.search(named.get("value") or "")
    ):
        stated, named, clause = None, {}, None
    strong = named.get("quoted") or named.get("groups") or (chinese and named.get("mixed"))
    if stated is not None and strong:
        group = next(g for g in ("quoted", "groups", "mixed") if named.get(g))
        value = stated.group(group).strip().rstrip(TRAILING)
        if not could_be_a_password(value):
            return None
        start = stated.start(group) + stated.group(group).index(value[0])
        return Detection(Category.PASSWORD, start, start + len(value))
    if stated is not None and not named.get("value"):
        stated = None
    bare = _PASSWORD_BARE_CJK if chinese else _PASSWORD_BARE
    match = stated or bare.match(text, word.end())
    if match is None or not match.group("value"):
        return None
    value = match.group("value")
    stripped = value.rstrip(TRAILING)
    # "hunter2!" keeps its "!" only when a sentence does not end there.
    if stripped != value and value[-1] in "!?" and match.end() < len(text):
        stripped = value.rstrip(TRAILING.replace("!", "").replace("?", ""))
    if not could_be_a_password(stripped) or not stripped.isascii():
        return None
    name = word.group().strip("\"'").casefold()
    if NOT_A_PASSWORD_FIELD.search(name):
        return None  # password_hash, POSTGRES_PASSWORD_FILE, password_min_length
    if stripped.endswith("#") and stripped[:-1].isdigit():
        stripped = stripped[:-1]  # "门禁密码2580#": the key pressed after it
    # A PIN ("laptop PIN 8812", "支付密码 385027", "door code is 7315") is digits.
    # Otherwise "pass" alone is too common a word ("boarding pass: NH962") to trust
    # a colon, and without "is" or ":" only a value that looks made up counts; nor
    # does "to" ("no password to store") or a dash ("password on the card — Maren
    # didn't type it").
    pin = stripped.isdigit() and 4 <= len(stripped) <= 8 and any(w in name for w in _PIN_WORDS)
    if name == "pass" and _PASSPORT_SHAPE.fullmatch(stripped):
        return None  # "Eesti pass K7654824": a passport
    weak = (
        name in {"pass", "pw", "pin", "psk", "passwords"}  # a list follows "passwords:"
        or stated is None
        or bool(named.get("clause"))
        or bool(named.get("dash"))
        or _TO.match(text, word.end()) is not None
    )
    # After 口令 (a spoken password), pinyin letters alone: "口令 tianwanggaidihu".
    spoken = name == "口令" and stripped.isalpha() and len(stripped) >= 6
    if not pin and not spoken and weak and not looks_made_up(stripped):
        return None
    if not pin and stripped.isdigit() and "code" in name:
        return None  # "the promo code is 2024": only a PIN-length code counts
    start = match.start("value")
    return Detection(Category.PASSWORD, start, start + len(stripped))


# "is" after a clause about what the password is for: "the PIN to Drive is 3918", "das
# Passwort fürs Bestellportal ist Zentrifuge#12", "the password — he told me after I
# promised — is fjordsauna1987". Read when the words right after it gave nothing.
_STATED_LATER = re.compile(
    r"(?P<between>[^\n.;:!?]{1,160}?)\s(?:is|was|ist|war|est|es|era|é|è|är|jest)\s+[\"'“‘]?"
    rf"(?P<value>{PASSWORD_CHARS}{{3,}})"
)


def _stated_after_a_clause(text: str, word: re.Match[str]) -> Detection | None:
    """The value after "is" later in the word's clause: a PIN, or a made-up value."""
    match = _STATED_LATER.match(text, word.end())
    if match is None or _NOT_ABOUT_THE_VALUE.search(match.group("between")):
        return None
    value = match.group("value").rstrip(TRAILING.replace("!", ""))
    name = word.group().casefold()
    pin = value.isdigit() and 4 <= len(value) <= 8 and any(w in name for w in _PIN_WORDS)
    if not (pin or looks_made_up(value)) or not could_be_a_password(value):
        return None
    if NOT_A_PASSWORD_FIELD.search(name):
        return None
    return Detection(Category.PASSWORD, match.start("value"), match.start("value") + len(value))


# Changed later in the sentence: "初始密码是身份证后六位，她已经改成了 X", "the password was
# her birthday until she changed it to X".
_CHANGED_TO = re.compile(
    r"(?i)(?:改成了?|改为了?|换成了?|更改为|设成了?|(?:changed|updated|reset|set)\s+(?:it\s+)?to"
    r"|now it'?s|it'?s now|the new one is|new one'?s|新的是|新的为|新密码是|现在是|现在为"
    # "… hint is useless, so here it is: X".
    r"|here it is\s*[:：]|here you go\s*[:：]|(?:type|spell|write) it(?: out| down)?\s*[:：])"
    r"\s*[\"'“‘]?"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)


def _changed_later(text: str, word: re.Match[str]) -> Iterator[Detection]:
    """A made-up value the password was changed to, later in the word's sentence."""
    reach = text[word.end() : word.end() + 100]
    end = SENTENCE_END.search(reach)
    window_end = word.end() + (end.start() if end else len(reach))
    match = _CHANGED_TO.search(text, word.end(), window_end)
    if match is not None:
        value = match.group("value").rstrip(TRAILING)
        if looks_made_up(value) and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


def _listed_or_answered(text: str, word: re.Match[str]) -> Iterator[Detection]:
    r"""Passwords listed under a heading with the word, or given in answer to a question.

    "Passwords:\n- Netflix: Ashcombe_Flix", "user: what's the wifi pw?\nassistant: …
    \nuser: it's Jiayou-2026": made-up values only, or a PIN after a word for one.
    """
    name = word.group().casefold()
    pin_word = any(w in name for w in _PIN_WORDS)
    for start, end in listed_under(text, word.start()):
        value = text[start:end].rstrip(TRAILING)
        if looks_made_up(value) and could_be_a_password(value):
            yield Detection(Category.PASSWORD, start, start + len(value))
    for start, end in answered_below(text, word.start()):
        value = text[start:end].rstrip(TRAILING)
        pin = pin_word and value.isdigit() and 4 <= len(value) <= 8
        if (pin or looks_made_up(value)) and could_be_a_password(value) and value.isascii():
            yield Detection(Category.PASSWORD, start, start + len(value))
            return


def _in_its_column(text: str, word: re.Match[str]) -> Iterator[Detection]:
    """The passwords under a header cell that names them (CSV, TSV, a Markdown table)."""

    def names_passwords(cell: str) -> bool:
        return not NOT_A_PASSWORD_FIELD.search(cell.casefold())

    for start, end in cells_under(text, word.start(), word.end(), names_passwords):
        if could_be_a_password(text[start:end]) and " " not in text[start:end]:
            yield Detection(Category.PASSWORD, start, end)


# The value before the word: "uses sunflower1988 as the password", "X is the wifi password".
_PASSWORD_BEFORE_WORD = re.compile(
    rf"(?<![^\s\"'“‘`(（:：])(?P<value>{PASSWORD_CHARS}{{6,}})\s+(?:is|was|as)\s+"
    r"(?:(?:the|my|his|her|our|their|its)\s+)?(?:[\w-]+\s+){0,2}?(?:password|passcode|passphrase)\b"
    # "Gr33nhouse-Tomat0 — Bartholomew's Bitwarden master password".
    rf"|(?:^|(?<=\n))(?P<led>{PASSWORD_CHARS}{{6,}})\s+[—–]\s+(?:[\w'’-]+\s+){{0,4}}?"
    r"(?:master\s+)?(?:password|passcode|passphrase)\b"
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
    r"|账号密码|账号和密码|用户名和密码|账密"
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
    rf"(?i)\blogin\b(?:\s+(?:is|was)|\s+(?:for|of)\s+[\w'’.-]+(?:\s+[\w'’.-]+)?(?=\s*[:：]))?"
    rf"\s*[:：]?\s+(?P<value>{PASSWORD_CHARS}{{6,}})"
)
_LOGIN_SYMBOLS = frozenset("!#$%^&*+=?~")
# A sign-in written as an e-mail address and its password: "crispin@gmail.com /
# Murloc!Mrgl55", "ana@example.com | Sunny#2024", a combo line "ana@example.com:Sunny#24".
_EMAIL_PAIR = re.compile(
    r"(?<![\w.+:/%-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+(?:[ \t]+/[ \t]*|[ \t]*/[ \t]+|[ \t]+\|[ \t]+"
    r"|:(?=\S))"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
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
_LOCK_VALUE = r"(?P<value>[0-9]{1,3}(?:-[0-9]{1,3}){2,3}(?![\w-])|[\x21\x23-\x26\x28-\x7e]{3,})"
_LOCK_CODES = (
    re.compile(
        rf"(?i)\b(?:code|combination|combo)\s+(?:for|to|of|on)\s+(?:[\w'-]+\s+){{0,3}}?{_LOCK}\b"
        # Where the lock is: "the code for the key safe at the holiday cottage is 6184".
        r"(?:\s+(?:at|in|on|by|near|behind|outside|inside|of|by)\s+(?:[\w'-]+\s+){0,4}?[\w'-]+)?"
        rf"\s*(?:\b(?:is|was)\b|:|=|[—–])\s*{_LOCK_VALUE}"
    ),
    re.compile(
        rf"(?i)\b{_LOCK}\s+(?:combination|combo)\b\s*(?:\b(?:is|was)\b|:|=)\s*{_LOCK_VALUE}"
    ),
    # "the lock box at 14 Glenfarg Road: code 2719".
    re.compile(
        rf"(?i)\b{_LOCK}\b[^.\n;:]{{0,40}}?[:：]\s*(?:the\s+)?(?:code|pin|combination|combo)\b"
        rf"\s*(?:\b(?:is|was)\b|:|=)?\s*{_LOCK_VALUE}"
    ),
    re.compile(
        rf"(?i)\b(?:{_LOCK}|zip|archive|pdf|rar|7z)\b[^.\n;]{{0,40}}?\b(?:opens|unlocks)\s+with"
        rf"\s+(?:the\s+(?:code|combination|password)\s+)?{_LOCK_VALUE}"
    ),
)
_COMBINATION = re.compile(r"[0-9]{3,8}|[0-9]{1,3}(?:-[0-9]{1,3}){2,3}")
# A passphrase of plain words: "the passphrase for the drive is purple monkey
# dishwasher.", "his master password is Lisbon tram at dusk 1998."; to the sentence end.
_PASSPHRASE = re.compile(
    r"(?i)(?:\b(?:pass ?phrase|master password)\b(?:[^\n.;:]{0,50}?\s(?:is|was)\s+|\s*[:：]\s*)"
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
    r"(?:\s*(?:\bis\b|:|=))?\s+(?P<value>[^\s\"'`]{6,64})"
    # "WPA2 key saunailta", "WPA passphrase: …", and a Wi-Fi QR code's "P:" field.
    r"|(?i:\bwpa[23]?(?:-psk)?\s+(?:key|passphrase|psk)\b)\s*[:=]?\s*(?P<wpa>[^\s\"'`,;]{6,64})"
    # "SSID Fenwick_5G / WPA2 hobnob-teapot": a made-up value right after "WPA2".
    rf"|(?i:\bwpa[23]?\b)\s*[:=]?\s+(?P<after_wpa>{PASSWORD_CHARS}{{6,64}})"
    r"|WIFI:[^\n]*?(?<=[:;])P:(?P<qr>(?:\\.|[^;\\\n])+);"
)


def _passwords_elsewhere(text: str) -> Iterator[Detection]:
    """Passwords not stated after their word: before it, as an answer, as a pair, a lock code."""
    # Each rule runs only where its literal words are (most memories have none).
    lowered = text.lower()
    patterns = []
    if "pass" in lowered or "密码" in text or "that" in lowered:
        patterns += [_PASSWORD_BEFORE_WORD]
    if ("/" in text or ":" in text) and ("admin" in lowered or "root" in lowered):
        patterns.append(_ADMIN_PAIR)
    wifi = any(w in lowered for w in ("wifi", "wi-fi", "wlan", "ssid")) and any(
        w in lowered for w in _WIFI_KEY_STEMS
    )
    if wifi or "wpa" in lowered or "WIFI:" in text:
        patterns.append(_WIFI_KEY)
    for pattern in patterns:
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
    for word in _LOGIN_WORD.finditer(text):
        # "admin" and "account" name many things: a digit or a symbol marks a password.
        loose = word.group().casefold() in ("admin", "account", "sign-in")
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
    if "login" in lowered:
        for match in _LOGIN_VALUE.finditer(text):
            value = match.group("value").rstrip(TRAILING.replace("!", ""))
            symbols = _LOGIN_SYMBOLS.intersection(value) and "@" not in value
            if symbols and any(c.isdigit() for c in value) and could_be_a_password(value):
                start = match.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))
    if "@" in text:
        yield from _email_pairs(text)
    if "auth" in lowered:
        for match in _BASIC_AUTH.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            if looks_made_up(value) and could_be_a_password(value) and "@" not in value:
                yield Detection(
                    Category.PASSWORD, match.start("value"), match.start("value") + len(value)
                )
    if "-" in text and any(w in lowered for w in ("apple", "icloud", "app", "应用")):
        for match in _APPLE_APP_PASSWORD.finditer(text):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    if "<Key>" in text:
        for match in _KEEPASS_ENTRY.finditer(text):
            if could_be_a_password(match.group("value")):
                yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    if any(w in lowered for w in ("code", "combination", "combo", "opens", "unlocks")):
        yield from _lock_codes(text)
    if "\n" in text and ("?" in text or "？" in text):
        yield from _codes_answered(text)
    vault = any(w in lowered for w in ("crypt", "luks", "keepass"))
    if "phrase" in lowered or "master password" in lowered or "口令" in text or vault:
        yield from _passphrases(text)


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


def _codes_answered(text: str) -> Iterator[Detection]:
    """A PIN-length number answering a question about a code on the line before."""
    for question in _CODE_QUESTION.finditer(text):
        if _NOT_A_SECRET_CODE.search(question.group()):
            continue
        for start, end in answered_below(text, question.start()):
            value = text[start:end].rstrip(TRAILING)
            if value.isdigit() and 4 <= len(value) <= 8:
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


def _passphrases(text: str) -> Iterator[Detection]:
    """Passphrases of plain words, in English or in Chinese."""
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
