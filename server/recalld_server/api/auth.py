"""Credentials: API key -> tenant, role and allowed agent scopes.

The keys file is JSON:

    {"keys": [
      {"key": "s3cret", "tenant": "acme", "role": "writer", "scopes": ["*"],
       "rate_limit": 50},
      {"key_sha256": "<hex sha256 of the key>", "tenant": "acme", "role": "reader",
       "scopes": ["support-bot"]}
    ]}

Roles: "reader" (Recall/Get/List), "writer" (also Write/Update/Forget), "admin".
`rate_limit` (optional): calls per second for the key, with bursts of twice that.
With no keys file (allowed only on a loopback bind) every caller is an admin of
the tenant named by metadata `x-recalld-tenant` (default "default").
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from recalld_server.domain.core.errors import (
    InvalidArgumentError,
    UnauthenticatedError,
)
from recalld_server.domain.core.model import Principal

TENANT_HEADER = "x-recalld-tenant"
DEFAULT_TENANT = "default"
ROLES = ("reader", "writer", "admin")
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclasses.dataclass(frozen=True, slots=True)
class _Entry:
    digest: bytes
    principal: Principal


class Authenticator:
    """Resolves the caller's Principal from request metadata."""

    def __init__(self, entries: Iterable[tuple[bytes, Principal]] | None) -> None:
        self._entries = None if entries is None else [_Entry(d, p) for d, p in entries]

    @property
    def requires_keys(self) -> bool:
        """False when running open (loopback development)."""
        return self._entries is not None

    @classmethod
    def open_access(cls) -> Authenticator:
        """No keys: tenant from metadata. Only for loopback binds."""
        return cls(None)

    @classmethod
    def from_file(cls, path: Path) -> Authenticator:
        """Loads a keys file; raises ValueError describing the first bad entry."""
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = []
        for i, item in enumerate(data.get("keys", [])):
            if "key_sha256" in item:
                digest = bytes.fromhex(item["key_sha256"])
            elif "key" in item:
                digest = hashlib.sha256(item["key"].encode()).digest()
            else:
                raise ValueError(f"keys[{i}]: needs 'key' or 'key_sha256'")
            tenant, role = item.get("tenant", ""), item.get("role", "writer")
            if not _TENANT.match(tenant):
                raise ValueError(f"keys[{i}].tenant: invalid tenant id {tenant!r}")
            if role not in ROLES:
                raise ValueError(f"keys[{i}].role: must be one of {ROLES}")
            scopes = frozenset(item.get("scopes", ["*"]))
            rate_limit = item.get("rate_limit", 0)
            if not isinstance(rate_limit, int | float) or rate_limit < 0:
                raise ValueError(f"keys[{i}].rate_limit: calls per second, a number >= 0")
            principal = Principal(tenant, role, scopes, digest.hex()[:12], float(rate_limit))
            entries.append((digest, principal))
        if not entries:
            raise ValueError("the keys file lists no keys")
        return cls(entries)

    def authenticate(
        self, metadata: Mapping[str, str] | Iterable[tuple[str, str | bytes]]
    ) -> Principal:
        """The caller's Principal; raises UnauthenticatedError or InvalidArgumentError.

        Metadata comes as the call's (key, value) pairs, so a repeated header is
        seen: two credentials, or two tenants, are ambiguous and refused rather
        than resolved by whichever came last.
        """
        values: dict[str, list[str]] = {}
        for name, value in metadata.items() if isinstance(metadata, Mapping) else metadata:
            if isinstance(value, str):
                values.setdefault(name.lower(), []).append(value)
        tenants = values.get(TENANT_HEADER, [])
        if len(set(tenants)) > 1:
            raise UnauthenticatedError(f"ambiguous credentials: {len(tenants)} {TENANT_HEADER}")
        claimed = tenants[0] if tenants else None
        if self._entries is None:
            tenant = claimed if claimed is not None else DEFAULT_TENANT
            if not _TENANT.match(tenant):
                raise InvalidArgumentError.single(
                    TENANT_HEADER, "tenant ids are 1-128 characters of A-Z a-z 0-9 . _ -"
                )
            # Open access is for loopback development: the caller owns its tenant.
            return Principal(tenant_id=tenant, role="admin")
        key = _key_from(values)
        if not key:
            raise UnauthenticatedError(
                "missing API key: send 'authorization: Bearer <key>' or 'x-api-key'"
            )
        digest = hashlib.sha256(key.encode()).digest()
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, digest):
                if claimed is not None and claimed != entry.principal.tenant_id:
                    raise UnauthenticatedError(
                        "ambiguous credentials: x-recalld-tenant names another tenant "
                        "than the API key's"
                    )
                return entry.principal
        raise UnauthenticatedError("unknown API key")


def _key_from(values: Mapping[str, list[str]]) -> str:
    """The one API key the call carries ("" for none); several different ones are refused."""
    keys = {
        auth[7:].strip()
        for auth in values.get("authorization", ())
        if auth[:7].lower() == "bearer "
    }
    keys.update(k.strip() for k in values.get("x-api-key", ()))
    keys.discard("")
    presented = len(values.get("authorization", ())) + len(values.get("x-api-key", ()))
    if len(keys) > 1 or presented > 1:
        raise UnauthenticatedError("ambiguous credentials: more than one API key in the call")
    return keys.pop() if keys else ""
