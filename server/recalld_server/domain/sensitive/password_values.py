"""What a password looks like, shared by the rules that find them in sentences and in syntax."""

from __future__ import annotations

import re

# Printable ASCII but quotes, and the accented Latin letters of European keyboards
# ("Meisenknödel7"): passwords are typed on keyboards; CJK after one ends it.
PASSWORD_CHARS = r"[\x21\x23-\x26\x28-\x5f\x61-\x7e\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f]"
# Config keys about passwords that hold something else.
# "min" and "max" as whole parts of the name: "admin_password" is a password.
NOT_A_PASSWORD_FIELD = re.compile(
    r"hash|salt|policy|reset|file|length|hint|expir|strength|rule|field|prompt|label"
    r"|last|changed|date|days|updated|created"
    r"|(?<![a-z])(?:min|max)(?![a-z])"
)
# A door's or a box's code with one letter among four to six digits: "B2741", "4B7719".
LETTERED_CODE = re.compile(r"(?=[0-9A-Z]{5,7}$)[0-9]*[A-Z][0-9]*")
# Digits keyed in, with the keys pressed around them: "2961", "*2961#", "1105#".
KEYED_PIN = re.compile(r"[*#]?[0-9]{4,8}[*#]?")
# A safe's combination: "12-34-56".
DASHED_COMBINATION = re.compile(r"[0-9]{1,3}(?:-[0-9]{1,3}){2,3}")
# What may follow a PIN that ends its clause ("the key safe is 7249, back gate…"), so
# that "the key safe is 2019 model" is not read as one.
CLAUSE_END = r"\s*(?:[,.;!)，。；]|$|[—–]|\s(?:and|then|but|so)\b)"
TRAILING = ".,;:!?)]}>”’\"'`。，；：！？）」"
_REDACTED = frozenset({"redacted", "hidden", "masked", "removed", "omitted", "null", "none"})
# Words that follow "password is" without being one.
_NOT_A_PASSWORD_WORDS = """
    a an the my your his her our their its this that not no none empty blank wrong
    incorrect correct invalid valid expired weak strong long short secure insecure same
    different required missing needed saved stored written changed reset set updated
    too very really still now being also in on at of for to and or but same old new
    unknown forgotten lost hidden encrypted hashed case-sensitive sensitive ok fine good
    bad simple complex easy hard known unchanged temporary
    files compat systemd sss ldap nis winbind
    capital lowercase uppercase caps lower upper all file external environment env
    str string int bytes bool text varchar char optional field hash policy manager
    what which never one something anything nothing whatever generated
    changeme changeit change_me replaceme replace_me
    read loaded taken pulled injected mounted provided supplied passed fetched sourced
    irrelevant unimportant elsewhere nowhere
    yes see via ask check case public
    one two three four five six seven eight nine zero sent
    usually always probably basically normally mostly sometimes often just
    mother father mum mom dad
"""
NOT_A_PASSWORD = frozenset(_NOT_A_PASSWORD_WORDS.split())
# Code on the right of "password =": a call ("getpass.getpass()", "input("), not a value.
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%")
# A PowerShell command (an approved verb, a dash, a noun).
_CMDLET = re.compile(
    r"(?:Get|Set|New|Remove|Add|Clear|ConvertTo|ConvertFrom|Read|Write|Invoke|Import|Export"
    r"|Start|Stop|Test|Select|Out|Format|Enable|Disable|Update|Register)-[A-Z][A-Za-z]+"
)
_HASHED = re.compile(
    r"\$(?:2[abxy]?|argon2(?:id|i|d)|[156]|y|gy|apr1)\$"
    r"|(?:pbkdf2_sha(?:1|256)|bcrypt_sha256|argon2|scrypt|sha1|md5)\$"
)
_ATTRIBUTE = re.compile(r"[a-z][a-z-]*=")
_PUBLIC_ID = re.compile(r"wx[0-9a-f]{16}")
_CALL = re.compile(r"[A-Za-z_][\w.]*\(\)?$|[A-Za-z_]\w*\.[A-Za-z_][\w.]*\(")


def typed(value: str) -> bool:
    """Typed on a European keyboard: ASCII, or Latin letters with their accents."""
    return all(c.isascii() or ("\u00c0" <= c <= "\u017f" and c.isalpha()) for c in value)


def could_be_a_password(value: str) -> bool:
    """Not a word that follows "password is" in ordinary talk, a placeholder or a redaction."""
    if len(value) < 3 or value.casefold() in NOT_A_PASSWORD:
        return False
    # Variables and redactions: "${DB_PASSWORD}", "[FILTERED]", ":'new_pw'".
    if value.startswith(("${", "{{", "%(", "<", "[", "$(", "*", ":", "(")):
        return False
    if not any(c.isalnum() for c in value) or _CALL.match(value):  # "******", "getpass("
        return False
    if _ATTRIBUTE.fullmatch(value):  # '<input type="password" name="pw" autocomplete=…'
        return False
    if value.startswith("//"):  # a URL's rest: "Password for 'https://github.com'"
        return False
    if "***" in value:  # shown with a mask: "a*****@example.com", "Sun***24"
        return False
    if _PUBLIC_ID.fullmatch(value):  # a WeChat mini program's AppID is shown to everyone
        return False
    if _HASHED.match(value):  # what a store keeps: "pbkdf2_sha256$870000$…", "$2b$12$…"
        return False
    if _VARIABLE.fullmatch(value):  # "$DB_PASS", "%PGPASSWORD%"
        return False
    if _CMDLET.fullmatch(value):  # "$pw = ConvertTo-SecureString …" names a command
        return False
    # "the password is printed on the sticker", "… is expiring": what it is like.
    if value.isalpha() and value.islower() and value.endswith(("ed", "ing")):
        return False
    return value.strip("<>[](){}*").casefold() not in _REDACTED


def looks_made_up(value: str) -> bool:
    """Letters mixed with digits or symbols, as passwords are and words are not."""
    value = value.rstrip(TRAILING)  # "again?" is a word at the end of a question
    letters = any(c.isalpha() for c in value)
    others = any(c.isdigit() or not c.isalnum() for c in value)
    return len(value) >= 6 and letters and others
