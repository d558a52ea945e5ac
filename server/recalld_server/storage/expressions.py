"""String literals in Milvus boolean expressions: the one place they are built.

Every value that reaches a Milvus filter (tenant, user, scopes, tags, topics,
ids, request keys) goes through `quote`. JSON string escaping matches Milvus's
grammar for quotes, backslashes and any printable character, but a control
character (tab, newline, NUL...) or an unpaired surrogate cannot be written in a
literal that Milvus reads back as the same string: a filter holding one would
silently match nothing (a lost request record, a retry treated as new) or fail
as a storage error. Validation keeps such characters out of identifiers; this
refuses them again at the last step, as a client error, so no caller can get an
expression wrong (property-tested against Milvus in tests/integration/storage).
"""

from __future__ import annotations

import json
import unicodedata

from recalld_server.domain.core.errors import InvalidArgumentError

_REFUSED_CATEGORIES = frozenset({"Cc", "Cs"})
"""Control characters and surrogates."""


def literal_problem(value: str) -> str | None:
    """Why this string cannot be written as a Milvus literal, or None if it can."""
    for char in value:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"contains the character U+{ord(char):04X}, which cannot be stored or matched"
    return None


def quote(value: str) -> str:
    """A Milvus expression string literal that matches exactly `value`.

    Raises InvalidArgumentError for a value no literal can match.
    """
    problem = literal_problem(value)
    if problem is not None:
        raise InvalidArgumentError.single("request", problem)
    return json.dumps(value, ensure_ascii=False)
