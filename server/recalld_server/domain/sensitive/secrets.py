"""Secrets: private keys, API keys and tokens, and passwords stated in text."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.spans import Detection

# --- private keys -----------------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\sA-Za-z0-9+/=:,-]*)",
    re.DOTALL,
)
# A block is a key only with a body: "-----BEGIN … KEY----- [REDACTED] -----END …" is not.
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")

# --- keys and tokens with a known shape ---------------------------------------------

_TOKEN_CHARS = r"A-Za-z0-9_\-"
_KNOWN_KEYS = re.compile(
    "|".join(
        (
            # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-), DeepSeek and others.
            rf"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9][{_TOKEN_CHARS}]{{19,}}",
            # Stripe secret and restricted keys.
            r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            # GitHub personal, OAuth, user, server and refresh tokens.
            r"(?<![A-Za-z0-9_])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
            r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}",
            r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_\-]{20,}",
            # AWS access key ids.
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Za-z0-9])",
            # Slack tokens and incoming webhooks.
            r"(?<![A-Za-z0-9])xox[abposrec]-[A-Za-z0-9-]{10,}",
            r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
            # Google API keys.
            r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_-])",
            # Hugging Face, npm, PyPI, SendGrid, Twilio-like.
            r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",
            r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}",
            r"(?<![A-Za-z0-9_-])pypi-[A-Za-z0-9_\-]{50,}",
            r"(?<![A-Za-z0-9_])SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
            # Tencent Cloud SecretId, Telegram bot tokens, DigitalOcean, Azure-style.
            r"(?<![A-Za-z0-9])AKID[A-Za-z0-9]{32}(?![A-Za-z0-9])",
            # Aliyun AccessKey ids.
            r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,30}(?![A-Za-z0-9])",
            r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40}(?![A-Za-z0-9_-])",
            r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}",
            # Zhipu (BigModel) API keys: an id and a secret.
            r"(?<![A-Za-z0-9])[0-9a-f]{32}\.[A-Za-z0-9]{16}(?![A-Za-z0-9])",
            # JSON Web Tokens: a base64url JSON header ("{" encodes as "ey").
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        )
    )
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9._~+/\-]{16,}=*)")

# --- generic secrets: a keyword, then a random-looking value ----------------------------

_SECRET_WORD = (
    r"(?:api[ _-]?key|apikey|access[ _-]?key(?:[ _-]?id)?|secret(?:[ _-]?(?:access[ _-]?)?key)?"
    r"|client[ _-]?secret|auth[ _-]?token|access[ _-]?token|refresh[ _-]?token|token"
    r"|private[ _-]?key|signing[ _-]?key|webhook[ _-]?secret"
    r"|密钥|秘钥|令牌|访问密钥|私钥|token值)"
)
_SECRET_ASSIGNMENT = re.compile(
    rf"(?i){_SECRET_WORD}[\"']?(?:\s*[（(][^）)\n]{{0,30}}[）)]"
    r"|\s+(?:for|of|on|to|at|in|from|with)\s+[^\n,;:：。=]{1,30}?(?=\s+(?:is|was)\s))?"
    r"(?:\s*(?:is|was|are|=|:|：|是|为|為|->|=>)\s*|\s+)"
    r"(?:(?:now|still|actually|just|set to)\s+)?[\"'“`]?"
    r"(?P<value>[A-Za-z0-9+/_\-.~=]{16,})"
)
_RANDOM_WORD = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9+/_\-=])")
_HEX = re.compile(r"[0-9a-fA-F-]+")

# --- passwords ---------------------------------------------------------------------------

# Printable ASCII but quotes: passwords are typed on keyboards; CJK after one ends it.
_PASSWORD_CHARS = r"[\x21\x23-\x26\x28-\x5f\x61-\x7e]"
# "password", also inside a config key (DB_PASSWORD, mysql-root-pwd, "wifi_pass").
_PASSWORD_WORD = re.compile(
    r"(?:密码|密碼|口令|PIN ?码|pin ?码)"
    r"|(?<![A-Za-z0-9_/\\])(?<![A-Za-z0-9]-)(?:[A-Za-z0-9]+[_-])*"
    r"(?:password|passwd|passcode|pass ?phrase|pwd|pw|pass|pin(?: ?code)?"
    r"|(?:door|gate|alarm|lock(?:-screen)?|entry) code|keypad(?: code)?)"
    r"(?:[_-][A-Za-z0-9]+)*(?![A-Za-z])(?:[\"'](?!s\b))?",
    re.IGNORECASE,
)
# An environment variable: PGPASSWORD=…, MYSQL_ROOT_PASSWORD=….
_PASSWORD_ENV = re.compile(
    rf"(?<![A-Za-z0-9_])[A-Z0-9_]*(?:PASSWORD|PASSWD|PWD)[A-Z0-9_]*="
    rf"[\"']?(?P<value>{_PASSWORD_CHARS}{{3,}})"
)
# After the word: "is", ":", "=" (with what it is for in between: "password for the
# portal: …", "密码（新）是 …"), or "set/changed to".
_PASSWORD_STATED = re.compile(
    r"(?i)(?:\s+(?:for|of|on|to|at|in|from|with|the|that|which|we|i|you|he|she|they|my|his"
    r"|her|our)\s+[^\n,;:：。=—]{0,30}?|[（(][^）)\n]{0,20}[）)]"
    r"|[^\s，。,；;！!？?：:=\x21-\x7e]{1,6}?)?"
    r"(?:\s*(?:is|was|will be|are|=|:|：|->"
    r"|是|为|為|改成了?|改为了?|换成了?|设为|设置为|设置成)\s*"
    r"|\s+(?:(?:set|changed|reset|updated)\s+)?to\s+|\s+[—–]\s*|\s+--?\s+)"
    r"(?:(?:now|still|actually|just|simply|it's|it is)\s+)?"
    # Quoted, a password may hold spaces or any script ("velvet moth", “晴天2025”).
    r"(?:[\"“「'‘](?P<quoted>[^\"”」'’\n]{3,64})[\"”」'’]"
    # After the Chinese word, Chinese characters with digits or letters (晓峰2025).
    r"|(?P<mixed>[\u4e00-\u9fff]{1,8}[0-9A-Za-z!@#$%^&*_.-]{2,})"
    rf"|[\"'“‘`「]?(?P<value>{_PASSWORD_CHARS}{{3,}}))"
)
# "her password's just sunshine88".
_PASSWORD_POSSESSIVE = re.compile(
    rf"'s\s+(?:(?:just|simply|still|now)\s+)?(?P<value>{_PASSWORD_CHARS}{{3,}})"
)
# Credentials in a URI (postgres://user:password@host) and on a mysql command line.
_URI_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:(?P<value>[^\s@/]{3,})@"
)
_MYSQL_PASSWORD = re.compile(
    r"(?:\bmysql(?:dump|admin)?\b[^\n]*?\s-p|\bredis-cli\b[^\n]*?\s-a\s*"
    r"|\bsshpass\b[^\n]*?\s-p\s*|\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[\s=]"
    r"|\bcurl\b[^\n]*?\s(?:-u|--user)\s+[^\s:'\"]+:|\bhtpasswd\b[^\n]*?\s-\w*b\w*\s+\S+\s+\S+\s+"
    r"|\bwpa_passphrase\s+\S+\s+|\brequirepass\s+|\bnet\s+use\s+\S+\s+\S+\s+(?=\S+\s+/user:))"
    rf"(?:'(?P<quoted>[^'\n]+)'|\"(?P<double>[^\"\n]+)\"|(?P<value>(?!-){_PASSWORD_CHARS}+))"
)
# The value before the word: "uses sunflower1988 as the password", "X is the wifi password".
_PASSWORD_BEFORE_WORD = re.compile(
    rf"(?<![^\s\"'“‘`(（:：])(?P<value>{_PASSWORD_CHARS}{{6,}})\s+(?:is|was|as)\s+"
    r"(?:(?:the|my|his|her|our|their|its)\s+)?(?:[\w-]+\s+){0,2}?(?:password|passcode|passphrase)\b",
    re.IGNORECASE,
)
# The answer to a question about a password, on the next line ("what's the password?
# \nuser: otter-lantern-51").
_PASSWORD_ANSWER = re.compile(
    rf"(?i)(?:password|passcode|密码)[^\n]{{0,40}}[?？]\s*\n\s*(?:[\w ]{{1,12}}[:：]\s*)?"
    rf"(?P<value>{_PASSWORD_CHARS}{{6,}})\s*$",
    re.MULTILINE,
)
# A login written as user / password ("ops@vance-studio.io / Aws#Vance2026").
_LOGIN_WORD = re.compile(
    r"(?i)\b(?:login|log-in|credentials?|creds)\b|账号密码|账号和密码|用户名和密码|账密"
)
_LOGIN_PAIR = re.compile(rf"(?<![^\s:：(（])[^\s/:：]+\s?/\s?(?P<value>{_PASSWORD_CHARS}{{6,}})")
# Or the value right after the word: "console password Stg-Console!88", "密码 147258".
_PASSWORD_BARE = re.compile(rf"(?:\s+[\"'“‘`「]?|[\"'“‘`「])(?P<value>{_PASSWORD_CHARS}{{3,}})")
# After the Chinese word, the value may follow without a space ("无线网密码yy20180808").
_PASSWORD_BARE_CJK = re.compile(rf"\s*[\"'“‘`「]?(?P<value>{_PASSWORD_CHARS}{{3,}})")
_TO = re.compile(r"\s+(?:(?:set|changed|reset|updated)\s+)?to\s+", re.IGNORECASE)
# Config keys about passwords that hold something else.
_NOT_A_PASSWORD_FIELD = re.compile(
    r"hash|salt|policy|reset|file|length|hint|expir|strength|min|max|rule|field|prompt|label"
)
_REDACTED = frozenset({"redacted", "hidden", "masked", "removed", "omitted", "null", "none"})
# Words that follow "password is" without being one.
_NOT_A_PASSWORD_WORDS = """
    a an the my your his her our their its this that not no none empty blank wrong
    incorrect correct invalid valid expired weak strong long short secure insecure same
    different required missing needed saved stored written changed reset set updated
    too very really still now being also in on at of for to and or but same old new
    unknown forgotten lost hidden encrypted hashed case-sensitive sensitive ok fine good
    bad simple complex easy hard known unchanged temporary
    str string int bytes bool text varchar char optional field hash policy manager
"""
_NOT_A_PASSWORD = frozenset(_NOT_A_PASSWORD_WORDS.split())
_TRAILING = ".,;:!?)]}>”’\"'`。，；：！？）」"


# Public keys and certificates are random-looking but not secret.
_PUBLIC_MATERIAL = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----|$)"
    r"|(?i:sha1|sha256|sha384|sha512|md5|nonce)[-:][A-Za-z0-9+/=_-]+"
    r"|\"(?:n|x|y|x5c|modulus)\"\s*:\s*\"[A-Za-z0-9+/=_-]+"
    r"|(?<![A-Za-z0-9_])(?:pi|ch|cus|in|sub|evt|txn|prod|price|pm|seti|acct)_[A-Za-z0-9]{14,}"
    r"|data:[A-Za-z0-9.+/-]+;base64,[A-Za-z0-9+/=]+"
    r"|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp[0-9]+|sk-ssh-ed25519@openssh\.com)"
    r"\s+[A-Za-z0-9+/=]+",
    re.DOTALL,
)


def private_keys(text: str) -> Iterator[Detection]:
    """Every PEM private key block with a body."""
    if "PRIVATE KEY" not in text:
        return
    for match in _PRIVATE_KEY.finditer(text):
        if _KEY_BODY.search(match.group()):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())


def api_keys(text: str) -> Iterator[Detection]:
    """Every key or token: vendor formats, bearer tokens, random values given as secrets."""
    for match in _KNOWN_KEYS.finditer(text):
        if len(set(match.group())) >= 10:  # not a placeholder like sk-xxxxxxxxxxxxxxxx
            yield Detection(Category.API_KEY, match.start(), match.end())
    for match in _BEARER.finditer(text):
        yield Detection(Category.API_KEY, match.start("value"), match.end("value"))
    for match in _SECRET_ASSIGNMENT.finditer(text):
        value = match.group("value").rstrip(".")
        if _random_enough(value, min_length=16, keyword=True):
            start = match.start("value")
            yield Detection(Category.API_KEY, start, start + len(value))
    public = [(m.start(), m.end()) for m in _PUBLIC_MATERIAL.finditer(text)]
    for match in _RANDOM_WORD.finditer(text):
        if any(start <= match.start() < end for start, end in public):
            continue
        if _random_enough(match.group(), min_length=24, keyword=False):
            yield Detection(Category.API_KEY, match.start(), match.end())


def passwords(text: str) -> Iterator[Detection]:
    """Every password the text states, in a sentence, a config line or a command."""
    for word in _PASSWORD_WORD.finditer(text):
        if text[max(0, word.start() - 2) : word.start()] == "${":
            continue  # "${DB_PASSWORD:?missing}" names a variable
        chinese = not word.group()[0].isascii()
        stated = _PASSWORD_POSSESSIVE.match(text, word.end()) or _PASSWORD_STATED.match(
            text, word.end()
        )
        named = stated.groupdict() if stated is not None else {}
        if stated is not None and (named.get("quoted") or (chinese and named.get("mixed"))):
            group = "quoted" if named.get("quoted") else "mixed"
            value = stated.group(group).strip().rstrip(_TRAILING)
            if _could_be_a_password(value):
                start = stated.start(group) + stated.group(group).index(value[0])
                yield Detection(Category.PASSWORD, start, start + len(value))
            continue
        if stated is not None and not named.get("value"):
            stated = None
        bare = _PASSWORD_BARE_CJK if chinese else _PASSWORD_BARE
        match = stated or bare.match(text, word.end())
        if match is None:
            continue
        value = match.group("value")
        stripped = value.rstrip(_TRAILING)
        # "hunter2!" keeps its "!" only when a sentence does not end there.
        if stripped != value and value[-1] in "!?" and match.end() < len(text):
            stripped = value.rstrip(_TRAILING.replace("!", "").replace("?", ""))
        if not _could_be_a_password(stripped) or not stripped.isascii():
            continue
        name = word.group().strip("\"'").casefold()
        if _NOT_A_PASSWORD_FIELD.search(name):
            continue  # password_hash, POSTGRES_PASSWORD_FILE, password_min_length
        if stripped.endswith("#") and stripped[:-1].isdigit():
            stripped = stripped[:-1]  # "门禁密码2580#": the key pressed after it
        # A PIN ("laptop PIN 8812", "支付密码 385027", "door code is 7315") is digits.
        # Otherwise "pass" alone is too common a word ("boarding pass: NH962") to
        # trust a colon, and without "is" or ":" only a value that looks made up
        # counts.
        pin = (
            stripped.isdigit()
            and 4 <= len(stripped) <= 8
            and any(w in name for w in ("pin", "码", "密", "口令", "code", "keypad"))
        )
        # "to" is weak too: "no password to store".
        weak = (
            name in {"pass", "pw", "pin"}
            or stated is None
            or _TO.match(text, word.end()) is not None
        )
        if not pin and weak and not _looks_made_up(stripped):
            continue
        if not pin and stripped.isdigit() and "code" in name:
            continue  # "the promo code is 2024": only a PIN-length code counts
        start = match.start("value")
        yield Detection(Category.PASSWORD, start, start + len(stripped))
    yield from _passwords_elsewhere(text)


def _passwords_elsewhere(text: str) -> Iterator[Detection]:
    """Passwords not stated after their word.

    Before it, as an answer, in environment variables, URIs and command lines, and
    in user / password pairs.
    """
    for pattern in (_PASSWORD_BEFORE_WORD, _PASSWORD_ANSWER):
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(_TRAILING)
            if _looks_made_up(value) and _could_be_a_password(value):
                start = match.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))
    for match in _PASSWORD_ENV.finditer(text):
        value = match.group("value").rstrip(_TRAILING)
        if _NOT_A_PASSWORD_FIELD.search(match.group().casefold()):
            continue
        if _could_be_a_password(value):
            yield Detection(
                Category.PASSWORD, match.start("value"), match.start("value") + len(value)
            )
    for pattern in (_URI_PASSWORD, _MYSQL_PASSWORD):
        for match in pattern.finditer(text):
            group = next(g for g in ("quoted", "double", "value") if match.groupdict().get(g))
            value = match.group(group)
            if _could_be_a_password(value):
                start = match.start(group)
                yield Detection(Category.PASSWORD, start, start + len(value))
    for word in _LOGIN_WORD.finditer(text):
        for pair in _LOGIN_PAIR.finditer(text, word.end(), min(len(text), word.end() + 80)):
            value = pair.group("value").rstrip(_TRAILING)
            if _looks_made_up(value) and _could_be_a_password(value):
                start = pair.start("value")
                yield Detection(Category.PASSWORD, start, start + len(value))
                break


def _could_be_a_password(value: str) -> bool:
    """Not a word that follows "password is" in ordinary talk, a placeholder or a redaction."""
    if len(value) < 3 or value.casefold() in _NOT_A_PASSWORD:
        return False
    # Variables and redactions: "${DB_PASSWORD}", "[FILTERED]", ":'new_pw'".
    if value.startswith(("${", "{{", "%(", "<", "[", "$(", "*", ":")):
        return False
    if not any(c.isalnum() for c in value):  # "******"
        return False
    return value.strip("<>[](){}*").casefold() not in _REDACTED


def _looks_made_up(value: str) -> bool:
    """Letters mixed with digits or symbols, as passwords are and words are not."""
    letters = any(c.isalpha() for c in value)
    others = any(c.isdigit() or not c.isalnum() for c in value)
    return len(value) >= 6 and letters and others


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_enough(value: str, *, min_length: int, keyword: bool) -> bool:
    """A value that looks generated: long, mixed, high entropy, and not a known non-secret.

    After a keyword ("token: …") hex and lower-case values count; without one only
    mixed-case alphanumerics with digits do, so commit hashes, UUIDs, digests,
    identifiers and base64 of ordinary text are left alone.
    """
    core = value.rstrip("=")
    if len(core) < min_length:
        return False
    digits = sum(c.isdigit() for c in core)
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    if keyword:
        if digits == 0 or digits == len(core) or (upper + lower) == 0:
            return False
        if "." in core and not core.replace(".", "").isalnum():
            return _entropy(core) >= 3.5
        return _entropy(core) >= 3.3
    if _HEX.fullmatch(core):
        return False
    if digits < 2 or upper < 2 or lower < 2:
        return False
    if _looks_like_path_or_words(core) or _decodes_to_text(value):
        return False
    return _entropy(core) >= 4.0


def _looks_like_path_or_words(value: str) -> bool:
    """Identifiers (camelCase, snake_case), slugs and paths: mostly letters in words."""
    parts = [part for part in re.split(r"[/_\-]", value) if part]
    if len(parts) >= 3 and all(part.isalpha() or part.isdigit() for part in parts):
        return True
    humps = re.findall(r"[A-Z]?[a-z]{3,}", value)
    return sum(len(h) for h in humps) >= 0.7 * len(value)


def _decodes_to_text(value: str) -> bool:
    """Base64 of ordinary text (a config blob, not a key) decodes to printable words."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        plain = decoded.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return plain.isprintable() and (" " in plain or plain.isalpha())
