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

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.key_encodings import keys_by_encoding
from recalld_server.domain.sensitive.spans import (
    SENTENCE_END,
    Detection,
    alone_below,
    answered_below,
    cells_under,
    listed_under,
)

RandomEnough = Callable[[str], bool]

# A word for a key or a token. Upper-case AK, SK and PAT only: "ak" and "sk" are
# common in other languages, "pat" is a name.
_KEY_WORD = re.compile(
    r"(?i:(?<![A-Za-z0-9_-])(?:api[ _-]?)?keys?(?![A-Za-z0-9_-])|\btokens?\b|\bsecrets?\b"
    r"|\bcredentials?\b)"
    r"|(?<![A-Za-z0-9])(?:AK|SK|PAT|SecretId|SecretKey|AppSecret|AppKey)(?![A-Za-z0-9])"
    r"|密钥|秘钥|令牌|推流码|串流码|串流金钥|凭证|凭据|授权码|访问码|鉴权|アクセスキー|シークレット|토큰"
    # "API key" in Korean, Japanese, Russian, Spanish, Portuguese, German and French.
    r"|(?i:API\s?키|시크릿\s?키|액세스\s?키|API\s?キー|API-ключ|ключ\w*\s+API|clave\s+(?:de\s+)?API"
    r"|chave\s+(?:de\s+)?API|API-Schlüssel|clé\s+(?:d'|de\s+l')?API|chiave\s+(?:di\s+)?API"
    r"|klucz\w*\s+API|API[- ](?:nyckel|nøkkel|nøgle|avain|sleutel|kulcs|klucz|anahtar))"
)
# Words right before "key" that make it no secret: a database's key, a map's key,
# a public key, a licence.
_NOT_A_SECRET_KEY = re.compile(
    r"(?i)(?:public|publishable|site|primary|foreign|partition|sort|cache|object|idempotency"
    r"|idempotent|licen[cs]e|product|activation|registration|serial|registry|map|lookup|index"
    r"|composite|unique|routing|shard|hash|row|host|music|answer|piano|house|car|room|door"
    r"|spare|master bedroom|surrogate|natural|candidate|s3|bucket|dedup(?:e|lication)?|sign-in"
    r"|message|musical|field|column|json|dict(?:ionary)?|hot|short ?cut|function|f[0-9]+"
    r"|search-only|search only|read-only public|anon|anonymous|pub)"
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
    r"|request|trace|order|invoice|serial|ref|name|user ?(?:name|id)|account id|key id|public"
    r"|pub|tx|txid|transaction|address|block|build|session id|placeholder|example"
    r"|password|passwd|passphrase|pwd|pin)\b"
    r"|交易|地址|哈希|编号|示例|公钥|密码|口令"
)
_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9+/_\-.~=])[A-Za-z0-9+/_\-.~]{16,}={0,2}"
    # Base64 parts joined by "--" (an encrypted cookie: data--iv--tag).
    r"(?:--[A-Za-z0-9+/]{8,}={0,2})*(?![A-Za-z0-9+/_\-~=])"
)

# A variable, a query parameter, an element or an attribute named for a secret.
_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:key|token|secret|credential|auth)[A-Za-z0-9_.-]*"
# An HTTP header carrying a secret: "X-Auth-Key: …", "X-Api-Key: …", "Api-Key: …".
_SECRET_HEADER = re.compile(
    r"(?i)(?<![A-Za-z0-9-])(?P<name>(?:x-)?[a-z-]*(?:key|token|secret|auth)[a-z-]*)\s*:\s*"
    r"(?P<value>[A-Za-z0-9+/_\-.~]{16,}={0,2})(?![A-Za-z0-9+/_\-.~=])"
)
_NAMED_VALUE = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_SECRET_NAME})\s*=\s*[\"']?"
    r"(?P<value>[A-Za-z0-9+/_\-.~:]{16,}={0,2})"
    # Query parameters: also an app's id and a URL's signature (SAS, pre-signed URLs).
    rf"|[?&](?P<param>{_SECRET_NAME}|appid|app_id|sig|signature)=(?P<query>[A-Za-z0-9+/_\-.~%]{{16,}})"
    rf"|<(?P<tag>{_SECRET_NAME})>\s*(?P<element>[A-Za-z0-9+/_\-.~]{{16,}}={{0,2}})\s*</(?P=tag)>"
    # YAML and JSON: "app_key: 7395D5F7…", "\"apiToken\": \"…\"".
    rf"|(?<![A-Za-z0-9_.-])[\"']?(?P<field>{_SECRET_NAME})[\"']?[ \t]*:[ \t]*[\"']?"
    r"(?P<mapped>[A-Za-z0-9+/_\-.~]{16,}={0,2})(?=[\"']?[ \t]*(?:[,}#\n]|$))"
)
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)public|publishable|site|cache|idempot|partition|sort|primary|foreign|row|object"
    # An id, but not an API key pair's id (APCA_API_KEY_ID, like AWS_ACCESS_KEY_ID).
    r"|hash|licen[cs]e|(?:^|(?<!api_key)(?<!access_key)[_.-])ids?$|_id_|arn|name|path|file|url"
    r"|uri|endpoint|region|type"
    r"|alias|version|format|length|size|expir|ttl|count|header|author|monkey|keyboard|keyword"
    r"|turkey|donkey|hockey|jockey|whiskey|lackey"
    # A Wi-Fi network's key is its password (passwords and password_syntax find it).
    r"|wifi|wireless|wlan"
)

# --- private keys by their words ------------------------------------------------------

_PRIVATE_WORD = re.compile(
    r"(?i)private[ _-]?key|privatekey|priv[ _-]?key|\bwif\b|wallet|metamask|signing[ _-]?key"
    r"|\bsigns? with\b|account[ _-]?key|paper[ -]wallet|私钥|私鑰|秘密鍵|개인\s?키"
    r"|приватн\w* ключ|clave privada|chave privada|clé privée|privater schlüssel"
    # "a Bitcoin key in it: K…" (an address is not a key; _PRIVATE_SHAPE has no address).
    r"|\b(?:bitcoin|btc|litecoin|ethereum|eth|crypto) key\b"
    # A wallet's seed: "Polkadot secret seed 0x…", "family seed".
    r"|\b(?:secret|family|wallet|master) seed\b"
)
_PRIVATE_SHAPE = re.compile(
    r"(?<![A-Za-z0-9+/])(?:0x)?[0-9a-fA-F]{64}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=(?![A-Za-z0-9+/=])"
    r"|(?<![A-Za-z0-9])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])"
    # A 64-byte secret in base58 (Solana and other ed25519 wallets' exports).
    r"|(?<![A-Za-z0-9])[1-9A-HJ-NP-Za-km-z]{86,88}(?![A-Za-z0-9])"
    # Seeds shaped like Stellar's and XRP's, named as such (key_encodings.py checks
    # the ones that carry their checksum, named or not).
    r"|(?<![A-Za-z0-9])S[A-Z2-7]{55}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])s[1-9A-HJ-NP-Za-km-z]{27,29}(?![A-Za-z0-9])"
)
# A private key by its shape alone: age identities, BIP-32 extended private keys, Nostr
# (nsec, bech32), Tezos (edsk, spsk, p2sk), and a PEM private key in base64 (as a
# Kubernetes Secret or an environment variable holds one: "LS0tLS1CRUdJTi" is
# "-----BEGIN" encoded).
_PRIVATE_BY_SHAPE = re.compile(
    r"(?<![A-Za-z0-9])AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])[xyztuvYZUV]prv[1-9A-HJ-NP-Za-km-z]{100,112}(?![A-Za-z0-9])"
    # Avalanche's "PrivateKey-" (CB58).
    r"|(?<![A-Za-z0-9])PrivateKey-[1-9A-HJ-NP-Za-km-z]{40,60}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])nsec1[02-9ac-hj-np-z]{58}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])(?:edsk|spsk|p2sk)[1-9A-HJ-NP-Za-km-z]{50,95}(?![A-Za-z0-9])"
    # A minisign secret key (its public keys start "RWQ"/"RWS").
    r"|(?<![A-Za-z0-9+/])RWRTY0Iy[A-Za-z0-9+/]{100,}={0,2}"
    # Move chains' exports: Sui (bech32 "suiprivkey1"), Aptos and others (AIP-80).
    r"|(?<![A-Za-z0-9])suiprivkey1[02-9ac-hj-np-z]{50,}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9-])(?:ed25519|secp256k1|secp256r1)-priv-0x[0-9a-fA-F]{64}(?![A-Za-z0-9])"
    # A Tor onion service's hs_ed25519_secret_key file in base64 ("== ed25519v1-secret").
    r"|(?<![A-Za-z0-9+/])PT0gZWQyNTUxOXYxLXNlY3JldD[A-Za-z0-9+/]{40,}={0,2}"
)
_BASE64_PEM = re.compile(r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2}")
# A private key as a JSON member names it: Tendermint's priv_validator_key.json
# ("priv_key": {"type": …, "value": "…"}), a Cardano signing key file's cborHex.
_JSON_PRIVATE = re.compile(
    r"\"priv(?:ate)?_?key\"\s*:\s*\{[^{}]{0,120}?\"value\"\s*:\s*\"(?P<value>[A-Za-z0-9+/]{40,}={0,2})\""
    # NEAR's credentials file: "private_key": "ed25519:…" (base58).
    r"|\"private_?key\"\s*:\s*\"(?:ed25519|secp256k1):(?P<value2>[1-9A-HJ-NP-Za-km-z]{40,})\""
    r"|(?i:skey|signing ?key).{0,160}?(?<![0-9a-fA-F])(?P<cbor>5820[0-9a-fA-F]{64})(?![0-9a-fA-F])",
    re.DOTALL,
)
# The private members of a JSON Web Key ("d" of EC and OKP keys; RSA's primes too).
_JWK_PRIVATE = re.compile(r"\"(?:d|p|q|dp|dq|qi)\"\s*:\s*\"(?P<value>[A-Za-z0-9_-]{20,})\"")
# A keypair file as a JSON array of 64 bytes (Solana's id.json).
_BYTE_ARRAY_KEY = re.compile(r"\[\s*(?:[0-9]{1,3}\s*,\s*){63}[0-9]{1,3}\s*\]")
_KEYPAIR_WORD = re.compile(r"(?i)solana|keypair|id\.json|wallet|private|secret|私钥")
# A public key's name shortly before a value: "pub_key": {"type": "…PubKeyEd25519", …}.
_PUBLIC_BEFORE = re.compile(r"(?i)pub_?key|public_?key")
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
        yield from _keys_around(text, word, random_enough)
        reach = text[word.end() : word.end() + 120]
        end = SENTENCE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        for candidate in _CANDIDATE.finditer(text, word.end(), window_end):
            value = candidate.group()
            between = text[word.end() : candidate.start()]
            if _ANOTHER_THING.search(between):
                break
            if text[candidate.start() - 1 : candidate.start()] in (":", "/", "@") or "//" in value:
                continue  # a URL or an address
            if random_enough(value) and not words_joined(value):
                yield Detection(Category.API_KEY, candidate.start(), candidate.end())
                break


def _keys_around(
    text: str, word: re.Match[str], random_enough: RandomEnough
) -> Iterator[Detection]:
    """Keys listed under the word's heading, in its table column, or given as the answer."""
    if "\n" not in text:
        return

    def names_keys(cell: str) -> bool:
        return _KEY_WORD.search(cell) is not None and not _NOT_A_SECRET_NAME.search(cell)

    def key_at(start: int, end: int) -> Detection | None:
        value = text[start:end].rstrip(".,;")
        if random_enough(value) and not words_joined(value):
            return Detection(Category.API_KEY, start, start + len(value))
        return None

    for start, end in [
        *listed_under(text, word.start()),
        *cells_under(text, word.start(), word.end(), names_keys),
    ]:
        if (found := key_at(start, end)) is not None:
            yield found
    # The first answer that looks generated: the lines after it are the talk going on.
    for start, end in answered_below(text, word.start()):
        if (found := key_at(start, end)) is not None:
            yield found
            return
    # Or the next line is the value alone: "here's the token for the lock cloud\nuser: …".
    alone = alone_below(text, word.start())
    if alone is not None and (found := key_at(*alone)) is not None:
        yield found


def words_joined(value: str) -> bool:
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
    """Written as a word is: lower case, capitalised or upper case, not mixed at random.

    Or as names are: CamelCase words ("PubKeyEd25519", "PaymentSigningKeyShelley") and
    a word with a number ("ed25519", "sha256").
    """
    if _NAME_PART.fullmatch(part):
        return True
    cased = part.islower() or part.istitle() or part.isupper()
    return part.isalpha() and 3 <= len(part) <= 15 and cased


_NAME_PART = re.compile(r"(?:[A-Z][a-z]{1,12}){2,}[0-9]{0,6}|[a-z]{2,8}[0-9]{1,6}")


def named_values(text: str, random_enough: RandomEnough) -> Iterator[Detection]:
    """Generated-looking values of variables, parameters and elements named for secrets."""
    if _LONG_RUN.search(text) is None:
        return
    for header in _SECRET_HEADER.finditer(text):
        name = header.group("name")
        if "-" in name and not _NOT_A_SECRET_NAME.search(name) and random_enough(header["value"]):
            yield Detection(Category.API_KEY, header.start("value"), header.end("value"))
    for match in _NAMED_VALUE.finditer(text):
        group = next(
            g for g in ("value", "query", "element", "mapped") if match.group(g) is not None
        )
        name = match.group("name") or match.group("param") or match.group("tag") or match["field"]
        if _NOT_A_SECRET_NAME.search(name):
            continue
        value = match.group(group)
        if "//" in value:
            continue  # a URL, not a key
        if random_enough(value.replace("%2B", "+").replace("%2F", "/").replace("%3D", "=")):
            yield Detection(Category.API_KEY, match.start(group), match.end(group))


def private_keys_by_context(text: str) -> Iterator[Detection]:
    """Private keys by shape (WIF with its checksum, xprv, age) or by their word nearby."""
    if "[" in text:
        for match in _BYTE_ARRAY_KEY.finditer(text):
            numbers = [int(n) for n in re.findall(r"[0-9]+", match.group())]
            context = text[max(0, match.start() - 80) : match.start()]
            if max(numbers) <= 255 and _KEYPAIR_WORD.search(context):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if _LONG_RUN.search(text) is None:
        return  # every shape below is longer than 16 characters
    for match in _PRIVATE_BY_SHAPE.finditer(text):
        yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if "LS0tLS1CRUdJTi" in text:
        for match in _BASE64_PEM.finditer(text):
            if _encodes_a_private_key(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if '"kty"' in text:
        for match in _JWK_PRIVATE.finditer(text):
            yield Detection(Category.PRIVATE_KEY, match.start("value"), match.end("value"))
    lowered = text.lower()
    if "priv" in lowered or "skey" in lowered or "signing" in lowered:
        for match in _JSON_PRIVATE.finditer(text):
            group = next(g for g in ("value", "value2", "cbor") if match.group(g))
            yield Detection(Category.PRIVATE_KEY, match.start(group), match.end(group))
    if "jwk" in lowered:
        for match in _JWK_D_IN_PROSE.finditer(text):
            yield Detection(Category.PRIVATE_KEY, match.start("value"), match.end("value"))
    yield from keys_by_encoding(text)
    for match in _WIF.finditer(text):
        if _valid_wif(match.group()):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    words = list(_PRIVATE_WORD.finditer(text))
    for word in words:
        reach = text[word.end() : word.end() + 160]
        end = SENTENCE_END.search(reach)
        window_end = word.end() + (end.start() if end else len(reach))
        for shape in _PRIVATE_SHAPE.finditer(text, word.end(), window_end):
            if _ANOTHER_THING.search(text, word.end(), shape.start()):
                break
            yield Detection(Category.PRIVATE_KEY, shape.start(), shape.end())
            break
    # Or the word just after the key: "0x3467… ← 这是用户测试钱包的私钥".
    for shape in _PRIVATE_SHAPE.finditer(text) if words else ():
        after = text[shape.end() : shape.end() + 40]
        clause = after[: m.start()] if (m := SENTENCE_END.search(after)) else after
        named_before = _ANOTHER_THING.search(
            text, max(0, shape.start() - 24), shape.start()
        ) or _PUBLIC_BEFORE.search(text, max(0, shape.start() - 60), shape.start())
        if _PRIVATE_WORD.search(clause) and not (named_before or _ANOTHER_THING.search(clause)):
            yield Detection(Category.PRIVATE_KEY, shape.start(), shape.end())


# A JWK's private "d" given in prose: "the JWK for the portal, d value only: 90H7Kcx…".
_JWK_D_IN_PROSE = re.compile(
    r"(?i)\bjwk\b[^\n]{0,60}?(?<![\w-])d(?:[ -](?:value|parameter|component))?\b[^\n:：=]{0,20}"
    r"[:：=]\s*[\"']?(?P<value>[A-Za-z0-9_-]{42,}={0,2})(?![A-Za-z0-9_-])"
)


def _encodes_a_private_key(value: str) -> bool:
    """Base64 that decodes to a PEM block of a private key."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in decoded[:80]


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
