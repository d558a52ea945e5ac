"""Opaque page tokens: the last id of a page, bound to the listing that issued it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json

from recalld_server.domain.core.errors import InvalidArgumentError
from recalld_server.domain.core.ids import looks_like_id
from recalld_server.domain.core.model import MemoryType, Status

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_TOKEN_CHARS = 512
"""Tokens recalld issues are ~100 characters; anything much longer is forged."""


def listing(user_id: str, statuses: frozenset[Status], types: frozenset[MemoryType]) -> str:
    """Identifies a listing, so a token cannot be replayed against another one."""
    raw = json.dumps([user_id, sorted(statuses), sorted(types)])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def encode_page_token(last_id: str, listing_id: str) -> str:
    """The token for the page after `last_id`."""
    raw = json.dumps({"after": last_id, "f": listing_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str, listing_id: str) -> str:
    """The id a token continues after ("" for the first page); INVALID_ARGUMENT if foreign."""
    if not token:
        return ""
    if len(token) > MAX_PAGE_TOKEN_CHARS:
        raise InvalidArgumentError.single("page_token", "is not a valid page token")
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        after, token_listing = str(data["after"]), str(data["f"])
    except (ValueError, KeyError, TypeError, binascii.Error, RecursionError) as error:
        # RecursionError: a forged token of deeply nested JSON.
        raise InvalidArgumentError.single("page_token", "is not a valid page token") from error
    if not looks_like_id(after):  # a forged id never reaches a storage expression
        raise InvalidArgumentError.single("page_token", "is not a valid page token")
    if token_listing != listing_id:
        raise InvalidArgumentError.single("page_token", "was issued for a different user or filter")
    return after
