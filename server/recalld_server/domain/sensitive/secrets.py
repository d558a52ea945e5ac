"""Secrets: private keys, API keys and tokens (passwords are in passwords.py)."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive import key_context
from recalld_server.domain.sensitive.key_shapes import KNOWN_KEYS
from recalld_server.domain.sensitive.spans import Detection

# --- private keys -----------------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\sA-Za-z0-9+/=:,-]*)"
    # The SSH2 format of Tectia and old PuTTY exports ("---- BEGIN SSH2 … ----").
    r"|---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"
    r"(?:.*?---- END SSH2 (?:ENCRYPTED )?PRIVATE KEY ----|[\sA-Za-z0-9+/=:,\"-]*)",
    re.DOTALL,
)
# A block is a key only with a body: "-----BEGIN … KEY----- [REDACTED] -----END …" is not.
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")
# A PuTTY key file (.ppk): headers, the public and private lines, up to its MAC.
_PUTTY_KEY = re.compile(
    r"PuTTY-User-Key-File-[0-9]+:[^\n]*"
    r"(?:\n[ \t]*(?!Private-MAC:)(?:[A-Za-z0-9-]+:[^\n]*|[A-Za-z0-9+/=]+))*"
    r"(?:\n[ \t]*Private-MAC:[^\n]*)?"
)
_PUTTY_PRIVATE = re.compile(r"Private-Lines:[^\n]*\n[ \t]*[A-Za-z0-9+/=]{16,}")

# Chat-bot webhooks whose URL holds the secret: WeCom (企业微信) and DingTalk (钉钉) as
# a query parameter, Feishu/Lark and Discord in the path. The secret part is masked.
_WEBHOOK = re.compile(
    r"qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=(?P<key>[0-9A-Za-z-]{20,})"
    r"|oapi\.dingtalk\.com/robot/send\?access_token=(?P<token>[0-9A-Za-z]{32,})"
    r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/(?P<hook>[0-9A-Za-z-]{20,})"
    r"|discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<discord>[A-Za-z0-9_-]{40,})"
    # Automation webhooks: Make, Zapier, IFTTT's key.
    r"|hook\.(?:eu|us)[0-9]\.make\.com/(?P<make>[a-z0-9]{24,})"
    r"|automation\.atlassian\.com/pro/hooks/(?P<jira>[0-9a-f]{32,})"
    r"|hooks\.zapier\.com/hooks/catch/[0-9]+/(?P<zapier>[a-z0-9]{6,})"
    r"|maker\.ifttt\.com/trigger/[^/\s]+/(?:json/)?with/key/(?P<ifttt>[A-Za-z0-9_-]{16,})"
)
# Tokens whose characters no other key uses ("^", "#", "!"): eBay user tokens,
# Salesforce session ids. An API key as curl's user name with no password ("-u KEY:").
_UNUSUAL_TOKEN = re.compile(
    r"(?<!\S)v\^1\.1#[A-Za-z0-9^#|=+/]{100,}"
    r"|(?<![A-Za-z0-9])00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,}"
)
_CURL_KEY_USER = re.compile(
    r"\bcurl\b[^\n]*?\s(?:-u|--user)\s+[\"']?(?P<value>[A-Za-z0-9_\-]{20,}):(?=[\s\"']|$)"
)
# The Heroku CLI keeps its API key (a UUID) as the password of api.heroku.com in ~/.netrc.
_HEROKU_NETRC = re.compile(
    r"machine\s+(?:api|git)\.heroku\.com\b(?:\s+(?!machine\b)\S+){0,4}?\s+password\s+"
    r"(?P<value>[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})(?![A-Za-z0-9-])"
)
# Every known shape is one run of these characters, 15 or more ("xoxb-" and ten).
_KEY_RUN = re.compile(r"(?<![A-Za-z0-9_.:/+=%|$-])[A-Za-z0-9_.:/+=%|$-]{15,}")
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

# Public keys and certificates are random-looking but not secret.
_PUBLIC_MATERIAL = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?)-----|$)"
    r"|(?i:sha1|sha256|sha384|sha512|md5|nonce)[-:][A-Za-z0-9+/=_-]+"
    r"|\"(?:n|x|y|x5c|modulus)\"\s*:\s*\"[A-Za-z0-9+/=_-]+"
    r"|(?<![A-Za-z0-9_])n\s*[=:]\s*[A-Za-z0-9+/_-]{200,}"  # an RSA modulus, unquoted
    # Mapbox public tokens ("pk.eyJ…", meant for the browser).
    r"|(?<![A-Za-z0-9_.-])pk\.eyJ[A-Za-z0-9_.-]+"
    # WireGuard's "PublicKey = …", a public key given by name.
    # "… public key, posted in the wiki for new peers: …": an aside before the colon.
    r"|(?i:public[ _-]?key|pub[ _-]?key|公钥)(?:\s+(?:for|of)\s+[\w '’-]{1,40}?(?=[:：=])"
    r"|[,，][^\n:：=]{1,60}?(?=[:：]))?"
    r"(?:\s+value)?"
    r"[\"']?\s*[=:：]?\s*[\"']?(?:ed25519:|secp256k1:)?"
    r"(?!-|ssh-|ecdsa-|sk-ssh)[A-Za-z0-9+/=_-]+"
    # A line that says its key is public: "Algolia's search-only key, public by design",
    # "WireGuard public key, safe to share: …" (vendor shapes are still found).
    r"|(?im:^[^\n]*?(?:public by design|safe to share|search[- ]only)[^\n]*$)"
    # Tokens meant for the page: "Paddle client-side token test_…", "Flagsmith
    # client-side key …".
    r"|(?i:client[- ]side\s+(?:token|key))\s*[:=]?\s*\S+"
    # Ids that only look random: Vercel deployments, DingTalk app keys (their secret is
    # the AppSecret), IPFS content ids.
    r"|(?<![A-Za-z0-9_])dpl_[A-Za-z0-9]{20,}"
    r"|(?<![A-Za-z0-9])ding[a-z0-9]{16,20}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9])Qm[1-9A-HJ-NP-Za-km-z]{44}(?![A-Za-z0-9])"
    # A public key as a JSON member names it ("pub_key": {"type": …, "value": "…"}).
    r"|\"pub(?:lic)?_?key\"\s*:\s*\{[^{}]{0,200}\}"
    # Tron addresses; PostHog project keys (meant for the page).
    r"|(?<![A-Za-z0-9])T[1-9A-HJ-NP-Za-km-z]{33}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9_])phc_[A-Za-z0-9]{30,}"
    # age recipients and Nostr public keys; Go module sums; LDAP password hashes.
    r"|(?<![A-Za-z0-9])(?:age1|npub1)[02-9ac-hj-np-z]{58}"
    r"|(?<![A-Za-z0-9])h1:[A-Za-z0-9+/=]+"
    r"|\{(?:SSHA|SHA|SSHA256|SSHA512|SHA256|SHA512|MD5|SMD5|CRYPT|PBKDF2[A-Z0-9-]*)\}[A-Za-z0-9+/=.$]+"
    # Objects of model providers' APIs: completions, messages, files, runs, batches.
    r"|(?<![A-Za-z0-9_-])(?:chatcmpl|cmpl|file|msg|resp|run|thread|asst|batch|req|toolu|call"
    r"|ftjob|ft|vs|step)[-_][A-Za-z0-9]{10,}"
    # Password hashes in modular crypt format: $2b$12$…, $argon2id$v=19$…, $6$….
    r"|\$(?:2[abxy]?|argon2(?:id|i|d)|[1567]|y|gy|sha1|pbkdf2(?:-sha[0-9]+)?|scrypt)\$"
    r"[A-Za-z0-9./+=$,:-]+"
    # Django's password hashes: pbkdf2_sha256$870000$salt$hash.
    r"|(?<![A-Za-z0-9_])(?:pbkdf2_sha(?:1|256)|bcrypt_sha256|argon2|scrypt)\$[A-Za-z0-9./+=$,:-]+"
    # Bitcoin extended public keys, Stripe publishable keys, reCAPTCHA site keys.
    r"|(?<![A-Za-z0-9])[xyzt]pub[1-9A-HJ-NP-Za-km-z]{100,112}"
    r"|(?<![A-Za-z0-9_])pk_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?i:site[ _-]?key)[\"']?\s*[:=]?\s*[\"']?[A-Za-z0-9_-]{40}"
    # Ids and keys meant to be seen: OpenAI organisations and projects, Supabase
    # publishable keys, Statsig client keys.
    r"|(?<![A-Za-z0-9_-])(?:org|proj)[-_][A-Za-z0-9]{24}(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9_])sb_publishable_[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9_-])client-[A-Za-z0-9]{30,60}(?![A-Za-z0-9])"
    # A Bitcoin address where the text says Bitcoin (legacy ones are base58 like keys).
    r"|(?i:\b(?:bitcoin|btc|legacy)\b)[^\n.;]{0,80}?(?<![A-Za-z0-9])[13]"
    r"[1-9A-HJ-NP-Za-km-z]{25,34}(?![A-Za-z0-9])"
    # Files in base64 by their magic numbers: PDF, ZIP (docx, xlsx, jar), PNG, JPEG,
    # GIF, RIFF (WebP, WAV), gzip, XML.
    r"|(?<![A-Za-z0-9+/])(?:JVBERi0|UEsDB|iVBORw0KGgo|/9j/|R0lGOD|UklGR|H4sI|PD94bWwg)"
    r"[A-Za-z0-9+/]*={0,2}"
    # An identifier named as one: "segment id Y3Bqc4lea…", "trace ID: …".
    r"|(?i:\b(?:id|uuid|guid|identifier|ksuid|ulid|nanoid|cuid|session|address|addr|tx|txid"
    r"|txn|transaction|openid|unionid)\b"
    r"(?:\s+(?:is|for [\w ]{1,20}?(?=[:：])))?)\s*(?:[:=#,：]|是|为)?\s*"
    r"[A-Za-z0-9_-]+"
    r"|(?<![A-Za-z0-9_])(?:pi|ch|cus|in|sub|evt|txn|prod|price|pm|seti|acct|re|po|tr|dp|py|src"
    r"|ii|il|sku|plink|bpc|cbtxn)_[A-Za-z0-9]{14,}"
    # A batch, payout, refund or dispute named as such: "payout batch sq6WMKNyYP…".
    r"|(?i:(?:\b(?:batch|payout|refund|dispute|chargeback|settlement|reconciliation|receipt"
    r"|irmark)\b\s*)+)"
    r"(?:\s+(?:id|no\.?|number))?\s*[:=#]?\s*[A-Za-z0-9_-]+"
    # A reCAPTCHA site key (the page's; its secret is the other "6L…" key), and a Web
    # Push VAPID public key, named before it in the sentence.
    r"|(?i:\bsite[ -]?key\b)[^\n.;]{0,40}?(?<![A-Za-z0-9_-])6L[A-Za-z0-9_-]{38}(?![A-Za-z0-9_-])"
    r"|(?i:\bvapid\b[^\n.;]{0,20}?\bpublic\b)[^\n.;]{0,60}?[A-Za-z0-9_-]{80,90}"
    # Tailscale's node and disco keys are public ("nodekey:0fca46…").
    r"|(?<![A-Za-z0-9])(?:nodekey|discokey|nlpub):[0-9a-f]{64}"
    # A CI cache's key: "Cache restored from key: Linux-pip-ea6b47…".
    r"|(?i:\bcache\b[^\n]{0,30}?\bkey\b)\s*[:=]?\s*\S+"
    r"|data:[A-Za-z0-9.+/-]+;base64,[A-Za-z0-9+/=]+"
    r"|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp[0-9]+|sk-ssh-ed25519@openssh\.com)"
    r"\s+[A-Za-z0-9+/=]+",
    re.DOTALL,
)


def private_keys(text: str) -> Iterator[Detection]:
    """Every PEM private key block with a body, and every PuTTY key file with its private part."""
    if "PRIVATE KEY" in text:  # PEM, and SSH2's "---- BEGIN SSH2 … PRIVATE KEY ----"
        for match in _PRIVATE_KEY.finditer(text):
            if _KEY_BODY.search(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if "PuTTY-User-Key-File" in text:
        for match in _PUTTY_KEY.finditer(text):
            if _PUTTY_PRIVATE.search(match.group()):
                yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if "ed25519:" in text:
        for match in _NEAR_PRIVATE_KEY.finditer(text):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    if any(word in text for word in _SOLANA_WORDS) and _SOLANA.search(text):
        for match in _BASE58_KEYPAIR.finditer(text):
            yield Detection(Category.PRIVATE_KEY, match.start(), match.end())
    yield from key_context.private_keys_by_context(text)


# A NEAR account's private key: "ed25519:" and 64 bytes in base58 (a public key is 32
# bytes, about 44 characters).
_NEAR_PRIVATE_KEY = re.compile(r"(?<![\w:])ed25519:[1-9A-HJ-NP-Za-km-z]{80,90}(?![A-Za-z0-9])")
# A Solana keypair exported by a wallet (Phantom, the CLI): 64 bytes in base58, 86 to 88
# characters, named as one (an address, 32 bytes, is 32 to 44).
_SOLANA = re.compile(r"(?i)solana|phantom|keypair|\bsol\b")
_SOLANA_WORDS = ("olana", "OLANA", "hantom", "HANTOM", "eypair", "EYPAIR", "sol", "SOL", "Sol")
_BASE58_KEYPAIR = re.compile(r"(?<![A-Za-z0-9])[1-9A-HJ-NP-Za-km-z]{86,88}(?![A-Za-z0-9])")


def api_keys(text: str) -> Iterator[Detection]:
    """Every key or token: vendor formats, bearer tokens, random values given as secrets."""
    # Known shapes are looked for only in long runs of the characters keys are made of.
    browser_keys: list[tuple[int, int]] = []  # public by design: no part of one is a key
    for run in _KEY_RUN.finditer(text):
        for match in KNOWN_KEYS.finditer(text, run.start(), run.end()):
            if _anonymous_jwt(match.group()):
                browser_keys.append((match.start(), match.end()))
            # Not a placeholder like sk-xxxxxxxxxxxx. AWS's documented example key
            # (AKIA…EXAMPLE) stays masked, like a published test card: it is what
            # people and tests use as the example of one.
            elif len(set(match.group())) >= 10:
                yield Detection(Category.API_KEY, match.start(), match.end())
    if "hook" in text or "robot/send" in text or "ifttt" in text:
        for match in _WEBHOOK.finditer(text):
            group = next(g for g, value in match.groupdict().items() if value)
            yield Detection(Category.API_KEY, match.start(group), match.end(group))
    if "heroku" in text:
        for match in _HEROKU_NETRC.finditer(text):
            yield Detection(Category.API_KEY, match.start("value"), match.end("value"))
    for match in _BEARER.finditer(text):
        yield Detection(Category.API_KEY, match.start("value"), match.end("value"))
    if "v^1.1#" in text or "!" in text:
        for match in _UNUSUAL_TOKEN.finditer(text):
            yield Detection(Category.API_KEY, match.start(), match.end())
    if "curl" in text:
        for match in _CURL_KEY_USER.finditer(text):
            if _random_after_a_word(match.group("value")):
                yield Detection(Category.API_KEY, match.start("value"), match.end("value"))
    public: list[tuple[int, int]] | None = None  # found once, when a value needs it
    named = [
        *(
            Detection(Category.API_KEY, match.start("value"), match.start("value") + len(value))
            for match in _SECRET_ASSIGNMENT.finditer(text)
            if _random_enough(
                value := match.group("value").rstrip("."), min_length=16, keyword=True
            )
        ),
        *key_context.keys_in_clauses(text, _random_after_a_word),
        *key_context.named_values(text, _random_after_a_word),
    ]
    random_words = [
        Detection(Category.API_KEY, match.start(), match.end())
        for match in _RANDOM_WORD.finditer(text)
        if _random_enough(match.group(), min_length=24, keyword=False)
        and not key_context.words_joined(match.group())
        # A PEM block in base64: private ones are private keys (key_context.py), public
        # keys and certificates are public.
        and not match.group().startswith("LS0tLS1CRUdJTi")
    ]
    for detection in (*named, *random_words):
        if public is None:
            public = [(m.start(), m.end()) for m in _PUBLIC_MATERIAL.finditer(text)]
            public += browser_keys
        if not any(start <= detection.start < end for start, end in public):
            yield detection


def _anonymous_jwt(token: str) -> bool:
    """A JWT whose payload gives the role "anon": a Supabase anon key, public by design."""
    if not token.startswith("eyJ") or token.count(".") != 2:
        return False
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return isinstance(claims, dict) and claims.get("role") == "anon"


def _random_after_a_word(value: str) -> bool:
    return _random_enough(value.rstrip("."), min_length=16, keyword=True)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


# What documentation and templates put where a key goes, and file names of keys
# ("hs_ed25519_secret_key", "id_ed25519.pub").
_PLACEHOLDER_KEY = re.compile(
    r"(?i)example|x{6,}|your[_-]?|placeholder|changeme|dummy|[_-](?:secret|private)[_-]key$"
    r"|\.(?:p8|p12|pfx|pem|key|crt|cer|der|jks|json|ya?ml|txt|env|conf|cfg|pub|ppk|gpg|asc)$"
)


def _random_enough(value: str, *, min_length: int, keyword: bool) -> bool:
    """A value that looks generated: long, mixed, high entropy, and not a known non-secret.

    After a keyword ("token: …") hex and lower-case values count; without one only
    mixed-case alphanumerics with digits do, so commit hashes, UUIDs, digests,
    identifiers and base64 of ordinary text are left alone.
    """
    core = value.rstrip("=")
    if len(core) < min_length or _PLACEHOLDER_KEY.search(core):
        return False
    digits = sum(c.isdigit() for c in core)
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    if keyword:
        if digits == 0 or digits == len(core) or (upper + lower) == 0:
            return False
        if "." in core and not core.replace(".", "").isalnum():
            return _entropy(core) >= 3.5
        # Sixteen symbols carry at most 4 bits each: a random 32-digit hex key often
        # measures 3.2-3.4, where base64 of the same length is near 4.5.
        if len(core) >= 32 and _HEX.fullmatch(core):
            return _entropy(core) >= 3.0
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
    if not plain.isprintable():
        return False
    if plain.startswith("{") and plain.endswith("}"):
        return True  # JSON: a JWT's header alone, a config blob
    # Words in any script, with their spaces and punctuation: "周五交房租，顺便交水电".
    wordy = sum(c.isalpha() or c.isspace() for c in plain)
    return " " in plain or plain.isalpha() or wordy >= 0.7 * len(plain)
