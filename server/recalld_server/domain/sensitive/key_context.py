"""Keys, tokens and private keys found by the words around them, not by a vendor's shape.

A value with no published shape is a secret when the text names it as one and it
looks generated:

- a word for a key or token earlier in its clause ("PagerDuty key …", "华为云 AK …",
  "stream key into OBS before every live: …", "密钥 …");
- a variable, parameter, element or attribute named for one (`TF_TOKEN_app_io=…`,
  `?key=…`, `<apiKey>…</apiKey>`);
- a private key's shape (64 hex digits, a 32-byte base64 key, a Bitcoin WIF key)
  after a word for a private key ("私钥", "PrivateKey", "wallet key", "WIF").

Bitcoin keys in WIF with a valid checksum, BIP-32 extended private keys and `age`
identities are private keys by their shape alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.spans import Detection

RandomEnough = Callable[[str], bool]

# A word for a key or a token. Upper-case AK, SK and PAT only: "ak" and "sk" are
# common in other languages, "pat" is a name.
_KEY_WORD = re.compile(
    r"(?i:(?<![A-Za-z0-9_-])(?:api[ _-]?)?keys?(?![A-Za-z0-9_-])|\btokens?\b|\bsecrets?\b"
    r"|\bcredentials?\b)"
    r"|(?<![A-Za-z0-9])(?:AK|SK|PAT|SecretId|SecretKey|AppSecret|AppKey)(?![A-Za-z0-9])"
    r"|密钥|秘钥|令牌|推流码|串流码|串流金钥|凭证|凭据|授权码|访问码|鉴权|アクセスキー|シークレット|토큰"
)
# Words right before "key" that make it no secret: a database's key, a map's key,
# a public key, a licence.
_NOT_A_SECRET_KEY = re.compile(
    r"(?i)(?:public|publishable|site|primary|foreign|partition|sort|cache|object|idempotency"
    r"|idempotent|licen[cs]e|product|activation|registration|serial|registry|map|lookup|index"
    r"|composite|unique|routing|shard|hash|row|host|music|answer|piano|house|car|room|door"
    r"|spare|master bedroom|surrogate|natural|candidate|s3|bucket|dedup(?:e|lication)?|sign-in"
    r"|message|musical|field|column|json|dict(?:ionary)?|hot|short ?cut|function|f[0-9]+)"
    r"[ _-]*$"
)
# Words right after the word that make it about something else: "key id", "token count".
_NOT_THE_SECRET_AFTER = re.compile(
    r"(?i)[ _-]*(?:ids?\b|fingerprint|hash|name|alias|version|arn|vault|ring|signature"
    r"|points?|takeaways?|dates?|figures?|results?|metrics?|count|usage|limit|length|size"
    r"|expir|ttl|rotation policy|type|format|placeholder|example|budget|cost|price)"
)
# Between the word and the value: what says the value is another thing.
_ANOTHER_THING = re.compile(
    r"(?i)\b(?:id|uuid|guid|hash|sha[0-9]*|md5|commit|digest|checksum|fingerprint|version"
    r"|request|trace|order|invoice|serial|ref|name|user(?:name)?|account id|key id|public"
    r"|pub|tx|txid|transaction|address|block|build|session id|placeholder|example"
    r"|password|passwd|passphrase|pwd|pin)\b"
    r"|交易|地址|哈希|编号|示例|公钥|密码|口令"
)
# A sentence ends at a full stop before a space, a newline, or a Chinese full stop.
_CLAUSE_END = re.compile(r"[.!?;](?:\s|$)|[。；！？\n]")
_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9+/_\-.~=])[A-Za-z0-9+/_\-.~]{16,}={0,2}(?![A-Za-z0-9+/_\-~=])"
)

# A variable, a query parameter, an element or an attribute named for a secret.
_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:key|token|secret|credential|auth)[A-Za-z0-9_.-]*"
_NAMED_VALUE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_SECRET_NAME})\s*=\s*[\"']?"
    r"(?P<value>[A-Za-z0-9+/_\-.~]{16,}={0,2})"
    rf"|[?&](?P<param>{_SECRET_NAME})=(?P<query>[A-Za-z0-9+/_\-.~%]{{16,}})"
    rf"|<(?P<tag>{_SECRET_NAME})>\s*(?P<element>[A-Za-z0-9+/_\-.~]{{16,}}={{0,2}})\s*</(?P=tag)>"
)
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)public|publishable|site|cache|idempot|partition|sort|primary|foreign|row|object"
    r"|hash|licen[cs]e|(?:^|[_.-])ids?$|_id_|arn|name|path|file|url|uri|endpoint|region|type"
    r"|alias|version|format|length|size|expir|ttl|count|header|author|monkey|keyboard|keyword"
    r"|turkey|donkey|hockey|jockey|whiskey|lackey"
)

# --- private keys by their words ------------------------------------------------------

_PRIVATE_WORD = re.compile(
    r"(?i)private[ _-]?key|privatekey|priv[ _-]?key|\bwif\b|wallet|metamask|signing[ _-]?key"
    r"|\bsigns? with\b|account[ _-]?key|paper[ -]wallet|私钥|私鑰|秘密鍵|개인\s?키"
    r"|приватн\w* ключ|clave privada|chave privada|clé privée|privater schlüssel"
)
_PRIVATE_SHAPE = re.compile(
    r"(?<![A-Za-z0-9+/])(?:0x)?[0-9a-fA-F]{64}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=(?![A-Za-z0-9+/=])"
    r"|(?<![A-Za-z0-9])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])"
)
# A private key by its shape alone.
_PRIVATE_BY_SHAPE = re.compile(
    r"(?<![A-Za-z0-9])AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])[xt]prv[1-9A-HJ-NP-Za-km-z]{100,112}(?![A-Za-z0-9])"
)
_WIF = re.compile(r"(?<![A-Za-z0-9])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])")
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


# Every value these rules take is one run of 16 or more of these characters: a text
# without one (most memories) is not searched for words.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-.~]{16}")


def keys_in_clauses(text: str, random_enough: RandomEnough) -> Iterator[Detection]:
    """The first generated-looking value after each word for a key, in the word's clause."""
    if _LONG_RUN.search(text) is None:
        return
    for word in _KEY_WORD.finditer(text):
        if _NOT_A_SECRET_KEY.search(text, max(0, word.start() - 24), word.start()):
            continue
        if _NOT_THE_SECRET_AFTER.match(text, word.end()):
            continue
        reach = text[word.end() : word.end() + 120]
        end = _CLAUSE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        for candidate in _CANDIDATE.finditer(text, word.end(), window_end):
            value = candidate.group()
            between = text[word.end() : candidate.start()]
            if _ANOTHER_THING.search(between):
                break
            if text[candidate.start() - 1 : candidate.start()] in (":", "/", "@") or "//" in value:
                continue  # a URL or an address
            if random_enough(value) and not _words_joined(value):
                yield Detection(Category.API_KEY, candidate.start(), candidate.end())
                break


def _words_joined(value: str) -> bool:
    """Words joined by dashes, dots or underscores, with numbers and short tags.

    A name ("user_profile_cache_v2_20240101") or a passphrase ("granite-swallow-51"),
    not a key.
    """
    parts = [part for part in re.split(r"[-_.:/]", value) if part]
    words = [part for part in parts if _word_like(part)]
    return len(words) >= 2 and all(
        _word_like(part) or part.isdigit() or len(part) <= 3 for part in parts
    )


def _word_like(part: str) -> bool:
    """Written as a word is: lower case, capitalised or upper case, not mixed at random."""
    cased = part.islower() or part.istitle() or part.isupper()
    return part.isalpha() and 3 <= len(part) <= 15 and cased


def named_values(text: str, random_enough: RandomEnough) -> Iterator[Detection]:
    """Generated-looking values of variables, parameters and elements named for secrets."""
    if _LONG_RUN.search(text) is None:
        return
    for match in _NAMED_VALUE.finditer(text):
        group = next(g for g in ("value", "query", "element") if match.group(g) is not None)
        name = match.group("name") or match.group("param") or match.group("tag")
        if _NOT_A_SECRET_NAME.search(name):
            continue
        value = match.group(group)
        if random_enough(value.replace("%2B", "+").replace("%2F", "/").replace("%3D", "=")):
            yield Detection(Category.API_KEY, match.start(group), match.end(group))


def private_keys_by_context(text: str) -> Iterator[Detection]:
    """Private keys by shape (WIF with its checksum, xprv, age) or by their word nearby."""
    if _LONG_RUN.search(text) is None:
        return  # every shape below is longer than 16 characters
    for match in _PRIVATE_BY_SHAPE.finditer(text):
        yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    for match in _WIF.finditer(text):
        if _valid_wif(match.group()):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    for word in _PRIVATE_WORD.finditer(text):
        reach = text[word.end() : word.end() + 160]
        end = _CLAUSE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        for shape in _PRIVATE_SHAPE.finditer(text, word.end(), window_end):
            if _ANOTHER_THING.search(text, word.end(), shape.start()):
                break
            yield Detection(Category.PRIVATE_KEY, shape.start(), shape.end())
            break


def _valid_wif(value: str) -> bool:
    """A Bitcoin private key in Wallet Import Format: version 0x80/0xEF and its checksum."""
    number = 0
    for char in value:
        number = number * 58 + _BASE58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    if len(raw) not in (37, 38) or raw[0] not in (0x80, 0xEF):
        return False
    payload, checksum = raw[:-4], raw[-4:]
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] == checksum
