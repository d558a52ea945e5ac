"""Who a tool call acts for: the key passed through to recalld, and the user.

The user is never the model's choice unless the operator allows it: on stdio
it is fixed for the process (`--user`); over HTTP it is bound to the caller's
key (`--key-users`), read from a header the caller's gateway sets
(`--user-header`), or fixed too. The key is the caller's: on stdio the
process's own (RECALLD_API_KEY), over HTTP the request's bearer token, passed
through unchanged, so the facade never reaches further than the key does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from collections.abc import Mapping
from pathlib import Path


class IdentityError(Exception):
    """The call cannot be tied to a key or a user; the message says why, for the model."""


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """The credentials of one call.

    Attributes:
        api_key: Sent to recalld as the bearer token ("" for a keyless server).
        tenant: For a keyless (development) recalld only: the tenant to act in.
        user_id: The bound user ("" when none is bound: the tool argument decides,
            where the operator allows it).
    """

    api_key: str
    tenant: str
    user_id: str


def _bearer(headers: Mapping[str, str]) -> str:
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), "").strip()


class KeyUsers:
    """A key -> user map (`--key-users FILE`): each key acts for one user.

    The file is a JSON object `{"keys": [{"key": "...", "user": "alice"}, ...]}`;
    `key_sha256` (hex) may stand for `key`, so the file need not hold the keys.
    """

    def __init__(self, by_digest: Mapping[bytes, str]) -> None:
        self._by_digest = dict(by_digest)

    @classmethod
    def load(cls, path: Path) -> KeyUsers:
        """Reads the file.

        Raises:
            ValueError: Unreadable, malformed, or an entry without a key or a user.
        """
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: {error}") from None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list) or not entries:
            raise ValueError(f'{path}: expected {{"keys": [{{"key": ..., "user": ...}}]}}')
        by_digest: dict[bytes, str] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: keys[{index}] is not an object")
            user = entry.get("user")
            if not isinstance(user, str) or not user.strip():
                raise ValueError(f"{path}: keys[{index}] has no user")
            if isinstance(entry.get("key"), str) and entry["key"]:
                digest = hashlib.sha256(entry["key"].encode()).digest()
            elif isinstance(entry.get("key_sha256"), str):
                try:
                    digest = bytes.fromhex(entry["key_sha256"])
                except ValueError:
                    raise ValueError(f"{path}: keys[{index}].key_sha256 is not hex") from None
                if len(digest) != 32:
                    raise ValueError(f"{path}: keys[{index}].key_sha256 is not a SHA-256")
            else:
                raise ValueError(f"{path}: keys[{index}] has no key or key_sha256")
            by_digest[digest] = user.strip()
        return cls(by_digest)

    def user_of(self, key: str) -> str | None:
        """The key's user, None for a key the file does not name (compared in constant time)."""
        digest = hashlib.sha256(key.encode()).digest()
        found = None
        for known, user in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                found = user
        return found


@dataclasses.dataclass(frozen=True, slots=True)
class Identity:
    """How calls are tied to a key and a user (see the module docstring).

    Attributes:
        api_key: The process's own key (stdio; over HTTP only with allow_keyless,
            for requests that bring none).
        tenant: For a keyless recalld: the tenant calls act in.
        user_id: A fixed user ("" for none).
        user_header: Over HTTP, the header that names the user.
        key_users: Over HTTP, the user bound to each key.
        allow_user_argument: Tools take a `user_id` argument (trusted agents that
            serve several users); it wins over the bound user.
        require_key: Over HTTP, a request without a bearer key is refused (the
            HTTP layer answers 401 first; this holds if it is bypassed).
    """

    api_key: str = ""
    tenant: str = ""
    user_id: str = ""
    user_header: str = ""
    key_users: KeyUsers | None = None
    allow_user_argument: bool = False
    require_key: bool = False

    def caller(self, headers: Mapping[str, str] | None) -> Caller:
        """The caller of a call (`headers` is None on stdio).

        Raises:
            IdentityError: Over HTTP without a key where one is needed, or a key the
                key-users file does not name.
        """
        if headers is None:
            return Caller(self.api_key, self.tenant if not self.api_key else "", self.user_id)
        key = _bearer(headers)
        if self.key_users is not None:
            user = self.key_users.user_of(key) if key else None
            if user is None:
                raise IdentityError("this key is not bound to a user on this memory server")
            return Caller(key, "", user)
        user = _header(headers, self.user_header) if self.user_header else ""
        if key:
            return Caller(key, "", user or self.user_id)
        if self.require_key:
            raise IdentityError("this memory server needs an API key (Authorization: Bearer)")
        return Caller(self.api_key, self.tenant if not self.api_key else "", user or self.user_id)

    def user_for(self, caller: Caller, argument: str | None) -> str:
        """The user a call acts for: the bound one, or the argument where allowed.

        Raises:
            IdentityError: An argument naming a user where that is not allowed, or no
                user at all.
        """
        if argument is not None and argument != "":
            if not self.allow_user_argument:
                raise IdentityError(
                    "user_id is fixed by the operator of this memory server; leave it out"
                )
            return argument
        if not caller.user_id:
            raise IdentityError(
                "no user is bound to this call: pass user_id"
                if self.allow_user_argument
                else "no user is bound to this call; the operator must set one"
            )
        return caller.user_id
