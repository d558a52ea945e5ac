"""Passwords stated after their word: "password is …", "密码：…", under a heading, in a column.

The other forms are in password_forms.py (before the word, passphrases, Wi-Fi keys),
password_logins.py (sign-ins), password_codes.py (lock codes) and password_changes.py
(old and new values); tools' syntax is in password_syntax.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_forms import passwords_elsewhere
from recalld_server.domain.sensitive.password_syntax import passwords_in_syntax
from recalld_server.domain.sensitive.password_values import (
    CLAUSE_END,
    DASHED_COMBINATION,
    LETTERED_CODE,
    NOT_A_PASSWORD_FIELD,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
    typed,
)
from recalld_server.domain.sensitive.spans import (
    SENTENCE_END,
    Detection,
    answered_below,
    any_word,
    cells_under,
    line_around,
    listed_under,
)

# "password", also inside a config key (DB_PASSWORD, mysql-root-pwd, "wifi_pass", psk=).
# The word in the languages people write to an assistant in: Chinese, Japanese, Korean,
# Russian and Serbian, Greek, Turkish, Thai, Arabic, Hebrew, Hindi, then in Latin
# script German, Dutch, Swedish, Norwegian, Danish, Finnish, Polish, Czech and
# Slovak, Hungarian, Romanian, Spanish, Portuguese, French, Vietnamese, Indonesian.
_PASSWORD_WORD = re.compile(
    r"(?:密码|密碼|口令|PIN ?码|pin ?码|提取码|提取碼|登录码|登入码|暗証番号|パスワード"
    r"|撤防码|布防码|门禁码|开门码|开锁码|门锁码|访客码|門禁碼|開門碼|訪客碼|解压码|解壓碼"
    # A device's access code on the local network: "打印机的局域网访问码 27182818".
    r"|访问码|訪問碼"
    r"|비밀번호|암호|пароль|парол[яюем]|лозинк[аеу]|κωδικός|şifre(?:si|m|niz)?|รหัสผ่าน"
    r"|كلمة (?:المرور|السر)|סיסמ[הא]|पासवर्ड)"
    r"|(?<![A-Za-z0-9_/\\])(?<![A-Za-z0-9]-)(?:[A-Za-z0-9]+[_-])*"
    r"(?:passwords|password|passwort|kennwort|wachtwoord|l[öo]senord|passord|adgangskode|salasana"
    r"|has[łl]o|heslo|jelsz[óo]|parol[ăa]|contrase[ñn]a|senha|palavra-passe|mot de passe|lykilorð"
    r"|mật khẩu|kata sandi|passwd|passcode|pass ?phrase|pwd|pw|pass|psk|pin(?: ?code)?"
    # A word kept secret for a bank or an alarm company: "the memorable word is parsnip".
    r"|memorable (?:word|information|answer|phrase)|(?:secret|safe|code) word"
    # Typed in a hurry: "pasword", "passwrod", "passowrd".
    r"|pas+w(?:or|ro|o)d|passowrd|pssword|pas+wrd|pass ?key"
    # A door's code in French, German and Spanish: "le code de la porte : B2741".
    r"|digicode|code (?:de la |du |de l'|d')?"
    r"(?:porte|portail|immeuble|entrée|bâtiment|alarme|garage)"
    # A box only a code opens, named alone: "Porto Airbnb lockbox 0617".
    r"|lock ?box|key ?safe|key ?box"
    r"|t[üu]rcode|código (?:de la puerta|del portal)"
    # "alarm panel code", "door entry code": a word may stand between.
    r"|(?:door|gate|alarm|lock(?:-screen)?|entry|access|unlock|lockbox|key ?safe|key ?box|barrier"
    r"|garage|safe|padlock|shed|disarm|arming|duress"
    # What a code keeps shut at work or at a club: "team locker code 6647".
    r"|locker|cabinet|cupboard|drawer|shower|storeroom|bike"
    # Codes that unlock a device or a role: "parental code 3390", "manager override 7731".
    r"|parental|immobili[sz]er|admin|master|override|restrictions?|screen ?time|child ?lock"
    r"|engineer|installer|manager)"
    r"(?: (?:panel|keypad|entry|system|box|block))?"
    r" code|keypad(?: code)?)"
    r"(?:[_-][A-Za-z0-9]+)*(?![A-Za-z])(?:[\"'](?!s\b))?",
    re.IGNORECASE,
)
# After the word: "is", ":", "=" (with what it is for in between: "password for the
# portal: …", "密码（新）是 …", "password (she asked me to keep it): …"), "set/changed
# to", or a dash.
_PASSWORD_STATED = re.compile(
    # An aside between commas on what it is for: "the password, for voiding orders, is
    # 888666a", "manager PIN, for refunds only: 2291" (not "for example").
    r"(?i)(?:,\s*(?:for|on|at|in|to)\s+(?!example|instance)[^\n,;:：。=—]{1,40}?"
    r"(?:,(?=\s*(?:is|was)\s)|(?=\s*[:：]))"
    # Or any aside before a colon: "Roderick's Gmail password, which Glenys keeps in the
    # little red book: …", "the analyser's service password, from the engineer: …".
    # Not the next key of a JSON object or a config line: '"psk": "…", "mqtt_host": …'.
    r"|,\s*(?P<clause2>[^\n,;:：。=—\"'“”{}\[\]]{1,60}?)(?=\s*[:：])"
    r"|\s+(?:for|of|on|to|at|in|from|with|the|that|which|we|i|you|he|she|they|my|his"
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
    # Cantonese says 系: "wifi 密码系 …".
    # "password 就是 …"; Cantonese writes 係 (traditional) for 系: "password 係 …".
    r"|(?<![还或])就?是|为|為|系|就?係|は|는|은|改成了?|改为了?|换成了?|设为|设置为|设置成)\s*"
    # "to", but not "read it to me: …"; "to" alone is weak ("a password for the logbook
    # and not to tell the crew").
    r"|\s+(?:set|changed|reset|updated)\s+to\s+(?!(?:me|him|her|them|us|you)\b)"
    r"|(?P<to>\s+to\s+)(?!(?:me|him|her|them|us|you)\b)"
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
    # "password reset link: …", not "password after the reset: …".
    r"(?i)hash|salt|policy|(?<!after the )(?<!after a )reset(?! by)|file|length|hint|expir"
    r"|strength|rule|field|prompt|label"
    r"|manager|vault|keeper|generator|require|change|recover|forg[eo]t|link|url|page"
    r"|screen|form|menu|option|setting|format|example|e\.g|sample|type"
)
_PASSPORT_SHAPE = re.compile(r"[A-Z]{1,2}[0-9]{6,8}")
# "set the maintenance-planner password to Reykjanesviti": what it was set to, whatever
# its shape (a bare "to" is weak: "a password for the logbook and not to tell the crew").
_SET_BEFORE = re.compile(
    r"(?i)\b(?:set|changed|reset|updated|made)\s+(?:the\s+|her\s+|his\s+|my\s+|their\s+"
    r"|our\s+|its\s+)?(?:[\w'’-]+\s+){0,3}$"
)


def _set_to(text: str, word: re.Match[str]) -> bool:
    """Set before the word, "to" right after it, the value ending its clause."""
    return _SET_BEFORE.search(text, max(0, word.start() - 50), word.start()) is not None and (
        _TO_A_VALUE.match(text, word.end()) is not None
    )


# "… password to Reykjanesviti, after the lighthouse", not "… password to expire monthly".
_TO_A_VALUE = re.compile(rf"\s+to\s+{PASSWORD_CHARS}{{3,}}(?={CLAUSE_END})")
# A pass one shows rather than types: a badge, a ticket, a permit.
_PASS_TO_GET_IN = re.compile(
    r"(?i)\b(?:exhibitor|visitor|boarding|day|season|bus|rail|press|media|guest|staff|parking"
    r"|backstage|lift|ski|museum|event|conference|festival|delegate|vip|weekly|monthly"
    r"|annual|travel|hall|all-access)\s+$"
)
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
# Also WordPress's application passwords: six groups of four letters and digits.
_FOUR_GROUPS = re.compile(
    r"[ \t]*[:：]?[ \t]*(?P<groups>[a-z]{4}(?: [a-z]{4}){3}|[A-Za-z0-9]{4}(?: [A-Za-z0-9]{4}){5})"
    r"(?![A-Za-z0-9])"
)
_NAMES_A_FIELD = re.compile(r"(?i)psk|pass|pwd")
_ONE_TIME_BEFORE = re.compile(
    r"(?i)(?:动态|一次性|短信|行程\s*"
    r"|\b(?:trip|ride|delivery|pickup|one-time|uber|lyft|didi|grab|bolt|滴滴)\s*)$"
)
_HANDED_OVER = re.compile(
    r"(?i)\b(?:courier|delivery|deliveries|driver|rider|takeaway|parcel)\b"
    r"|福袋|抽奖|抽獎|红包|紅包|直播间|直播間|评论区|評論區|粉丝|粉絲"
)
_PARCEL = re.compile(r"(?i)parcel|package|deliver|inpost|pick-?up|collect|courier|取件|快递|驿站")
_FACTORY_BEFORE = re.compile(r"(?i)(?:出厂|默认|factory)[^\n，,。]{0,12}$")
_GROUPS_AFTER_A_COLON = re.compile(
    r"[^\n:：]{1,60}?[:：][ \t]*"
    r"(?P<groups>[a-z]{4}(?: [a-z]{4}){3}|[A-Za-z0-9]{4}(?: [A-Za-z0-9]{4}){5})(?![A-Za-z0-9])"
)
_PAIR_AFTER = re.compile(rf"[ \t]+/[ \t]+(?P<value>{PASSWORD_CHARS}{{6,}})")
_TO = re.compile(r"\s+(?:(?:set|changed|reset|updated)\s+)?to\s+", re.IGNORECASE)
_CLAUSE_ENDS = re.compile(CLAUSE_END)
_BOX_WORDS = ("lockbox", "lock box", "keysafe", "key safe", "keybox", "key box")
_PIN_WORDS = (
    "pin", "码", "密", "口令", "code", "keypad", "番号", "暗証", "passkey", "pass key", "lockbox",
    "lock box", "keysafe", "key safe", "keybox", "key box",
)  # fmt: skip


# What every word above holds (case-folded): without one, no word is looked for.
_PASSWORD_STEMS = (
    "pass", "pasw", "pssw", "pw", "pin", "psk", "code", "keypad", "登录", "登入", "kennwort",
    "wachtwoord", "senord", "código", "box", "safe", "memorable", "secret word",
    "adgangskode", "salasana", "has", "heslo", "jelsz", "parol", "contrase", "senha",
    "mật khẩu", "kata sandi", "lykilor",
    "密", "口令", "提取", "暗証", "パスワード", "비밀번호", "암호",
    "парол", "лозинк", "κωδικ", "şifre", "รหัสผ่าน", "كلمة", "סיסמ", "पासवर्ड",
    "门码", "锁码", "禁码", "防码", "访客码", "門禁碼", "開門碼", "訪客碼", "访问码", "訪問碼",
    "解压码", "解壓碼",
    "locker", "cabinet", "cupboard", "drawer",
    "shower", "storeroom", "bike",
)  # fmt: skip
_PASSWORD_STEM = any_word(_PASSWORD_STEMS)


# The first words of a description in quotes: "'the dog's name'", "'the usual one'" (not
# "my": "'my cat eats noodles at 3am'" is a passphrase).
_DESCRIBING = frozenset({"the", "his", "her", "our", "their", "your", "a", "an", "same", "usual"})


def passwords(text: str) -> Iterator[Detection]:
    """Every password the text states, in a sentence, a config line or a command."""
    lowered = text.casefold()
    words = _PASSWORD_WORD.finditer(text) if _PASSWORD_STEM.search(lowered) else iter(())
    for word in words:
        if text[max(0, word.start() - 2) : word.start()] == "${":
            continue  # "${DB_PASSWORD:?missing}" names a variable
        if _ONE_TIME_BEFORE.search(text, max(0, word.start() - 12), word.start()):
            continue  # "动态密码 271840", "Uber trip PIN 2281": sent for one use
        if _HANDED_OVER.search(line_around(text, *word.span())) and (
            word.group().casefold() == "pin" or word.group() == "口令"
        ):
            # "the courier needed the PIN 4471 before handing over his dinner", "直播间福袋的
            # 口令是…，粉丝在评论区打出来就能参与抽奖": given to everyone it is meant for.
            continue
        if "locker" in word.group().casefold() and _PARCEL.search(line_around(text, *word.span())):
            continue  # "the locker code for the InPost parcel is 284913": sent for one pickup
        if _FACTORY_BEFORE.search(text, max(0, word.start() - 12), word.start()):
            # "出厂管理密码 123456" is printed in every manual; what it was changed to is not
            # ("默认 admin password 我改成 Grafa-Lake-90 了").
            yield from _changed_later(text, word)
            continue
        found = (
            _after_the_word(text, word)
            or _stated_after_a_clause(text, word)
            or _plain_word_after_a_colon(text, word)
        )
        if found is not None:
            yield found
        else:
            yield from _changed_later(text, word)
        if "\n" in text:
            yield from _in_its_column(text, word)
            yield from _listed_or_answered(text, word)
    yield from passwords_elsewhere(text)
    yield from passwords_in_syntax(text)


def _after_the_word(text: str, word: re.Match[str]) -> Detection | None:
    """The password stated right after one of its words, if any."""
    if _APP_PASSWORD_WORD.search(text, max(0, word.start() - 24), word.end()):
        groups = _FOUR_GROUPS.match(text, word.end()) or _GROUPS_AFTER_A_COLON.match(
            text, word.end()
        )
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
    clause = named.get("clause") or named.get("clause2")
    # "password manager: 1Password", "password reset link sent to: ana@example.com":
    # not this reading; the value right after the word may still be one ("密码 147258 …").
    if clause is not None and (
        _NOT_ABOUT_THE_VALUE.search(clause) or _ADDRESS.search(named.get("value") or "")
    ):
        stated, named, clause = None, {}, None
    letter_groups = named.get("groups")
    if letter_groups and _COMMON_FOUR.intersection(letter_groups.split()):
        return None  # "the app password for the site: what will come back"
    strong = named.get("quoted") or letter_groups or (chinese and named.get("mixed"))
    if stated is not None and strong:
        group = next(g for g in ("quoted", "groups", "mixed") if named.get(g))
        value = stated.group(group).strip().rstrip(TRAILING)
        if not could_be_a_password(value):
            return None
        if word.group().casefold() in _BOX_WORDS and not value.isdigit():
            return None  # "key safe … is on 1415 — 'Agincourt', he says": a box holds a PIN
        if " " in value and value.split()[0].casefold() in _DESCRIBING:
            return None  # "the password is 'the dog's name'": what it is, not it
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
    if not could_be_a_password(stripped) or not typed(stripped):
        return None
    if _NAMES_A_FIELD.search(stripped) and not any(c.isdigit() for c in stripped):
        return None  # "wpa-psk wifi-sec.psk X": another field's name, not its value
    name = word.group().strip("\"'").casefold()
    if NOT_A_PASSWORD_FIELD.search(name):
        return None  # password_hash, POSTGRES_PASSWORD_FILE, password_min_length
    if stripped.endswith(("#", "*")) and stripped[:-1].isdigit():
        stripped = stripped[:-1]  # "门禁密码2580#": the key pressed after it
    # A PIN ("laptop PIN 8812", "支付密码 385027", "door code is 7315") is digits.
    # Otherwise "pass" alone is too common a word ("boarding pass: NH962") to trust
    # a colon, and without "is" or ":" only a value that looks made up counts; nor
    # does "to" ("no password to store") or a dash ("password on the card — Maren
    # didn't type it").
    pin = stripped.isdigit() and 4 <= len(stripped) <= 8 and any(w in name for w in _PIN_WORDS)
    # A safe's combination after a word for its code: "保险箱口令 47-13-29".
    pin = pin or bool(DASHED_COMBINATION.fullmatch(stripped) and any(w in name for w in _PIN_WORDS))
    # A door's code may carry a letter: "digicode B2741", "door code 4417A".
    lettered = LETTERED_CODE.fullmatch(stripped) is not None
    pin = pin or (lettered and any(w in name for w in ("code", "box", "safe")))
    if name == "pass" and _PASSPORT_SHAPE.fullmatch(stripped):
        return None  # "Eesti pass K7654824": a passport
    if name == "pass" and _PASS_TO_GET_IN.search(text, max(0, word.start() - 16), word.start()):
        return None  # "exhibitor pass EX-70432": a badge's number, shown at the door
    if name in ("passkey", "pass key") and not pin:
        return None  # a WebAuthn passkey is no typed value: only a console's PIN counts
    if name in _BOX_WORDS and not (
        pin and _CLAUSE_ENDS.match(text, match.start("value") + len(stripped))
    ):
        # "the lock box at 14 Glenfarg Road: code 2719": a box holds a PIN, and one that
        # ends its clause ("the key safe is 2019 model" gives its year).
        return None
    weak = (
        name in {"pass", "pw", "pin", "psk", "passwords"}  # a list follows "passwords:"
        or stated is None
        or bool(clause)
        or bool(named.get("dash"))
        or (bool(named.get("to") or _TO.match(text, word.end())) and not _set_to(text, word))
    )
    # After 口令 (a spoken password), pinyin letters alone: "口令 tianwanggaidihu".
    spoken = name == "口令" and stripped.isalpha() and len(stripped) >= 6
    if not pin and not spoken and weak and not looks_made_up(stripped):
        return None
    if not pin and stripped.isdigit() and "code" in name:
        return None  # "the promo code is 2024": only a PIN-length code counts
    start = match.start("value")
    return Detection(Category.PASSWORD, start, start + len(stripped))


# A plain word alone after a colon, ending the line: "pw for the allotment shed padlock
# app: hummingbird", "heslo k e-mailu: knedliky". Not after "pass" ("boarding pass for
# the flight: economy") or a PIN's word, nor a word of what a password is like.
_PLAIN_WORD_AFTER_A_COLON = re.compile(
    r"[^\n:：]{0,50}?[:：][ \t]*(?P<value>[a-z]{6,24})[ \t]*[.!]?[ \t]*(?:\n|$)"
)
_PLAIN_WORD_NAMES = re.compile(
    r"(?i)password|passwort|kennwort|wachtwoord|senord|passord|salasana|has[łl]o|heslo"
    r"|jelsz|parol|contrase|senha|mật khẩu|kata sandi|passwd|pwd|pw|pass ?phrase|密码|口令"
)


def _plain_word_after_a_colon(text: str, word: re.Match[str]) -> Detection | None:
    if not _PLAIN_WORD_NAMES.fullmatch(word.group().strip("\"'")):
        return None
    match = _PLAIN_WORD_AFTER_A_COLON.match(text, word.end())
    if match is None or _NOT_ABOUT_THE_VALUE.search(text, word.end(), match.start("value")):
        return None
    value = match.group("value")
    if not could_be_a_password(value) or value.endswith(("ly", "able")):
        return None
    return Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# "is" after a clause about what the password is for: "the PIN to Drive is 3918", "das
# Passwort fürs Bestellportal ist Zentrifuge#12", "the password — he told me after I
# promised — is fjordsauna1987". Read when the words right after it gave nothing.
_STATED_LATER = re.compile(
    r"(?P<between>[^\n.;:!?]{1,160}?)\s(?:is|was|ist|war|est|es|era|é|è|är|jest)\s+[\"'“‘]?"
    rf"(?P<value>{PASSWORD_CHARS}{{3,}})"
)


# "Wi-Fi password 每周换，this week 是 cangshan0612", "WeChat password … 新设的是 Karim@Yiwu24".
_STATED_LATER_CHINESE = re.compile(
    r"(?P<between>[^\n.;:!?。；：]{1,60}?)(?:说|設的|设的|给的|給的|以后|以後|就)?(?<![不还還或])是\s*"
    # Four characters for a PIN after its word: "key safe，这个月是 4786".
    r"(?P<value>[\x21\x23-\x26\x28-\x7e]{4,40})(?![\x21-\x7e])"
)
_COLON_LATER = re.compile(
    r"(?P<between>[^\n.;!?:：]{1,80}?)[:：][ \t]*[\"'“‘]?"
    rf"(?P<value>{PASSWORD_CHARS}{{6,}})"
)


def _stated_after_a_clause(text: str, word: re.Match[str]) -> Detection | None:
    """The value after "is" later in the word's clause: a PIN, or a made-up value."""
    match = _STATED_LATER.match(text, word.end())
    if match is None and "是" in text:
        match = _STATED_LATER_CHINESE.match(text, word.end())
    colon = match is None
    if colon:
        match = _COLON_LATER.match(text, word.end())
    if match is None or _NOT_ABOUT_THE_VALUE.search(match.group("between")):
        return None
    value = match.group("value").rstrip(TRAILING.replace("!", ""))
    name = word.group().casefold()
    pin = value.isdigit() and 4 <= len(value) <= 8 and any(w in name for w in _PIN_WORDS)
    if not (pin or looks_made_up(value)) or not could_be_a_password(value):
        return None
    # After an aside and a colon only what is plainly made up: letters, a digit and a
    # symbol ("…, she asked me to keep it: Abernethy#Loch5").
    symbol = any(not c.isalnum() for c in value) and any(c.isdigit() for c in value)
    if colon and not (pin or symbol):
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
    rf"(?P<value>{PASSWORD_CHARS}{{6,}}|[0-9]{{4,5}}[*#]?)"
)


def _changed_later(text: str, word: re.Match[str]) -> Iterator[Detection]:
    """A made-up value the password was changed to, later in the word's sentence."""
    reach = text[word.end() : word.end() + 100]
    end = SENTENCE_END.search(reach)
    window_end = word.end() + (end.start() if end else len(reach))
    match = _CHANGED_TO.search(text, word.end(), window_end)
    if match is not None:
        value = match.group("value").rstrip(TRAILING)
        # Or a PIN for a word for one: "单元门的密码换了，新的是 0412*".
        pin = _PIN_VALUE.fullmatch(value) and any(w in word.group().casefold() for w in _PIN_WORDS)
        if (pin or looks_made_up(value)) and could_be_a_password(value):
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


_PIN_VALUE = re.compile(r"[0-9]{4,8}[*#]?")


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
        # "email and password?\nuser: reidun.s / Squat!Rack-88": the part after " / ".
        pair = _PAIR_AFTER.match(text, end)
        if pair is not None:
            start, end = pair.start("value"), pair.end("value")
        value = text[start:end].rstrip(TRAILING)
        pin = pin_word and value.isdigit() and 4 <= len(value) <= 8
        if (pin or looks_made_up(value)) and could_be_a_password(value) and typed(value):
            yield Detection(Category.PASSWORD, start, start + len(value))
            return


def _in_its_column(text: str, word: re.Match[str]) -> Iterator[Detection]:
    """The passwords under a header cell that names them (CSV, TSV, a Markdown table)."""

    def names_passwords(cell: str) -> bool:
        return not NOT_A_PASSWORD_FIELD.search(cell.casefold())

    for start, end in cells_under(text, word.start(), word.end(), names_passwords):
        if could_be_a_password(text[start:end]) and " " not in text[start:end]:
            yield Detection(Category.PASSWORD, start, end)
