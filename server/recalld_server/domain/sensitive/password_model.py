"""A learned second opinion on passwords: words the rules left alone, scored by context.

The rules find a password where the text says what it is ("password is …", "密码是…",
a Wi-Fi command, a login table). People also give one with nothing but its place to go
by: "the garage is 1846", "Wi-Fi at Mum and Dad's: morwenna1951", "开机要输 Yinuo0905".
Rules written for such phrasings did not carry from one labelled split to the next
(benchmarks/README.md), so this module scores every password-shaped word the rules
did not take with a logistic model over its shape and the words around it, trained on
the labelled splits by `benchmarks/masking/train_password_model.py`.

The weights are a JSON file of named features (`password_model.json`), so what the
model learned can be read and diffed. Scoring is plain Python: a few dozen dictionary
lookups per candidate, and most words of an ordinary memory are not candidates (plain
words, code identifiers, URLs and e-mail addresses never are).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.spans import PLACEHOLDER, Detection, line_around

__all__ = [
    "PasswordModel",
    "candidates",
    "features",
    "neutralized",
    "shipped_password_model",
    "without_words",
]

# A model's score at or above which a candidate is a password. Chosen on the six
# newest splits, each scored by a model trained only on the splits before it (and
# the rules it first met), as the score that keeps about three false alarms per split
# of some 100 passwords, the rules' included (benchmarks/README.md).
DEFAULT_THRESHOLD = 0.75

# What the scorer sees where another value was found or its placeholder stands: one
# mark, the same for "密码 147258" and "密码 [PASSWORD]", so that masking a masked text
# again changes nothing, and "right after a found value" is one word to the model.
FOUND = "\ue000"
_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
# A candidate is a run of characters between spaces, CJK text and the delimiters of
# quoting, lists and assignments.
_TOKEN = re.compile(r"[^\s" + _CJK + FOUND + r"\"'“”‘’`()\[\]{}<>,;|=]+")
_CODE_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(?")
_EMAIL_LIKE = re.compile(r"[^@]*@[^@]*[A-Za-z0-9]\.[A-Za-z]{2,}")
_CONTEXT_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*|\d+|[\u3400-\u4dbf\u4e00-\u9fff" + FOUND + "]")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_CLAUSE_END = re.compile(r"[。；;！!？?\n]")
_YEAR = re.compile(r"(?:19|20)\d\d")
_NUMERIC_DATE = re.compile(r"[\d/.\-:]+")
_MONEY = re.compile(r"[$€£¥]|\d[.,]\d\d$")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+")
_WORD_THEN_DIGITS = re.compile(r"[A-Z]?[a-z]+\d+\W?")
_HEX = re.compile(r"[0-9a-f]{16,}")
_LENGTH_BUCKETS = (3, 4, 5, 6, 7, 8, 10, 12, 16, 24)

# Kinds of word that tell what a value before or beside them is. A word the labelled
# splits never used still says what its kind says ("the padlock is 4471" reads like
# "the bike lock is 4471"), which the weights of single words cannot carry.
_CUE_WORDS: dict[str, str] = {
    "secret": (
        "password passwords passwd pwd pw pass passcode passcodes passphrase passkey pin"
        " pins pincode code codes combination combo key login logins credentials creds"
        " secret unlock memorable"
    ),
    "lock": (
        "lock locks padlock safe locker lockers gate gates door doors keypad"
        " keysafe lockbox keybox key-safe key-box alarm alarms garage shed bike bicycle"
        " cabinet drawer box intercom buzzer entry entrance vault deadbolt smartlock"
        " storage cupboard mailbox postbox letterbox freezer storeroom cage barrier turnstile"
        " boathouse hut"
    ),
    "device": (
        "phone iphone android mobile laptop tablet ipad computer pc mac macbook screen"
        " router wifi wi-fi wlan wpa wpa2 wpa3 network hotspot modem printer nas tv"
        " account portal app admin administrator console dashboard bank banking email"
        " e-mail mail vpn server database db imac desktop workstation kindle camera dvr nvr"
        " doorbell switch playstation xbox"
    ),
    "change": (
        "changed change changing swapped swap reset updated update new old now from"
        " replaced rotated became instead previous former current"
    ),
    "give": (
        "type typed enter entered punch input use used tap dial opens open set is was are be try"
    ),
    "told": "said says told texted tells reckons wrote whispered mentioned",
    "not_secret": (
        "otp one-time verification order tracking invoice booking ref reference ticket"
        " flight room unit version build commit ssid username user handle tag id number"
        " no account-number serial model extension ext postcode zip price prices cost costs"
        " paid pay fee fees rent salary budget total meeting moved time am pm size named"
        " called name team club band nickname alias gamertag"
    ),
}
_CUE_OF_WORD = {word: kind for kind, words in _CUE_WORDS.items() for word in words.split()}
# The same kinds in Chinese, where a marker is a run of characters in the clause.
_CUE_CHINESE: dict[str, tuple[str, ...]] = {
    kind: tuple(markers.split())
    for kind, markers in {
        # Simplified, then traditional characters (a Taipei stall's notes are written so).
        "secret": "密码 口令 暗号 密钥 解锁 开锁 登录 登陆 支付 网银 访问码"
        " 密碼 暗號 密鑰 解鎖 開鎖 登錄 登入 網銀 訪問碼",
        "lock": "锁 门禁 保险柜 保险箱 柜 车库 单车 自行车 报警 大门 卷帘 冷库 冷冻 冰柜"
        " 鎖 門禁 保險 櫃 車庫 單車 報警 捲門 冷凍",
        "device": "手机 电脑 平板 开机 屏 路由 无线 网络 账户 后台 账号 系统 电视"
        " 手機 電腦 開機 無線 網絡 網路 帳戶 帳號 後台 系統 電視",
        "change": "改 换 旧 新 原来 现在 以前",
        "give": "输 按 设 是 用 填",
        "told": "说 讲 告诉 发来 发给",
        "not_secret": "验证码 取件码 单号 订单 工号 用户名 航班 房间 编号"
        " 价格 价钱 元 块钱 费 会议 点钟",
    }.items()
}


def neutralized(text: str, found: Sequence[tuple[int, int]]) -> tuple[str, list[int]]:
    """The text with each found span and each placeholder one `FOUND` mark.

    Also where each of its characters (and its end) was in `text`.
    """
    spans = sorted(found)
    if "[" in text:
        spans = sorted([*spans, *((m.start(), m.end()) for m in PLACEHOLDER.finditer(text))])
    pieces: list[str] = []
    origin: list[int] = []
    position = 0
    for start, end in spans:
        if end <= position:
            continue
        start = max(start, position)
        pieces.append(text[position:start])
        origin.extend(range(position, start))
        pieces.append(FOUND)
        origin.append(start)
        position = end
    pieces.append(text[position:])
    origin.extend(range(position, len(text) + 1))
    return "".join(pieces), origin


def candidates(text: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of every word in the text that could be a password."""
    one_use = _ONE_USE_WORD.search(text) is not None
    # "车库门 0800 开到 2000", "open 0800-2000": hours, whatever a lock word before says.
    hours = [m.span() for m in _TIME_RANGE.finditer(text)] if _DIGITS4.search(text) else []
    for match in _TOKEN.finditer(text):
        start, end = match.start(), match.end()
        if any(a <= start and end <= b for a, b in hours):
            continue
        while start < end and text[start] in ":.#*-/":
            start += 1
        while end > start and text[end - 1] in ".:?,":
            end -= 1
        if one_use and _SENT_FOR_ONE_USE.search(text, max(0, start - 24), start):
            continue  # "the one-time PIN 6130", "动态密码 482913": no secret once used
        if end - start >= 3 and (
            _worth_scoring(text[start:end]) or _plain_after_a_secret_word(text, start, end)
        ):
            yield start, end


# A code sent to be used once: what follows is no secret kept.
_SENT_FOR_ONE_USE = re.compile(
    r"(?i)(?:\bone-?time|\botp|动态|動態|一次性)"
    r"[ \t]*(?:pin|code|passcode|password|码|碼|密码)?[ \t]*(?:is|[:：是为])?[ \t]*$"
)


_DIGITS4 = re.compile(r"[0-9]{4}")
_HHMM = r"(?:[01][0-9]|2[0-3])[0-5][0-9]"
_TIME_RANGE = re.compile(
    rf"(?<![0-9]){_HHMM}\s*(?:开到|開到|到|至|[-–~]|to|until|till)\s*(?:{_HHMM}|2400)(?![0-9])"
)
_ONE_USE_WORD = re.compile(r"(?i)one-?time|otp|动态|動態|一次性")


# A plain word right after a word for a password ("Netflix password puffinseason",
# "密码 hongshaorou"): a candidate too, for the model to tell from "password reset".
_SECRET_WORD_BEFORE = re.compile(
    r"(?i)(?:\b(?:password|passwd|pwd|pw|pass|passcode|passphrase|wi-?fi|key)\s*(?:is\s+|[:：]\s*)?"
    r"|(?:密码|口令)\s*(?:是|为|[:：])?\s*)$"
)


def _plain_after_a_secret_word(text: str, start: int, end: int) -> bool:
    value = text[start:end]
    return (
        len(value) >= 6
        and value.isalpha()
        and value.isascii()
        and _SECRET_WORD_BEFORE.search(text, max(0, start - 24), start) is not None
    )


def _worth_scoring(value: str) -> bool:
    # A plain word cannot be told from a password by its shape or its place, and code
    # identifiers, URLs and e-mail addresses are not secrets.
    if value.isalpha() and (value.islower() or value.isupper() or value[1:].islower()):
        return False
    return not (_CODE_IDENTIFIER.fullmatch(value) or "://" in value or _EMAIL_LIKE.fullmatch(value))


def features(text: str, start: int, end: int) -> set[str]:
    """The named features of the candidate `text[start:end]`: its shape and its context."""
    value = text[start:end]
    kind = _coarse_kind(value)
    found = {
        f"kind:{kind}",
        f"shape:{_shape(value)}",
        f"length:{_length_bucket(len(value))}",
        f"classes:{_classes(value)}",
    }
    if _YEAR.fullmatch(value):
        found.add("year")
    if _NUMERIC_DATE.fullmatch(value) and re.search(r"\d[/.\-]\d", value):
        found.add("numeric_date")
    if _MONEY.search(value):
        found.add("money")
    if _VERSION.fullmatch(value):
        found.add("version")
    if "/" in value:
        found.add("slash")
    if _WORD_THEN_DIGITS.fullmatch(value):
        found.add("word_then_digits")
    if _HEX.fullmatch(value):
        found.add("hex")
    before = text[max(0, start - 60) : start]
    after = text[end : end + 30]
    last_word = re.search(r"(\S*)\s*$", before)
    separator = "^"
    if before and last_word is not None:
        separator = "".join(c for c in last_word.group(1)[-3:] if not c.isalnum())[-2:]
    found.add(f"separator:{separator}")
    found.add(f"separator+kind:{separator}|{kind}")
    if start == 0 or text[start - 1] == "\n":
        found.add("line_start")
    words_before = _context_words(before)[-8:]
    for distance, word in enumerate(reversed(words_before)):
        cue = _CUE_OF_WORD.get(word)
        if cue is not None:
            found.add(f"cue_before:{cue}|{'near' if distance < 3 else 'far'}")
            found.add(f"cue_before+kind:{cue}|{kind[0]}")
            found.add(f"cue_before+kind:{cue}|{kind}")
    for distance, word in enumerate(reversed(words_before)):
        if distance == 0:
            found.add(f"word-1:{word}")
            found.add(f"word-1+kind:{word}|{kind}")
        elif distance == 1:
            found.add(f"word-2:{word}")
            found.add(f"words-2-1:{words_before[-2]} {words_before[-1]}")
        found.add(f"word_before:{word}")
        if distance < 6:
            found.add(f"word_before+kind:{word}|{kind[0]}")
    clause = _CLAUSE_END.split(before)[-1]
    chinese = "".join(_CJK_CHAR.findall(clause))[-10:]
    for i in range(len(chinese) - 1):
        found.add(f"chinese_before:{chinese[i : i + 2]}")
        found.add(f"chinese_before+kind:{chinese[i : i + 2]}|{kind[0]}")
    for cue, markers in _CUE_CHINESE.items():
        for marker in markers:
            at = chinese.rfind(marker)
            if at >= 0:
                near = len(chinese) - at - len(marker) < 3
                found.add(f"cue_before:{cue}|{'near' if near else 'far'}")
                found.add(f"cue_before+kind:{cue}|{kind[0]}")
                found.add(f"cue_before+kind:{cue}|{kind}")
                break
    words_after = _context_words(after)[:4]
    if words_after:
        found.add(f"word+1:{words_after[0]}")
    for word in words_after:
        cue = _CUE_OF_WORD.get(word)
        if cue is not None:
            found.add(f"cue_after:{cue}")
    next_char = after[:1]
    found.add(f"next_char:{next_char if not next_char.isalnum() else 'a'}")
    found.update(f"in_line:{word}" for word in _context_words(line_around(text, start, end)))
    return found


# The features that name a particular word of the context, not a kind of word.
_WORD_FEATURES = (
    "word-1:",
    "word-1+kind:",
    "word-2:",
    "words-2-1:",
    "word_before:",
    "word_before+kind:",
    "chinese_before:",
    "chinese_before+kind:",
    "word+1:",
    "in_line:",
)


def without_words(named: set[str]) -> set[str]:
    """The features of a candidate that do not name a particular word around it."""
    return {feature for feature in named if not feature.startswith(_WORD_FEATURES)}


def _coarse_kind(value: str) -> str:
    if value.isdigit():
        return f"D{min(len(value), 9)}"
    if value.isalpha():
        return "A"  # mixed case: plain words are never candidates
    if value.isalnum():
        return "M"
    return "S"


def _shape(value: str) -> str:
    """Runs of character classes: "Ruby-Kettle-2207" is "Aa-Aa-9"."""
    runs: list[str] = []
    for char in value:
        if char.islower():
            kind = "a"
        elif char.isupper():
            kind = "A"
        elif char.isdigit():
            kind = "9"
        elif char.isalnum():
            kind = "x"
        else:
            kind = char
        if not runs or runs[-1] != kind:
            runs.append(kind)
    return "".join(runs)[:8]


def _classes(value: str) -> str:
    return "".join(
        name
        for name, present in (
            ("l", any(c.islower() for c in value)),
            ("u", any(c.isupper() for c in value)),
            ("d", any(c.isdigit() for c in value)),
            ("s", any(not c.isalnum() for c in value)),
        )
        if present
    )


def _length_bucket(length: int) -> str:
    for bucket in _LENGTH_BUCKETS:
        if length <= bucket:
            return str(bucket)
    return "longer"


def _context_words(text: str) -> list[str]:
    """Latin words, numbers and single Chinese characters, lower-cased, in order."""
    return [match.group().lower() for match in _CONTEXT_WORD.finditer(text)]


class PasswordModel:
    """Logistic weights over named features, and the score that makes a password."""

    def __init__(
        self, weights: Mapping[str, float], bias: float, threshold: float = DEFAULT_THRESHOLD
    ) -> None:
        self._weights = dict(weights)
        self._bias = bias
        self._threshold = threshold

    @classmethod
    def from_json(cls, text: str) -> PasswordModel:
        """The model a `train_password_model.py` file holds."""
        data = json.loads(text)
        return cls(data["weights"], float(data["bias"]), float(data["threshold"]))

    def score(self, text: str, start: int, end: int) -> float:
        """The probability that `text[start:end]` is a password."""
        z = self._bias + sum(self._weights.get(f, 0.0) for f in features(text, start, end))
        return 1.0 / (1.0 + math.exp(-z))

    def passwords(self, text: str, taken: Sequence[Detection]) -> list[Detection]:
        """The words outside `taken` and outside placeholders that score as passwords.

        Scored again, with what was found marked, until nothing more scores: once
        masked, a password found here is a placeholder to its neighbours, so a word
        that a found neighbour would lift above the threshold must be found now, or
        screening the masked text would find it (masking must be idempotent).
        """
        spans = [(d.start, d.end) for d in taken]
        found: list[Detection] = []
        while True:
            seen, origin = neutralized(text, spans)
            more = [
                Detection(Category.PASSWORD, origin[start], origin[end - 1] + 1)
                for start, end in candidates(seen)
                if self.score(seen, start, end) >= self._threshold
            ]
            if not more:
                return found
            found.extend(more)
            spans.extend((d.start, d.end) for d in more)


@functools.cache
def shipped_password_model() -> PasswordModel:
    """The model trained on the labelled splits, read once from the package (immutable)."""
    source = resources.files("recalld_server.domain.sensitive") / "password_model.json"
    return PasswordModel.from_json(source.read_text(encoding="utf-8"))
