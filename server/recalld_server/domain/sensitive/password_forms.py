"""Passwords stated without their word right before them.

Before the word ("X is the wifi password"), a default administrator's pair ("admin:X"),
in KeePass exports and Wi-Fi settings, as the answer to a question about the Wi-Fi, a
passphrase of plain words, a security answer or an app password; sign-ins are in
password_logins.py, the codes that open locks in password_codes.py, changed values in
password_changes.py and passwords told in passing in password_told.py. This module
runs them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive import (
    password_changes,
    password_codes,
    password_logins,
    password_told,
)
from recalld_server.domain.sensitive.password_codes import NOT_A_SECRET_CODE
from recalld_server.domain.sensitive.password_values import (
    NOT_A_PASSWORD,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
    typed,
)
from recalld_server.domain.sensitive.spans import Detection, Rule, answered_below

# The value before the word: "uses sunflower1988 as the password", "X is the wifi password".
_PASSWORD_BEFORE_WORD = re.compile(
    rf"(?<![^\s\"'“‘`(（:：])(?P<value>{PASSWORD_CHARS}{{6,}})\s+(?:is|was|as)\s+"
    r"(?:(?:the|my|his|her|our|their|its)\s+)?(?:[\w-]+\s+){0,2}?(?:password|passcode|passphrase)\b"
    # "Gr33nhouse-Tomat0 — Bartholomew's Bitwarden master password".
    rf"|(?:^|(?<=\n))(?P<led>{PASSWORD_CHARS}{{6,}})\s+[—–]\s+(?:[\w'’-]+\s+){{0,4}}?"
    r"(?:master\s+)?(?:password|passcode|passphrase)\b"
    # "Lx19980212 这个是我邮箱密码".
    rf"|(?P<zh_before>{PASSWORD_CHARS}{{6,}})\s*(?:这个?|这)?就?是(?:我|他|她|我们|他们)?的?"
    r"[\u4e00-\u9fffA-Za-z]{0,8}密码"
    # "sunflower-attic-02 — that's the new Wi-Fi code".
    rf"|(?:^|(?<=\n))(?P<thats>{PASSWORD_CHARS}{{6,}})\s+[—–-]+\s+that'?s\s+(?:the|my|our|his|her)"
    r"\s+(?:(?:new|old|current|real)\s+)?(?:(?:password|passcode|passphrase|pin)\b"
    r"|(?:wi-?fi|wlan|router|door|gate|alarm)\s+(?:password|code|key|pin)\b)",
    re.IGNORECASE,
)
# An Apple app-specific password: four groups of four letters with dashes.
_APPLE_APP_PASSWORD = re.compile(
    r"(?i:apple|icloud|app[- ]specific|app password|应用专用密码)[^\n]{0,80}?"
    r"(?<![A-Za-z-])(?P<value>[a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4})(?![A-Za-z-])"
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
    # After a label, "printer in the office: admin, ashbury01", made up (as every value
    # here) and ending the line: "admin, finance and HR" is a list.
    r"|(?<=[:：—–\s])(?:admin|administrator|root)[,，][ \t]*"
    r"(?P<comma>[\x21\x23-\x26\x28-\x2b\x2d-\x7e]{6,40})[ \t]*(?=\n|$)"
)
# A passphrase of plain words: "the passphrase for the drive is purple monkey
# dishwasher.", "his master password is Lisbon tram at dusk 1998."; to the sentence end.
_PASSPHRASE = re.compile(
    r"(?i)(?:\b(?:pass ?phrase|master (?:password|phrase))\b"
    # "passphrase, four words with spaces: velvet orbit cactus ladder", "要 passphrase，她设的是
    # maple syrup audit season".
    r"(?:[^\n.;:]{0,50}?\s(?:is|was)\s+|[^\n.;:]{0,50}?[:：]\s*|[^\n.;:]{0,50}?[是为]\s*)"
    # "密码管理器主密码 xihu longjing chun yu，…".
    r"|主密码\s*(?:是|为|[:：])?\s*"
    # A login's password of several words: "user glenys, password Algarve sunsets at Sagres".
    r"|\buser(?:name)?\s*[:=]?\s*[A-Za-z0-9._@-]+,?\s+(?:password|pass|pw)\b\s*[:=]?\s*"
    # What a file is locked with: "the zip with the consent forms is locked with glacier
    # lagoon twelve".
    r"|\b(?:zip|archive|pdf|rar|7z|file|folder|drive|usb|stick|vault)\b[^\n.;:]{0,50}?"
    r"\b(?:locked|protected)\s+with\s+"
    # "the shop admin password is a phrase: heather honey harvest".
    r"|\bpassword\s+(?:is|was)\s+a\s+(?:phrase|passphrase|sentence)\s*[:：]\s*"
    # "ssh-keygen asked for a passphrase and Zihang chose my cat eats noodles at 3am".
    r"|\bpass ?phrase\b[^\n.;:]{0,40}?\b(?:chose|picked|went with|typed|set it to)\s+"
    # "the folder opens with the passphrase scroll purfling ebony maple".
    r"|\b(?:opens|unlocks|opened|unlocked|protected|locked)\s+with\s+(?:the\s+|a\s+)?"
    r"(?:pass ?phrase|password)\s+"
    # What an encrypted volume or vault opens with: "VeraCrypt volume on the stick: …".
    r"|\b(?:veracrypt|truecrypt|luks|keepass(?:xc)?|cryptomator)\b[^\n.;:]{0,50}?[:：]\s*)"
    r"(?P<value>[\w'-]+(?:[ ][\w'-]+){2,5}|[a-z]+(?:-[a-z]+){2,5})"
    r"(?=[.;!?,]?\s*$|[.;!?,，。；]\s*|\s[—–]\s)"
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
    key manager vault app file reset link hint policy expired expires expiring
"""
_NOT_IN_A_PHRASE = frozenset(_NOT_IN_A_PHRASE_WORDS.split())
# After "password is" (not "passphrase is"), plain words are a sentence as often as a
# password: none of these may be among them.
_FUNCTION_WORDS_LIST = """
    a an the my your his her our their its this that these those not no in on at of for
    to with from by and or as same usually always just still also only all any every
    some more most less than like about into over after before again here there now
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_LIST.split())
# A Chinese passphrase (口令, a spoken password) may be Chinese words alone: 口令是山高月小.
# A memorable word is a plain word, given right after its name: "Glenys's bank memorable
# word hollyhock，…"; it ends its clause ("memorable word required when …" gives none).
_MEMORABLE_WORD = re.compile(
    r"(?i)\bmemorable word\s+(?P<value>[a-z]{4,24})(?=\s*(?:[,.;!?，。；]|$))"
)
_CHINESE_PASSPHRASE = re.compile(
    r"口令\s*(?:是|为|為|：|:)\s*(?P<value>[\u4e00-\u9fff]{3,12})(?=[\s，。,；;！!？?）)、]|$)"
)
# Where it is or what it is like, not what it is: 口令：见群公告, 口令是什么, 口令已经改了.
_NOT_A_CHINESE_PASSPHRASE = re.compile(
    r"[见在的了是有没不请问找发给用和或吗呢啥哪什么多少忘错已另同]"
)
_WIFI_KEY_STEMS = (
    "key", "code", "schlüssel", "clave", "chave", "clé", "chiave", "sleutel", "klucz", "nyckel",
    "nøgle", "nøkkel", "ключ", "anahtar", "kunci",
)  # fmt: skip
# A Wi-Fi network's key: "wifi Tallinn-5G, key kohvik-2024", "WLAN key: …", "the van's
# hotspot key is 8RT2-KQ9P-4WZ1", "network Orbitur_Free, code 55ba21c7".
_WIFI_KEY = re.compile(
    # A Wi-Fi QR code's "P:" field, first: its text may name the Wi-Fi and a code again.
    r"(?i)WIFI:[^\n]*?(?<=[:;])P:(?P<qr>(?:\\.|[^;\\\n])+);|"
    r"\b(?:wi-?fi|wlan|ssid|hotspot|router)\b[^\n]{0,60}?\b(?:network |wpa2? |wi-?fi )?"
    # The key in German, Spanish, Portuguese, French, Italian, Dutch, Polish, Swedish,
    # Danish and Norwegian, Russian, Turkish, Indonesian.
    r"(?:key|schlüssel|clave|chave|clé|chiave|sleutel|klucz|nyckel|nøgle|nøkkel|ключ"
    r"|anahtar[ıi]?|kunci"
    # A Wi-Fi's code, not a model's or an error's: "network Orbitur_Free, code 55ba21c7".
    r"|(?<!model )(?<!serial )(?<!product )(?<!error )(?<!region )(?<!qr )code)\b"
    # Where the network is, before a colon: "WLAN-Schlüssel in der Ferienwohnung: …".
    r"(?:\s+(?:in|at|for|im|in der|bei|für|au|à|en|del?|na|no|w)\s+[^\n:：=]{1,40}?(?=\s*[:：=]))?"
    r"(?:\s*(?:\bis\b|:|=))?\s+(?P<value>[^\s\"'`]{6,64})"
    # "WPA2 key saunailta", "WPA passphrase: …".
    r"|(?i:\bwpa[23]?(?:-psk)?\s+(?:key|passphrase|psk)\b)\s*[:=]?\s*(?P<wpa>[^\s\"'`,;]{6,64})"
    # "SSID Fenwick_5G / WPA2 hobnob-teapot": a made-up value right after "WPA2".
    rf"|(?i:\bwpa[23]?\b)\s*[:=]?\s+(?P<after_wpa>{PASSWORD_CHARS}{{6,64}})"
)


def passwords_elsewhere(text: str) -> Iterator[Detection]:
    """Passwords not stated after their word: before it, as an answer, as a pair, a lock code."""
    lowered = text.lower()
    for applies, rule in _RULES:
        if applies(text, lowered):
            yield from rule(text)


def _named_values(pattern: re.Pattern[str], text: str) -> Iterator[Detection]:
    """The value in whichever named group of the pattern matched."""
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


# A value chosen as the password, whatever its shape: "Felicity picked marigold as the
# password for the guest page".
_CHOSEN_AS_PASSWORD = re.compile(
    r"(?i)\b(?:picked|chose|chosen|choose|uses|used|using|set|made)\s+"
    r"(?P<value>[A-Za-z0-9][^\s,;]{3,40})\s+as\s+(?:the|her|his|my|our|their|its)?\s*"
    r"(?:[\w-]+\s+){0,2}?(?:password|passcode|passphrase|pin)\b"
)


def _before_the_word(text: str) -> Iterator[Detection]:
    for match in _CHOSEN_AS_PASSWORD.finditer(text):
        if could_be_a_password(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    yield from _named_values(_PASSWORD_BEFORE_WORD, text)


def _admin_pairs(text: str) -> Iterator[Detection]:
    return _named_values(_ADMIN_PAIR, text)


def _wifi_keys(text: str) -> Iterator[Detection]:
    return _named_values(_WIFI_KEY, text)


# A PIN described, then given: "her banking PIN is the year she was born, 1983", "the PIN
# for his debit card is his house number twice, 1717", "取款密码就是她的生日 930416".
_DESCRIBED_THEN_GIVEN = re.compile(
    r"(?i)\b(?:pin|passcode|password)\b[^.\n;:]{0,40}?\b(?:is|was)\b[^.\n;:]{3,60}?(?:,|\s[—–])\s*"
    # Not the first group of a longer number ("…, PIN 4821, 4111 1111 1111 1111").
    r"(?P<value>[0-9]{4,8})(?=[.,;!)]|\s(?![0-9])|$)"
    r"|(?:密码|口令)(?:就是|是)[^\n，。；0-9]{1,12}?\s*(?P<zh>[0-9]{4,8})(?![0-9])"
)
# A password described by its form, then given, whatever its shape: "the password is all
# lowercase: heatherglen", "the laptop password is the dog's name, Biscuit", "密码是全小写的
# chengduhuoguo", "密码是他名字的拼音 lixiaolong".
_FORM = (
    r"lower ?case|upper ?case|capitals?|caps|one word|no spaces|letters|name|surname|nickname"
    r"|pinyin|spelt|spelled|backwards"
)
_DESCRIBED_BY_FORM = re.compile(
    r"(?i)\b(?:password|passphrase|passcode|passwort|pass|wi-?fi key)\b[^.\n;:]{0,40}?"
    r"(?:\b(?:is|was|it'?s|it’s)\s+|\s*就?是\s*)"
    rf"(?P<description>[^.\n;:：—–]{{0,40}}?(?:\b(?:{_FORM})\b|拼音|名字)[^.\n;:：—–]{{0,30}}?)"
    # The description may be quoted: "'… all lower case' — solansolan".
    r"\s*[\"'”’]?\s*[,:：，—–]\s*"
    # The value ends its clause: "…in lower case, remember that" gives none.
    r"(?P<value>[^\s,.;:!?\"'“”]{4,40})(?=\s*(?:[.,;!?)\"'”，。]|$)|\s[—–-]\s)"
    r"|(?:密码|口令)(?:就是|是|为)?(?P<zh>[^\n，。；：:]{0,12}?(?:全拼|拼音|小写|大写|名字|缩写|首字母|字母|英文|一个词|单词)"
    # "…加名字拼音，也就是 yinguoliang218": the value after "that is".
    r"[^\n，。；：:\s]{0,12}?)\s*(?:[:：]|[，,]\s*(?:也就是|就是|即)|也就是)?\s*"
    r"(?P<latin>[A-Za-z][\x21-\x7e]{3,40}(?![\x21-\x7e])"
    # Several pinyin words, to the end of the clause: "三个拼音词：huoche kuaidi wuhan".
    r"(?:(?:\s[a-z]{2,20}){1,4}(?=\s*(?:[，。,.;；!?！？]|$)))?)"
)
# A password given, then its form: "the workshop Wi-Fi key is guarneridelgesu, all one
# word", "开机密码 sannianerban，拼音全小写".
_GIVEN_THEN_DESCRIBED = re.compile(
    r"(?i)(?:\b(?:password|passphrase|passcode|pass|wi-?fi key|pin)\b"
    r"(?:\s+(?:for|on|of|to)\s+(?:the\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2}?)?"
    r"(?:\s+(?:is|was)\s+|\s*[:：]\s*|\s+)"
    r"|(?:密码|口令)(?:是|为|[:：])?\s*"
    # "user: what's the wifi pw?\nuser: it's lemontree, all lowercase" (see the caller).
    r"|\b(?P<its>it'?s|it is)\s+)"
    r"(?P<value>[^\s,，.;:!?\"'“”]{4,40})\s*[,，]\s*"
    r"(?:(?:it'?s\s+|all\s+|in\s+)?(?:one word|lower ?case|upper ?case|small letters|capitals"
    r"|no spaces)\b|(?:拼音)?全?(?:小写|大写|拼音))"
)
_TALKS_OF_A_PASSWORD = re.compile(r"(?i)\bpass|\bpw\b|\bpin\b|wi-?fi|密码|口令")
# The password in brackets after its word: "User shared their Steam password
# (Gnarly-Gecko-55) so the assistant could …".
_IN_BRACKETS = re.compile(
    rf"(?i)\b(?:password|passcode|passwort|pin)\s*[(（](?P<value>{PASSWORD_CHARS}{{4,64}}?)[)）]"
)


def _described_or_bracketed(text: str) -> Iterator[Detection]:
    """A PIN or a password given after a description of it, or in brackets after its word."""
    for match in _DESCRIBED_THEN_GIVEN.finditer(text):
        if NOT_A_SECRET_CODE.search(match.group()):
            continue  # "the promo code is the year we opened, 1998"
        group = "value" if match.group("value") else "zh"
        yield Detection(Category.PASSWORD, match.start(group), match.end(group))
    for match in _DESCRIBED_BY_FORM.finditer(text):
        group = "value" if match.group("value") else "latin"
        value = match.group(group).rstrip(TRAILING)
        # Described as pinyin or one word, a word in "-ing" is one ("laobing", "qingming").
        pinyin = group == "latin" and value.isalpha() and value.casefold() not in NOT_A_PASSWORD
        if (pinyin or could_be_a_password(value)) and not NOT_A_SECRET_CODE.search(match.group()):
            start = match.start(group)
            yield Detection(Category.PASSWORD, start, start + len(value))
    for match in _GIVEN_THEN_DESCRIBED.finditer(text):
        if match.group("its") and not _TALKS_OF_A_PASSWORD.search(text):
            continue  # "it's Monday, all one word" is no password where none is talked of
        value = match.group("value")
        if (
            typed(value)
            and could_be_a_password(value)
            and not re.fullmatch(_FORM, value, re.IGNORECASE)
        ):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    for match in _IN_BRACKETS.finditer(text):
        value = match.group("value")
        pin = value.isdigit() and 4 <= len(value) <= 8
        if (pin or looks_made_up(value)) and could_be_a_password(value):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# A question about the Wi-Fi, answered on one of the next lines: "what's the wifi?\n
# it's Bergblick-55", "家里wifi是啥？\n妈：hx@2024home". Not one about its name.
_WIFI_QUESTION = re.compile(r"(?im)^[^\n]*(?:\bwi-?fi\b|\bwlan\b|无线|wifi)[^\n]{0,40}[?？]")
_ABOUT_ITS_NAME = re.compile(r"(?i)\bcalled\b|\bname\b|\bnetwork\b|\bssid\b|名")


def _wifi_answered(text: str) -> Iterator[Detection]:
    """A made-up value answering a question about the Wi-Fi, not a network's name."""
    for question in _WIFI_QUESTION.finditer(text):
        if _ABOUT_ITS_NAME.search(question.group()):
            continue
        for start, end in answered_below(text, question.end() - 1):
            value = text[start:end].rstrip(TRAILING)
            if _NETWORK_NAME.search(value) or not any(c.isdigit() for c in value):
                continue
            if looks_made_up(value) and could_be_a_password(value) and typed(value):
                yield Detection(Category.PASSWORD, start, start + len(value))
                break


def _security_answers(text: str) -> Iterator[Detection]:
    for match in _SECURITY_ANSWER.finditer(text):
        group = next(
            g
            for g in ("value", "answer", "zh", "asked", "first", "set", "question", "filled")
            if match.group(g)
        )
        if group == "question" and not _SECURITY_QUESTION.search(match.group("q")):
            continue  # "the museum asks for your first visit date: March 2019"
        if could_be_a_password(match.group(group)):
            yield Detection(Category.PASSWORD, match.start(group), match.end(group))


def _apple_app_passwords(text: str) -> Iterator[Detection]:
    for match in _APPLE_APP_PASSWORD.finditer(text):
        yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _keepass_entries(text: str) -> Iterator[Detection]:
    for match in _KEEPASS_ENTRY.finditer(text):
        if could_be_a_password(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


def _names_wifi_and_its_key(lowered: str) -> bool:
    network = any(w in lowered for w in ("wifi", "wi-fi", "wlan", "ssid", "hotspot", "router"))
    return network and any(w in lowered for w in _WIFI_KEY_STEMS)


# A made-up value right after "Wi-Fi" is what people share: its password ("…, Wi-Fi
# Offshore-Wind-12, phone …", "Wi-Fi i klubbhuset: hoppbakke2026"). A network's name
# is told apart by its maker's prefix or its band ("TP-LINK_5G_8F2A", "Fenwick_5G").
_WIFI_VALUE = re.compile(
    r"(?i)(?<!ssid )\bwi-?fi\b"
    # Where: "Wi-Fi i klubbhuset", "Wi-Fi at Mum and Dad's: morwenna1951".
    r"(?:[ \t]+(?:i|in|im|en|på|at|bei|chez|del?)(?:[ \t]+[\w'’-]{1,20}){1,3}(?=[ \t]*[:：]))?"
    r"(?:[ \t]+(?:i|in|im|en|på|at|bei|chez|del?)[ \t]+[\w'-]{1,20})?"
    rf"(?:[ \t]+is)?[ \t]*[:：—–]?[ \t]+(?P<value>{PASSWORD_CHARS}{{8,63}})(?=[\s,;。，]|$)"
)
# After a clause about whose or which it is: "Gwenllian's Wi-Fi, which the tablet falls
# back to: Llandudno_Pier_77", "Wi-Fi for the workshop extender: torque-wrench-5nm"; in
# Chinese, "房子的无线网 binjiang1205", "家里WiFi改成 gaowanqing1988 了".
_WIFI_AFTER_A_CLAUSE = re.compile(
    r"(?i)(?<!ssid )\bwi-?fi\b(?!\s+(?:name|network|ssid)\b)[^\n:：]{1,60}?[:：][ \t]*"
    rf"(?P<value>{PASSWORD_CHARS}{{8,63}})(?=[\s,;。，]|$)"
    r"|(?:无线网?|(?i:wi-?fi))(?:改成了?|换成了?|是|为|[:：]|[ \t]"
    # "guest Wi-Fi，给他的是 heitt-vatn-77".
    r"|[，,][ \t]*(?:给|給|发给|發給)[他她你我们們]*的是)[ \t]*"
    # Not a Wi-Fi QR code's fields ("WIFI:T:WPA;S:…;P:…;;"), read by _wifi_keys.
    r"(?![A-Z]:)(?P<zh>[\x21\x23-\x26\x28-\x7e]{6,63})(?![\x21-\x7e])"
)
_NOT_ITS_KEY = re.compile(
    r"(?i)\b(?:model|serial|version|name|network|ssid|called|speed|plan|provider|isp|band"
    r"|channel|mac|ip|address)\b|名|型号|型號"
)
_KEY_LATER = re.compile(r"(?i)password|passwort|passcode|\bpw\b|\bkey\b|\bpsk\b|密码|密碼|口令")
_NETWORK_NAME = re.compile(
    r"(?i)^(?:tp-?link|netgear|fritz|vodafone|livebox|xfinity|eduroam|linksys|asus|d-?link"
    r"|huawei|zte|mercury|tenda|xiaomi|sky|virgin|orange|freebox|bbox|telekom|spectrum|att)"
    r"|[-_ ](?:2\.?4|5)g(?:hz)?$|[-_]ext$"
)


def _wifi_values(text: str) -> Iterator[Detection]:
    """A made-up value with a digit right after "Wi-Fi", not a network's name."""
    for pattern in (_WIFI_VALUE, _WIFI_AFTER_A_CLAUSE):
        for match in pattern.finditer(text):
            # "home Wi-Fi is BT-Hub-7Q2X and the password is …": the password comes
            # later, so this is the network's name.
            if _KEY_LATER.search(text, match.end()):
                continue
            group = "value" if match.group("value") else "zh"
            if _NOT_ITS_KEY.search(text, match.start(), match.start(group)):
                continue  # "the Wi-Fi router model: RT-AX58U"
            value = match.group(group).rstrip(TRAILING)
            if match.group(group).endswith("!") and not text[match.end(group) :].strip():
                value += "!"  # the password's own, ending the note: "…: Nyhavn2019!"
            if _NETWORK_NAME.search(value) or not looks_made_up(value) or "WIFI:" in value:
                continue
            # Digits, or a symbol other than a dash ("hengrui_guest", "HR_staff@5G"): a
            # network's name is words and dashes ("Birtwistle-Guest").
            if not any(c.isdigit() or c in "_@#!$%&*+.=?^~" for c in value):
                continue
            if could_be_a_password(value):
                start = match.start(group)
                yield Detection(Category.PASSWORD, start, start + len(value))


# The answer to a bank's security question is a password of plain words.
_SECURITY_ANSWER = re.compile(
    r"(?i)(?:\b(?:security|secret)(?: question)? answer\b[^\n.;]{0,60}?(?:\bis\b|[:：]|[是为])"
    # The question in brackets, then its answer: "security question (first dog's name): Tansy".
    r"|\bsecurity question\s*[(（][^)）\n]{1,40}[)）]\s*(?:的?答案(?:是|为)?|[:：]))[ \t]*[\"'“‘]?"
    r"(?P<value>[^\s\"'”’.,;。，]{3,40})"
    # The answer to a question, the question quoted or named: "Samir's answer to 'first
    # concert you went to?' is Oasis at Knebworth", "the answer to his telephone-banking
    # question, mother's maiden name: Sangster". A few words, to the end of the clause, the
    # first a name's or a number's ("the answer to that question: we don't know" is none).
    r"|\banswer to\s+(?:['‘“\"][^'’”\"\n]{3,60}['’”\"]|[^\n.;:]{0,40}?\bquestion\b[^\n.;:]{0,40}?)"
    r"\s*(?:\bis\b|[:：])\s*(?P<answer>(?-i:[A-Z0-9])[^\s,.;:!?]{1,30}(?:\s[^\s,.;:!?]{1,30}){0,3})"
    r"(?=\s*(?:[.,;!?，。]|$))"
    r"|(?:密保答案|安全问题答案|密保问题的?答案)\s*(?:是|为|[:：])\s*(?P<zh>[^\s，。,;；]{2,20})"
    # A question asked for, then its answer: "her freight account asks for the name of her
    # first school; the answer on file is Holland House".
    r"|\b(?:account|portal|bank|app|site|website|login|helpline|provider|insurer)\s+asks?\s+"
    r"(?:for|about)\b[^\n]{0,60}?\bthe answer\b(?:\s+(?:on file|saved|stored|given))?"
    r"\s+(?:is|was)\s+(?P<asked>(?-i:[A-Z0-9])[^\s,.;:!?]{1,30}(?:\s(?-i:[A-Z0-9])[^\s,.;:!?]{1,30}){0,3})"
    r"(?=\s*(?:[.,;!?，。]|$))"
    # A security check's answer set: "his bank asks for his mother's maiden name as a
    # security check; he set it to Bellefeuille".
    r"|\b(?:security (?:check|question)|maiden name|first pet|first school)\b[^\n]{0,40}?"
    r"\bset it to\s+(?P<set>(?-i:[A-Z0-9])[^\s,.;:!?]{1,30}(?:\s(?-i:[A-Z])[^\s,.;:!?]{1,30}){0,2})"
    r"(?=\s*(?:[.,;!?，。]|$))"
    # A question asked for, then who answered it and how: "his energy account asks for
    # his favourite rugby league team; Carole typed Bramley Buffaloes", "his pension
    # helpline wants his mother's maiden name; Carole gave it as Hepworth", "the bank asks
    # which mountain hut he slept in first; the answer on file is Refuge du Couvercle".
    r"|\b(?:asks?|asked|wants|wanted|needs|needed|requires|required)\s+(?:for\s+|about\s+)?"
    r"(?P<q>[^\n;:：]{0,50}?"
    r"\b(?:favou?rite|maiden name|first|born|childhood|nickname|best friend)\b[^\n;:：]{0,50}?)"
    r"(?:;\s*(?:the answer(?:\s+(?:on file|saved|stored|given|(?:she|he|they|we|I)\s+"
    r"(?:set|gave|chose|picked|entered)))?\s+(?:is|was)"
    r"|(?:(?-i:[A-Z][\w'’-]+)|she|he|they|we|I)\s+(?:typed|gave it as|gave|entered|put"
    r"|set it to|set|chose|picked|answered)(?:\s+in)?)|[:：])"
    r"\s*(?P<question>(?-i:[A-Z0-9])[^\s,.;:!?]{1,30}"
    r"(?:\s(?:(?-i:[A-Z0-9])[^\s,.;:!?]{0,30}|du|de|la|le|des|del|van|von|der|of|the|y|da|di))"
    r"{0,4})(?=\s*(?:[.,;!?，。]|$))"
    r"|密保问题[^\n。；]{0,30}?(?:填的是|答的是|写的是|设的是|填了|写了|答了)\s*"
    r"(?P<filled>[^\s，。,;；]{2,20})"
    # The answer first: "his hamster was called Doudou, that's his UCAS security answer".
    r"|(?P<first>(?-i:[A-Z])[a-z]{2,20}|[A-Za-z]+[0-9]+)\s*[，,]\s*"
    r"(?:这就?是|that'?s|which is|this is)\s*[^\n，。.]{0,30}?"
    r"(?:security answer|secret answer|密保答案|安全问题的?答案)"
)


# What a security question asks: a favourite, a maiden name, where one was born, a first
# pet or a first boat by name ("the name of his first boat", "which hut he slept in
# first"), not a first visit's date.
_SECURITY_QUESTION = re.compile(
    r"(?i)favou?rite|maiden name|\bborn\b|childhood|nickname|best friend"
    r"|\bfirst\s+(?:pet|dog|cat|horse|car|bike|boat|school|teacher|job|employer|house|street"
    r"|love|concert|record|album|holiday)\b"
    r"|^(?=.*\b(?:name of|which|what|who|where)\b)(?!.*\b(?:date|year|day|time|number|when)\b)"
    r".*\bfirst\b"
)
_ASKS = re.compile(r"ask|want|need|requires")
_QUESTION_STEM = re.compile(r"favou?rite|maiden|first|born|childhood|nickname")


# Plain words after "password is" only when there are four or more, all in lower case,
# none a function word, an -ed, -ing or -ly word: "my password is correct horse battery
# staple", not "the password is expiring next week" or "is usually my dog's name".
_WORDS_AS_PASSWORD = re.compile(
    r"(?i)\bpassword\s+(?:is|was)\s+(?P<value>[a-z]+(?:[ ][a-z]+){3,5})(?=[.;!?,]?\s*$|[.;!?,]\s)"
    # Or words and a number, with or without "is": "same login, password popcorn sunday
    # 84", "the password is puffin lighthouse 3".
    r"|\bpassword\s+(?:(?:is|was)\s+|[:：]\s*)?(?P<numbered>[a-z]+(?:[ ][a-z]+){1,4}[ ][0-9]{1,4})"
    r"(?=[.;!?,，。]?\s*$|[.;!?,，。]\s)"
)


def _plain_words_as_password(value: str) -> bool:
    words = value.split()
    if value != value.lower() or words[0] in _NOT_A_PHRASE_START:
        return False
    if any(w in _NOT_IN_A_PHRASE or w in _FUNCTION_WORDS for w in words):
        return False
    return not any(len(w) > 4 and w.endswith(("ed", "ing", "ly")) for w in words)


def _passphrases(text: str) -> Iterator[Detection]:
    """Passphrases of plain words, in English or in Chinese."""
    if "password" in text.lower():
        for match in _WORDS_AS_PASSWORD.finditer(text):
            group = "value" if match.group("value") else "numbered"
            words = match.group(group).rsplit(" ", 1)[0] if group == "numbered" else ""
            if _plain_words_as_password(match.group("value") or words):
                yield Detection(Category.PASSWORD, match.start(group), match.end(group))
    for match in _PASSPHRASE.finditer(text):
        words = match.group("value").casefold().split()
        if words[0] in _NOT_A_PHRASE_START or any(w in _NOT_IN_A_PHRASE for w in words):
            continue
        if words[0].endswith("ed"):
            continue  # "the passphrase was generated by diceware"
        yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    for match in _MEMORABLE_WORD.finditer(text):
        if could_be_a_password(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    for match in _CHINESE_PASSPHRASE.finditer(text):
        if not _NOT_A_CHINESE_PASSPHRASE.search(match.group("value")):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))


# Each rule beside the literal words it needs: it runs only where they are, since most
# memories have none. A trigger is given the text and its lower-cased copy.
_RULES: tuple[Rule, ...] = (
    (
        lambda text, low: "pass" in low or "pin" in low or "密码" in text or "that" in low,
        _before_the_word,
    ),
    (
        lambda text, low: ("admin" in low or "root" in low) and any(c in text for c in "/:：,，"),
        _admin_pairs,
    ),
    (
        lambda text, low: _names_wifi_and_its_key(low) or "wpa" in low or "WIFI:" in text,
        _wifi_keys,
    ),
    (lambda text, low: "wi-fi" in low or "wifi" in low or "无线" in text, _wifi_values),
    (lambda text, low: ("?" in text or "？" in text) and "\n" in text, _wifi_answered),
    (
        lambda text, low: (
            "answer" in low
            or "security" in low
            or "maiden name" in low
            or "first pet" in low
            or "first school" in low
            or "密保" in text
            or "安全问题" in text
            or (_ASKS.search(low) is not None and _QUESTION_STEM.search(low) is not None)
        ),
        _security_answers,
    ),
    (
        lambda text, low: "-" in text and any(w in low for w in ("apple", "icloud", "app", "应用")),
        _apple_app_passwords,
    ),
    (lambda text, low: "<Key>" in text, _keepass_entries),
    (
        lambda text, low: (
            "phrase" in low
            or "password" in low
            or "口令" in text
            or "主密码" in text
            or "memorable" in low
            or "user" in low
            or any(w in low for w in ("crypt", "luks", "keepass", "locked with", "protected with"))
        ),
        _passphrases,
    ),
    (
        lambda text, low: (
            "pin" in low
            or "pass" in low
            or "key" in low
            or "pw" in low
            or "wi" in low
            or "密码" in text
            or "口令" in text
        ),
        _described_or_bracketed,
    ),
    *password_logins.RULES,
    *password_codes.RULES,
    *password_changes.RULES,
    *password_told.RULES,
)
