"""Passwords told in passing, with their word elsewhere in the sentence.

A network named, then its key ("network SeaRanger, key iceberg-alley-cod"); the words
that unlock a vault, listed after a colon ("the four words that unlock her password
manager, in order: kettle moorland heron biscuit"); a password spoken in a voice note,
then written out ("…密码就是阿嬌再加兩個六啦」，也就是 ajiao66").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_codes import NOT_A_SECRET_CODE
from recalld_server.domain.sensitive.password_values import (
    KEYED_PIN,
    NOT_A_PASSWORD,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import Detection, Rule

# A network's name, then its key: "Starlink: network SeaRanger, key iceberg-alley-cod",
# "SSID KettleCove / password: caplin-scull-9". The name makes the key a Wi-Fi key,
# whatever its shape.
_NETWORK_THEN_KEY = re.compile(
    r"(?i)\b(?:network|ssid|wi-?fi|wlan|starlink)(?:\s+[^\n:：,;]{1,40}?\s*[:：])?\s*[:=]?\s*"
    r"[^\s,;/:]{2,40}\s*[,;/]\s*"
    # The key in French, German, Spanish and Icelandic too: "Wi-Fi de la boutique :
    # Erabliere-Gendreau, mot de passe tiredesurlaneige", "…, lykilorð gufa-og-hraun".
    r"(?:key|password|passphrase|pw|pass|psk|mot de passe|passwort|schlüssel|clave"
    r"|contraseña|lykilorð)\s*(?:is\b|[:=])?\s*"
    rf"(?P<value>{PASSWORD_CHARS}{{6,64}})"
)
# The words that unlock a vault or a wallet, after a colon: "the four words that unlock
# Hazel's password manager, in order: kettle moorland heron biscuit".
_WORDS_THAT_UNLOCK = re.compile(
    r"(?i)\b(?:words?|phrase|passphrase)\s+(?:that|which)\s+(?:unlock|open)s?\b[^\n.;:：]{0,60}?"
    r"[:：]\s*(?P<value>[a-z]{2,20}(?:[ -][a-z]{2,20}){2,7})(?=\s*(?:[.;!?,，。]|$))"
)
# A password spoken, then written out after "that is": "语音转文字：「外送平台那个密码就是
# 阿嬌再加兩個六啦」，也就是 ajiao66", "密码：大写 F，e-n-g，然后 jia，最后 2016”，整理出来是
# Fengjia2016". The value ends the line.
_SPOKEN_THEN_WRITTEN = re.compile(
    r"(?:也就是|即是|整理出[来來]是|整理[后後]是|[写寫]出[来來]是|[写寫]下[来來]是|拼出[来來]是"
    r"|[—–]{1,2}\s*就是"
    r"|(?i:\bi\.e\.|\bthat is|\bwritten out|\bspelled out|\bspelt out|\btyped out)[,:]?"
    # "'…then the number seven' — so lighthouse7", "…, five eight, so PurpleKettle58".
    r"|(?P<so>(?i:(?:[—–,]|\.\.\.)\s*(?:so(?:\s+it'?s)?|donc|alors|also)\b)"
    # "…再一个感叹号”——Qc2025!": the quote of what was spoken closes, a dash, the value.
    r"|(?<=[”\"」』»'’])\s*[—–]{1,2}(?!\s*(?:so|donc|alors|also)\b)))"
    # "!" is the password's own at the end of the line ("也就是 sujun2025!"); "." is not.
    r"\s*[:：]?\s*[\"'“‘「]?(?P<value>[\x21\x23-\x26\x28-\x7e]{4,40}?)[\"'”’」]?"
    r"(?=\.?[ \t]*[。！]?[ \t]*(?:\n|$)|,\s(?:no spaces|all one word|one word|no capitals"
    r"|all lower ?case|all small letters|with the spaces)\b)"
)
_DIGIT_WORD = (
    r"(?:zero|nought|oh|one|two|three|four|five|six|seven|eight|nine"
    r"|zéro|un|deux|trois|quatre|cinq|sept|huit|neuf)"
)
_SPOKEN_WORD = re.compile(
    r"(?i)密[码碼]|口令|\bpass(?:word|code|phrase)?\b|\bpin\b|\bpw\b|\bcode\b"
)
_SPELLED_OUT = re.compile(
    r"(?i)\bcapital\b|small letters|lower ?case|upper ?case|\bthe number\b|no spaces"
    r"|大写|小写|拼音|大寫|小寫"
    # Digits said one by one, in English or French: "four, zero, five, eight".
    rf"|\b{_DIGIT_WORD}\b(?:[ ,-]+{_DIGIT_WORD}\b){{2,}}"
)


def _network_keys(text: str) -> Iterator[Detection]:
    for match in _NETWORK_THEN_KEY.finditer(text):
        value = match.group("value").rstrip(TRAILING)
        if could_be_a_password(value) and len(value) >= 6:
            start = match.start("value")
            yield Detection(Category.PASSWORD, start, start + len(value))


def _words_that_unlock(text: str) -> Iterator[Detection]:
    for match in _WORDS_THAT_UNLOCK.finditer(text):
        words = match.group("value").casefold().replace("-", " ").split()
        if not any(w in NOT_A_PASSWORD for w in words):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _spoken_then_written(text: str) -> Iterator[Detection]:
    for match in _SPOKEN_THEN_WRITTEN.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if match.group("so"):
            # "so" follows a value spelled out letter by letter or digit by digit, and gives
            # it ("we met at the code club, so it's Friday2" spells nothing).
            spelled = _SPELLED_OUT.search(text, line_start, match.start())
            value = match.group("value")
            if spelled and (looks_made_up(value) or KEYED_PIN.fullmatch(value)):
                yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
            continue
        if not _SPOKEN_WORD.search(text, line_start, match.start()):
            continue  # "…, that is 2024." where no password was spoken of
        if NOT_A_SECRET_CODE.search(text, line_start, match.start()):
            continue  # "the area code, that is 0131"
        value = match.group("value")
        if (KEYED_PIN.fullmatch(value) or looks_made_up(value)) and could_be_a_password(value):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# What the rules above need in the text before they are worth running.
_NAMES_A_NETWORK = re.compile(r"network|ssid|wi-?fi|wlan|starlink")
_SPOKEN_MARK = re.compile(
    r"[—–]|也就是|即是|整理|出[来來]是|就是|i\.e\.|that is| out\b"
    r"|(?:[—–,]|\.\.\.) ?(?:so|donc|alors|also)\b"
)


def _may_mark_a_spoken_value(text: str, low: str) -> bool:
    # Literal checks first: the pattern costs more than all of them, and most memories
    # have none of these.
    cheap = "是" in text or "整" in text or " out" in low or " so" in low or "i.e." in low
    cheap = cheap or "donc" in low or "alors" in low
    # A dash after a closing quote: "'…then the hash key' — 1903#".
    dash = ("—" in text or "–" in text) and any(q in text for q in "'’\"”」』»")
    cheap = cheap or dash
    return (cheap or "that is" in low) and _SPOKEN_MARK.search(low) is not None


# Each rule beside the literal words it needs (see password_forms.passwords_elsewhere).
RULES: tuple[Rule, ...] = (
    (lambda text, low: _NAMES_A_NETWORK.search(low) is not None, _network_keys),
    (lambda text, low: "unlock" in low or "open" in low, _words_that_unlock),
    (lambda text, low: _may_mark_a_spoken_value(text, low), _spoken_then_written),
)
