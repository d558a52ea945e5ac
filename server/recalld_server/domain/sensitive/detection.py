"""Finds sensitive values in Chinese and English text, offline.

Maintained libraries do the checks where one exists: phone numbers are found by
`phonenumbers` (Google's libphonenumber metadata), and card numbers (Luhn), Chinese
resident ID numbers (ISO 7064 MOD 11-2 and the birth date) and IBANs (mod 97) are
validated by `python-stdnum`. The rest is written here, because no library fits a
server's write path: key and token prefixes follow the vendors' published formats
(the same rules as gitleaks), and passwords and passport numbers are recognised
only where the text says what they are ("password is …", "密码是…", "passport
E12345678"); a bare 9-digit number is not a passport. `docs/security.md` lists
every rule.

Candidates are found by regular expressions and then checked, so that order
numbers, timestamps, versions, hashes and phone-shaped counts are left alone:
digits glued to letters, dots or more digits are never a card, an ID or a phone.
"""

from __future__ import annotations

from typing import Literal

from recalld_server.domain.core.sensitive_data import Category
from recalld_server.domain.sensitive import contact, identifiers, passwords, secrets
from recalld_server.domain.sensitive.password_model import PasswordModel, shipped_password_model
from recalld_server.domain.sensitive.spans import PLACEHOLDER, Detection, blanked

__all__ = ["Detection", "Detector"]

# Overlapping detections keep the first category of this order (a JWT inside
# "password is eyJ…" is a key; a card number is not also a phone number).
_PRIORITY = {
    category: rank
    for rank, category in enumerate(
        (
            Category.PRIVATE_KEY,
            Category.API_KEY,
            Category.PASSWORD,
            Category.NATIONAL_ID,
            Category.IBAN,
            Category.CARD_NUMBER,
            Category.PASSPORT,
            Category.EMAIL,
            Category.PHONE,
        )
    )
}


class Detector:
    """Finds the sensitive values in a text (stateless; safe to share).

    The rules run first; then the password model (by default the one trained on the
    labelled splits, `password_model.py`) scores the words they left alone. `None`
    leaves the rules alone, which is how the benchmarks measure what the model adds.
    """

    def __init__(
        self, password_model: PasswordModel | Literal["shipped"] | None = "shipped"
    ) -> None:
        self._password_model = (
            shipped_password_model() if password_model == "shipped" else password_model
        )

    def find(self, text: str) -> list[Detection]:
        """Every sensitive value in the text, in order, none overlapping."""
        if not text:
            return []
        found = [
            *secrets.private_keys(text),
            *secrets.api_keys(text),
            *passwords.passwords(text),
            *identifiers.national_ids(text),
            *identifiers.cards(text),
            *identifiers.ibans(text),
            *identifiers.passports(text),
            *contact.emails(text),
        ]
        # Phones last, over the text with what was found blanked out: the matcher
        # would otherwise take "…002X    1380013…" for one candidate, reject it, and
        # go on past the phone number in it.
        found.extend(contact.phones(blanked(text, found)))
        if self._password_model is not None:
            found.extend(self._password_model.passwords(text, found))
        if "[" in text:
            masked = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)]
            found = [
                d for d in found if all(d.end <= start or d.start >= end for start, end in masked)
            ]
        return _without_overlaps(found)


def _without_overlaps(found: list[Detection]) -> list[Detection]:
    """One detection per overlapping group: same-category spans join, then priority wins.

    A detection certain of its kind outranks every guess; among the rest the category
    order decides, then the longer span.

    Two rules may find one value by different edges (a bot token's known shape and a
    random-looking word ending in its URL path): masking their union hides both.
    """
    merged: list[Detection] = []
    for detection in sorted(found, key=lambda d: (d.category, d.start)):
        last = merged[-1] if merged else None
        if last is not None and last.category is detection.category and detection.start < last.end:
            end = max(last.end, detection.end)
            certain = last.certain or detection.certain
            merged[-1] = Detection(last.category, last.start, end, certain)
        else:
            merged.append(detection)
    ranked = sorted(
        merged, key=lambda d: (not d.certain, _PRIORITY[d.category], d.start - d.end, d.start)
    )
    kept: list[Detection] = []
    for detection in ranked:
        if all(detection.end <= k.start or detection.start >= k.end for k in kept):
            kept.append(detection)
    return sorted(kept, key=lambda d: d.start)
