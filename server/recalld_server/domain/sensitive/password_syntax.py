"""Passwords written in a tool's syntax: environment variables, URIs, command lines, configs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive.password_values import (
    NOT_A_PASSWORD_FIELD,
    PASSWORD_CHARS,
    TRAILING,
    could_be_a_password,
    looks_made_up,
)
from recalld_server.domain.sensitive.spans import Detection

# An environment variable: PGPASSWORD=…, MYSQL_ROOT_PASSWORD=….
_PASSWORD_ENV = re.compile(
    rf"(?<![A-Za-z0-9_])[A-Z0-9_]*(?:PASSWORD|PASSWD|PWD)[A-Z0-9_]*="
    rf"[\"']?(?P<value>{PASSWORD_CHARS}{{3,}})"
)
# Credentials in a URI (postgres://user:password@host).
_URI_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:(?P<value>[^\s@/]{3,})@"
)
# The password argument of command lines: what comes before the value.
_COMMAND_OPTIONS = (
    r"\bmysql(?:dump|admin)?\b[^\n]*?\s-p",
    r"\bredis-cli\b[^\n]*?\s-a\s*",
    r"\bsshpass\b[^\n]*?\s-p\s*",
    r"\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[\s=]",
    r"\bcurl\b[^\n]*?\s(?:-u|--user)\s+[^\s:'\"]+:",
    r"\bhtpasswd\b[^\n]*?\s-(?=\w*b)(?!\w*n)\w+\s+\S+\s+\S+\s+",
    # With -n there is no file: htpasswd -Bbn USER PASSWORD.
    r"\bhtpasswd\b[^\n]*?\s-(?=\w*b)(?=\w*n)\w+\s+\S+\s+",
    # ~/.netrc: machine HOST login USER password PASSWORD.
    r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+",
    r"\bwpa_passphrase\s+\S+\s+",
    r"\brequirepass\s+(?:(?:is|to)\s+)?",  # "the new requirepass is redis-Otter-90"
    # Windows: "net use Z: \\nas\share PASSWORD /user:NAME", "… /user:NAME PASSWORD",
    # "net user NAME PASSWORD /add".
    r"\bnet\s+use\s+\S+\s+\S+\s+(?=\S+\s+/user:)",
    r"\bnet\s+use\b[^\n]*?\s/user:\S+\s+",
    r"\bnet\s+user\s+[^\s/]+\s+(?=\S+(?:\s+/|[ \t]*(?:\n|$)))",
    # Java keytool and jarsigner (-storepass, -srcstorepass, -keypass …), OpenSSL
    # ("-passout pass:…"), Caddy ("caddy hash-password --plaintext …").
    r"(?<!\S)-(?:src|dest)?(?:store|key)pass\s+",
    r"(?<!\S)-pass(?:in|out)?\s+pass:",
    r"\bcaddy\s+hash-password\b[^\n]*?\s--plaintext[\s=]",
    # Any long option named for a password: --password=…, --db-pass …, --passphrase '…'.
    r"(?<!\S)--?(?:[A-Za-z][A-Za-z-]*?)?(?:pass(?:word|wd|phrase)?|pwd)(?:=|[ \t]+)"
    r"(?!(?:pass|env|file|fd):|stdin\b)(?=\S)",
    # Archivers glue it to -p (7-Zip, RAR) or take it after -P (zip, unzip).
    r"\b(?:7z|7za|7zz|rar|unrar)\b[^\n]*?\s-p(?=[^\s-])",
    r"\b(?:zip|unzip)\b[^\n]*?\s-P\s+",
    # Samba and friends: -U user%password.
    r"(?<!\S)-U\s+[\"']?[^\s%\"']+%",
    # A user and password as arguments: mosquitto_passwd -b FILE USER PW, rabbitmqctl.
    r"\bmosquitto_passwd\b[^\n]*?\s-b\s+\S+\s+\S+\s+",
    r"\bmosquitto_(?:pub|sub|rr)\b[^\n]*?\s-P\s+",
    # lftp -u USER,PASSWORD.
    r"\blftp\b[^\n]*?\s-u\s+[^\s,]+,",
    r"\brabbitmqctl\s+(?:add_user|change_password)\s+\S+\s+",
    # SQL Server's sqlcmd and bcp, OpenLDAP's -w, MongoDB's shell.
    r"\b(?:sqlcmd|bcp|osql)\b[^\n]*?\s-P\s*",
    r"\bldap(?:search|add|modify|delete|passwd|whoami)\b[^\n]*?\s-w\s+",
    r"\bmongo(?:sh|dump|restore|import|export)?\b[^\n]*?\s-p\s+",
    # PowerShell: ConvertTo-SecureString "…" -AsPlainText.
    r"\bConvertTo-SecureString\s+(?:-String\s+)?",
    # chpasswd reads user:password lines.
    r"\b(?:echo|printf)\s+[\"']?[A-Za-z0-9_.-]+:(?=[^\n|]*\|\s*(?:sudo\s+)?chpasswd)",
    r"\bchpasswd\s*<<<\s*[\"']?[A-Za-z0-9_.-]+:",
)
# A literal word of each command above: without one, the commands are not looked for.
_COMMAND_WORDS = (
    "mysql", "redis-cli", "sshpass", "docker", "curl", "htpasswd", "wpa_passphrase",
    "requirepass", "net", "pass", "caddy", "pwd", "machine", "7z", "rar", "zip", "-U", "mosquitto",
    "rabbitmqctl", "lftp", "sqlcmd", "bcp", "osql", "ldap", "mongo", "SecureString", "chpasswd",
)  # fmt: skip
_COMMAND_PASSWORD = re.compile(
    "(?:" + "|".join(_COMMAND_OPTIONS) + ")"
    rf"(?:'(?P<quoted>[^'\n]+)'|\"(?P<double>[^\"\n]+)\"|(?P<value>(?![-/]){PASSWORD_CHARS}+))"
)
# A line of ~/.pgpass: hostname:port:database:username:password.
_PGPASS = re.compile(
    r"(?m)(?:^|(?<=\s))(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+|localhost|\*):(?:[0-9]{2,5}|\*)"
    r":[^\s:]+:[^\s:]+:(?P<value>\S{3,})[ \t]*$"
)
# A quoted key and value in code: PHP's define('DB_PASSWORD', '…') and
# 'password' => '…', Python's ("password", "…").
_QUOTED_PAIR = re.compile(
    r"(?i)[\"'](?P<name>[A-Za-z0-9_.-]*(?:password|passwd|pwd|pass|passphrase)"
    r"(?:[_.-][A-Za-z0-9_.-]*)?)[\"']\]?\s*(?:,|=>?)\s*"
    r"[\"'](?P<value>[^\"'\s|]{6,64})[\"']"
)


# XML named for a password: an element (<password>…</password>), or a name and a value
# (.NET's <add key="SmtpPassword" value="…" />, <entry name="db.pass" value="…"/>).
_XML_PASSWORD = re.compile(
    r"(?i)<(?P<tag>[\w:.-]*(?:password|passwd|pwd|passphrase)[\w.-]*)>"
    r"(?P<element>[^<\n]{3,128})</(?P=tag)>"
    # Windows' unattend.xml: <AdministratorPassword><Value>…</Value>.
    r"|<[\w:.-]*(?:password|passwd)[\w.-]*>\s*<Value>(?P<nested>[^<\n]{3,128})</Value>"
    r"|\b(?:key|name)\s*=\s*\"(?P<name>[^\"\n]*(?:password|passwd|pwd|pass|passphrase)[^\"\n]*)\""
    r"\s+value\s*=\s*\"(?P<attribute>[^\"\n]{3,128})\""
)


# NetworkManager's `nmcli … wifi-sec.psk VALUE`; OpenWrt's `uci set wireless.….key=VALUE`.
_WIFI_COMMAND_KEY = re.compile(
    r"\bwifi-sec\.psk[ \t]+[\"']?(?P<value>[^\s\"']{8,63})"
    r"|\buci\s+set\s+wireless\.\S*?\.key=[\"']?(?P<uci>[^\s\"']{8,63})"
)
# SQL's account statements: MySQL's and Oracle's "CREATE USER … IDENTIFIED BY '…'".
_SQL_IDENTIFIED_BY = re.compile(
    r"(?i)\bIDENTIFIED\s+(?:WITH\s+\w+\s+)?BY\s+(?:PASSWORD\s+)?"
    r"(?:'(?P<quoted>[^'\n]{3,128})'|\"(?P<double>[^\"\n]{3,128})\"|(?P<value>[^\s;'\"]{3,128}))"
)
# PlanetScale's database passwords have a shape of their own (certain: not an API key).
_PLANETSCALE_PASSWORD = re.compile(r"(?<![A-Za-z0-9_])pscale_pw_[A-Za-z0-9=_.-]{32,64}")
# OpenWrt's wireless config (UCI): the Wi-Fi key of a wifi-iface section.
_UCI_WIFI_KEY = re.compile(
    r"config\s+wifi-iface\b[^\n]*(?:\n[ \t]+option[^\n]*)*?\n[ \t]+option\s+key\s+"
    r"(?:'(?P<quoted>[^'\n]{8,63})'|\"(?P<double>[^\"\n]{8,63})\"|(?P<value>\S{8,63}))"
)


def passwords_in_syntax(text: str) -> Iterator[Detection]:
    """Passwords in environment variables, URIs, command lines, .pgpass lines and code."""
    # Each rule runs only where its literal words are (most memories have none).
    if "PASSW" in text or "PWD" in text:
        for match in _PASSWORD_ENV.finditer(text):
            value = match.group("value").rstrip(TRAILING)
            if NOT_A_PASSWORD_FIELD.search(match.group().casefold()):
                continue
            if could_be_a_password(value):
                end = match.start("value") + len(value)
                yield Detection(Category.PASSWORD, match.start("value"), end)
    # (pattern, certain): a Wi-Fi key in its own command or config section is a
    # password whatever it looks like, so no guess at an API key takes it.
    patterns = [(_URI_PASSWORD, False)] if "://" in text else []
    if any(word in text for word in _COMMAND_WORDS):
        patterns.append((_COMMAND_PASSWORD, False))
    if "wifi-iface" in text:
        patterns.append((_UCI_WIFI_KEY, True))
    if "wifi-sec.psk" in text or "uci set wireless" in text:
        patterns.append((_WIFI_COMMAND_KEY, True))
    if "identified" in text.lower():
        patterns.append((_SQL_IDENTIFIED_BY, True))
    for pattern, certain in patterns:
        for match in pattern.finditer(text):
            group = next(
                g for g in ("quoted", "double", "value", "uci") if match.groupdict().get(g)
            )
            value = match.group(group)
            if could_be_a_password(value):
                start = match.start(group)
                yield Detection(Category.PASSWORD, start, start + len(value), certain)
    if text.count(":") >= 4:
        for match in _PGPASS.finditer(text):
            if could_be_a_password(match.group("value")):
                yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
    if "pscale_pw_" in text:
        for match in _PLANETSCALE_PASSWORD.finditer(text):
            yield Detection(Category.PASSWORD, match.start(), match.end(), certain=True)
    lowered = text.lower()
    if "pass" in lowered or "pwd" in lowered:
        yield from _quoted_pairs(text)
        if "<" in text or "value" in lowered:
            yield from _xml_passwords(text)


def _xml_passwords(text: str) -> Iterator[Detection]:
    for match in _XML_PASSWORD.finditer(text):
        group = next(g for g in ("element", "nested", "attribute") if match.group(g) is not None)
        name = (match.group("tag") or match.group("name") or "password").casefold()
        value = match.group(group).strip()
        if value and not NOT_A_PASSWORD_FIELD.search(name) and could_be_a_password(value):
            start = match.start(group) + match.group(group).index(value)
            yield Detection(Category.PASSWORD, start, start + len(value))


def _quoted_pairs(text: str) -> Iterator[Detection]:
    for match in _QUOTED_PAIR.finditer(text):
        value = match.group("value")
        name = match.group("name").casefold()
        if NOT_A_PASSWORD_FIELD.search(name) or not looks_made_up(value):
            continue
        # A validation rule ('same:password') or another field ('password2'), not a value.
        if ":" in value or "pass" in value.casefold() or "pwd" in value.casefold():
            continue
        if could_be_a_password(value):
            yield Detection(Category.PASSWORD, match.start("value"), match.end("value"))
