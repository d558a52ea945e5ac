"""Finds sensitive values in Chinese and English text, offline.

Maintained libraries do the checks where one exists: phone numbers are found by
`phonenumbers` (Google's libphonenumber metadata), and card numbers (Luhn), Chinese
resident ID numbers (ISO 7064 MOD 11-2 and the birth date) and IBANs (mod 97) are
validated by `python-stdnum`. The rest is written here, because no library fits a
server's write path: key and token prefixes follow the vendors' published formats
(the same rules as gitleaks), and passwords and passport numbers are recognised
only where the text says what they are ("password is …", "密码是…", "passport
E12345678"); a bare 9-digit number is not a passport. `docs/security.md` lists
every rule.

Candidates are found by regular expressions and then checked, so that order
numbers, timestamps, versions, hashes and phone-shaped counts are left alone:
digits glued to letters, dots or more digits are never a card, an ID or a phone.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.cn import ric

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.categories import PLACEHOLDER_LABELS


@dataclasses.dataclass(frozen=True, slots=True)
class Detection:
    """One sensitive value: where it is in the text (`text[start:end]`) and its kind."""

    category: Category
    start: int
    end: int


# Overlapping detections keep the first category of this order (a JWT inside
# "password is eyJ…" is a key; a card number is not also a phone number).
_PRIORITY = {
    category: rank
    for rank, category in enumerate(
        (
            Category.PRIVATE_KEY,
            Category.API_KEY,
            Category.PASSWORD,
            Category.NATIONAL_ID,
            Category.IBAN,
            Category.CARD_NUMBER,
            Category.PASSPORT,
            Category.EMAIL,
            Category.PHONE,
        )
    )
}

_DIGIT = "0-9\uff10-\uff19"  # ASCII and full-width digits
_TO_ASCII = str.maketrans("０１２３４５６７８９", "0123456789")
# A number is standalone when no ASCII letter, digit, or joining punctuation touches
# it: "v1.4111111111111111", "SO-4111…" and "4111…abc" are identifiers, not cards.
_BEFORE = rf"(?<![A-Za-z{_DIGIT}_./\\#:+-])"
_AFTER = rf"(?![A-Za-z{_DIGIT}_/\\#+-]|[.:][A-Za-z{_DIGIT}])"

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

# --- identifiers -----------------------------------------------------------------------

# Digits in groups split by single spaces or dashes; a card is a run of whole groups.
_DIGIT_RUN = re.compile(rf"{_BEFORE}[{_DIGIT}]+(?:[ \-][{_DIGIT}]+)*{_AFTER}")
_GROUP = re.compile(rf"[{_DIGIT}]+")
_NATIONAL_ID = re.compile(
    rf"{_BEFORE}[1-9１-９][{_DIGIT}]{{5}}[ ]?[{_DIGIT}]{{8}}[ ]?[{_DIGIT}]{{3}}[{_DIGIT}Xx]"
    rf"(?![A-Za-z{_DIGIT}_])"
)
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_PASSPORT_WORD = re.compile(
    r"(?i)(?:passports?|reisepass|passeport|pasaporte|passaporte|passaporto|paspoort|paszport"
    r"|reisepassnummer|passnummer|pass-nr\.?|hộ chiếu|(?:загран)?паспорт|διαβατήριο|护照|護照"
    r"|旅券|パスポート|여권)"
)
# "173825112 (passport)": the number right before the word.
_PASSPORT_BEFORE = re.compile(
    r"(?<![A-Za-z0-9])([A-Z0-9]{6,9})\s*"
    r"(?:[(（]|(?:is|was)\s+(?:the|my|his|her|their|our)\s+|是)?\s*$"
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
# Words right before a number that make it something else.
_NOT_A_CARD = re.compile(
    r"(?i)(?:order|invoice|tracking|shipment|parcel|transaction|txn|ticket|ref(?:erence)?"
    r"|serial|sku|part|model|imei|balance|waybill|awb|id|row|pv|uv|routing|loyalty"
    r"|coupon|voucher|student|employee|订单|单号|流水|会员"
    r"|运单|快递|发票|工单|序列号|编号|型号|货号|学号|工号|次方)"
    r"\s*(?:(?:no|number|num|nr|code|id)\.?|号码|号|代码)?(?:\s+is)?\s*[#:：是为]?\s*$"
)

# --- contact -----------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
# Units right after a number that make it a count ("15873920461 字节", "13800 rows").
_UNIT_AFTER = re.compile(
    r"\s?(?:字节|个|次|元|块|条|行|件|人|张|位|字|秒|毫秒|bytes?|items?|rows?|times|yuan|words"
    r"|files?|records?|users?|ms|seconds?)(?![A-Za-z])",
    re.IGNORECASE,
)
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
_ARITHMETIC = re.compile(r"[=^*×÷]\s*$|^\s*[=^*×÷]")
_PHONE_REGIONS = ("CN", "US")
# Numbers written the national way of another country ("07823 619930", "070-9938-7253")
# count where the text says it is a phone number: read in these regions too.
_PHONE_CUE = re.compile(
    r"(?i)(?:phone|mobile|cell|tel|call|text me|number|desk|office|landline|whatsapp|handy"
    r"|büro|telefon|portable|móvil|telemóvel|celular|werk|mobiel|携帯|電話|番号|手机|电话"
    r"|号码|座机|联系|手機|電話|휴대폰|전화|телефон|моб)"
)
_CUED_REGIONS = (
    "GB", "DE", "FR", "JP", "AU", "SG", "HK", "TW", "IN", "NL", "RU", "IT", "ES", "KR",
    "BR", "CA", "PT", "CH", "SE", "MY", "TH", "VN", "PH", "ID", "MX", "AE",
)  # fmt: skip
"""Regions numbers without a country code are read in: mainland China, then NANP."""
# Dots separate phone groups only as 415.555.0199 (or +1.415.555.0199), never as versions.
_DOTTED_PHONE = re.compile(
    r"(?:\+?[0-9]{1,3}[ .])?\(?[0-9]{2,4}\)?\.[0-9]{3,4}\.[0-9]{4}"
    r"|(?:\+33[ .]?|0)[1-9](?:\.[0-9]{2}){4}"  # France: 07.36.92.41.96
)
# The shortest phone number libphonenumber accepts here has seven digits; a text without
# seven digits close together is not worth its matcher (the costliest rule by far).
_PHONE_SHAPE = re.compile(rf"[{_DIGIT}](?:[ ().\-–]{{0,2}}[{_DIGIT}]){{6}}")


# What masking left behind is not found again ("password is [PASSWORD]").
_PLACEHOLDER = re.compile(
    r"\[(?:" + "|".join(PLACEHOLDER_LABELS.values()) + r")(?: ••••[A-Za-z0-9]{4})?\]"
)


class Detector:
    """Finds the sensitive values in a text (stateless; safe to share)."""

    def find(self, text: str) -> list[Detection]:
        """Every sensitive value in the text, in order, none overlapping."""
        if not text:
            return []
        found = [
            *self._private_keys(text),
            *self._api_keys(text),
            *self._passwords(text),
            *self._national_ids(text),
            *self._cards(text),
            *self._ibans(text),
            *self._passports(text),
            *self._emails(text),
        ]
        # Phones last, over the text with what was found blanked out: the matcher
        # would otherwise take "…002X    1380013…" for one candidate, reject it, and
        # go on past the phone number in it.
        found.extend(self._phones(_blanked(text, found)))
        if "[" in text:
            masked = [(m.start(), m.end()) for m in _PLACEHOLDER.finditer(text)]
            found = [
                d for d in found if all(d.end <= start or d.start >= end for start, end in masked)
            ]
        return _without_overlaps(found)

    @staticmethod
    def _private_keys(text: str) -> Iterator[Detection]:
        if "PRIVATE KEY" not in text:
            return
        for match in _PRIVATE_KEY.finditer(text):
            if _KEY_BODY.search(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())

    @staticmethod
    def _api_keys(text: str) -> Iterator[Detection]:
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

    @staticmethod
    def _passwords(text: str) -> Iterator[Detection]:
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

    @staticmethod
    def _national_ids(text: str) -> Iterator[Detection]:
        for match in _NATIONAL_ID.finditer(text):
            number = match.group().replace(" ", "").translate(_TO_ASCII).upper()
            if ric.is_valid(number):
                yield Detection(Category.NATIONAL_ID, match.start(), match.end())

    @staticmethod
    def _cards(text: str) -> Iterator[Detection]:
        for run in _DIGIT_RUN.finditer(text):
            groups = [(g.start(), g.end()) for g in _GROUP.finditer(text, run.start(), run.end())]
            for start, end in _card_spans(text, groups):
                if _NOT_A_CARD.search(text, max(0, start - 24), start):
                    continue
                yield Detection(Category.CARD_NUMBER, start, end)

    @staticmethod
    def _ibans(text: str) -> Iterator[Detection]:
        position = 0
        while (match := _IBAN.search(text, position)) is not None:
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

    @staticmethod
    def _passports(text: str) -> Iterator[Detection]:
        for word in _PASSPORT_WORD.finditer(text):
            # The numbers that follow the word in its sentence ("passports E29799765 and
            # G88040687"), within a short reach, or the one right before it.
            reach = text[word.end() : word.end() + 64]
            end = _SENTENCE_END.search(reach)
            window_end = word.end() + (end.start() if end else len(reach))
            numbers = list(_PASSPORT_NUMBER.finditer(text, word.end(), window_end))
            before = _PASSPORT_BEFORE.search(text, max(0, word.start() - 28), word.start())
            if before is not None:
                numbers.extend(_PASSPORT_NUMBER.finditer(text, before.start(1), before.end(1)))
            for number in numbers:
                value = number.group()
                if value.isdigit() and (len(set(value)) < 3 or _DATE_DIGITS.fullmatch(value)):
                    continue
                yield Detection(Category.PASSPORT, number.start(), number.end())

    @staticmethod
    def _emails(text: str) -> Iterator[Detection]:
        if "@" not in text:
            return
        for match in _EMAIL.finditer(text):
            yield Detection(Category.EMAIL, match.start(), match.end())

    @staticmethod
    def _phones(text: str) -> Iterator[Detection]:
        # Copied from web pages, numbers come with no-break spaces (same length).
        text = text.replace("\xa0", " ").replace("\u202f", " ")
        if not _PHONE_SHAPE.search(text):
            return
        # IBAN-shaped text (valid or not) holds no phone number.
        ibans = [Detection(Category.IBAN, m.start(), m.end()) for m in _IBAN.finditer(text)]
        # "[PHONE ••••8000]" left by masking is no cue that a number is a phone.
        cues = _PLACEHOLDER.sub(lambda m: " " * len(m.group()), text)
        cued = _PHONE_CUE.search(cues) is not None
        # The matcher can take two adjacent numbers for one candidate and keep only
        # the inner one it recognises ("+1 415 555 0132 13800138000"): scan again
        # with what it found blanked out, until a pass finds nothing new.
        found: list[Detection] = []
        for _ in range(3):
            scanned = _blanked(text, [*ibans, *found])
            new = list(_phone_pass(scanned, _PHONE_REGIONS))
            if cued:
                taken = [*ibans, *found, *new]
                new.extend(
                    d
                    for d in _phone_pass(_blanked(text, taken), _CUED_REGIONS)
                    if _PHONE_CUE.search(cues, max(0, d.start - 40), min(len(text), d.end + 12))
                )
            if not new:
                break
            found.extend(new)
        yield from found


def _phone_pass(text: str, regions: Sequence[str]) -> Iterator[Detection]:
    seen: set[tuple[int, int]] = set()
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(
            text, region, leniency=phonenumbers.Leniency.VALID
        ):
            span = (match.start, match.end)
            if any(match.start < end and start < match.end for start, end in seen):
                continue
            if not _standalone(text, match.start, match.end):
                continue
            if "." in match.raw_string and not _DOTTED_PHONE.fullmatch(match.raw_string):
                continue  # "1.0.13800138" is a version
            before = text[max(0, match.start - 3) : match.start]
            if _ARITHMETIC.search(before) or _ARITHMETIC.match(text, match.end):
                continue  # "2^34 = 17179869184"
            if _UNIT_AFTER.match(text, match.end) or _NOT_A_CARD.search(
                text, max(0, match.start - 24), match.start
            ):
                continue
            seen.add(span)
            yield Detection(Category.PHONE, match.start, match.end)


def _blanked(text: str, detections: Sequence[Detection]) -> str:
    """The text with every detection replaced by spaces (offsets unchanged)."""
    if not detections:
        return text
    chars = list(text)
    for detection in detections:
        chars[detection.start : detection.end] = " " * (detection.end - detection.start)
    return "".join(chars)


def _standalone(text: str, start: int, end: int) -> bool:
    """No version dot, identifier or longer number glued to the match."""
    before = text[start - 1 : start] if start else ""
    if text[max(0, start - 4) : start].casefold() == "tel:" or (
        text[start : start + 1] == "+" and before == ":"
    ):
        before = " "  # tel:+1…, TEL;TYPE=cell:+86 …
    after, next_after = text[end : end + 1], text[end + 1 : end + 2]
    # "]" and "[" too: a number glued to a masked value was glued to that value.
    if before in {".", "_", "/", "\\", "#", "-", ":", "]"} or _ascii_alnum(before):
        return False
    if after in {"_", "/", "\\", "-", "["} or _ascii_alnum(after):
        return False
    return not (after in {".", ":"} and _ascii_alnum(next_after))


def _ascii_alnum(char: str) -> bool:
    """An ASCII letter or digit, or any digit (full-width digits glue numbers too)."""
    return (char.isascii() and char.isalnum()) or char.isdigit()


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
            number = raw.replace(" ", "").replace("-", "").translate(_TO_ASCII)
            if not (_is_card_number(number) and _grouped_like_a_card(raw)):
                continue
            if all(end <= s or start >= e for s, e in taken):
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


def _could_be_a_password(value: str) -> bool:
    """Not a word that follows "password is" in ordinary talk, a placeholder or a redaction."""
    if len(value) < 3 or value.casefold() in _NOT_A_PASSWORD:
        return False
    if value.startswith(
        ("${", "{{", "%(", "<", "[", "$(", "*", ":")
    ):  # "${DB_PASSWORD}", "[FILTERED]"
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


def _without_overlaps(found: list[Detection]) -> list[Detection]:
    """One detection per overlapping group: same-category spans join, then priority wins.

    Two rules may find one value by different edges (a bot token's known shape and a
    random-looking word ending in its URL path): masking their union hides both.
    """
    merged: list[Detection] = []
    for detection in sorted(found, key=lambda d: (d.category, d.start)):
        last = merged[-1] if merged else None
        if last is not None and last.category is detection.category and detection.start < last.end:
            merged[-1] = Detection(last.category, last.start, max(last.end, detection.end))
        else:
            merged.append(detection)
    ranked = sorted(merged, key=lambda d: (_PRIORITY[d.category], d.start - d.end, d.start))
    kept: list[Detection] = []
    for detection in ranked:
        if all(detection.end <= k.start or detection.start >= k.end for k in kept):
            kept.append(detection)
    return sorted(kept, key=lambda d: d.start)
