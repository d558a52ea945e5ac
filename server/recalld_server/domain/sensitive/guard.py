"""Applies the sensitive-data policy to what a request would store, before anything else sees it.

Use cases call the guard right after validation, so the embedder (possibly a
third-party service), storage, history, the explain log, spans and logs only
ever see the masked text; a refusal names the field and the category, never the
value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError
from recalld_server.domain.core.sensitive_data import Action, Category, Finding
from recalld_server.domain.sensitive.categories import PLACEHOLDER_LABELS
from recalld_server.domain.sensitive.detection import Detection, Detector
from recalld_server.domain.sensitive.policy import Actions, SensitiveDataPolicy

SENSITIVE_DATA_REASON = "SENSITIVE_DATA"
"""The field violation reason of a refused value."""

# Each pass masks only text outside placeholders, so screening ends by itself; the bound
# is a guard. Two masking passes (three screenings) are the most any of the 11,865
# texts of the labelled splits needs.
_MOST_PASSES = 8

# Categories whose placeholder keeps the last four characters, the way banks and
# phone bills print them, so that a user can still tell two cards apart.
_KEEPS_LAST_FOUR = frozenset({Category.CARD_NUMBER, Category.IBAN, Category.PHONE})


def placeholder(category: Category, value: str) -> str:
    """The typed text that replaces a masked value: `[CARD ••••1111]`, `[API_KEY]`."""
    label = PLACEHOLDER_LABELS[category]
    if category in _KEEPS_LAST_FOUR:
        tail = "".join(c for c in value if c.isalnum())[-4:]
        if len(tail) == 4:
            return f"[{label} ••••{tail}]"
    return f"[{label}]"


class SensitiveDataGuard:
    """Masks, refuses or keeps sensitive values per the tenant's policy."""

    def __init__(self, policy: SensitiveDataPolicy, detector: Detector | None = None) -> None:
        self._policy = policy
        self._detector = detector or Detector()
        self._inactive = policy.allows_everything()

    def begin(self, tenant_id: str) -> Screening:
        """A screening of one request's fields for one tenant."""
        return Screening(self, self._policy.for_tenant(tenant_id))

    def mask_query(self, tenant_id: str, text: str) -> str:
        """A recall query with every value the policy does not allow masked (never refused).

        A query is not stored, but it is embedded (perhaps by a third party) and
        matched against memories that hold placeholders, so it is masked alike.
        """
        if self._inactive or not text:
            return text
        actions = {
            category: Action.MASK if action is Action.REJECT else action
            for category, action in self._policy.for_tenant(tenant_id).items()
        }
        return self.apply(actions, "query", text)[0]

    def apply(self, actions: Actions, field: str, text: str) -> tuple[str, list[Finding]]:
        """The text with every value not allowed replaced, and the findings (none refused).

        The masked text is screened again until nothing more is masked: a placeholder
        changes what is around it (a value after it, a table it now seems to form),
        and what screening the stored text again would find must be found now, so that
        masking is idempotent whatever the rules and the scorer make of placeholders.
        """
        if self._inactive or not text:
            return text, []
        counts: dict[Category, int] = {}
        for _ in range(_MOST_PASSES):
            detections = self._detector.find(text)
            masked = [
                d for d in detections if actions.get(d.category, Action.MASK) is not Action.ALLOW
            ]
            if not masked:
                break
            for detection in masked:
                counts[detection.category] = counts.get(detection.category, 0) + 1
            text = _replace(text, masked)
        else:
            detections = self._detector.find(text)
        for detection in detections:  # allowed, so still in the text: counted once
            if actions.get(detection.category, Action.MASK) is Action.ALLOW:
                counts[detection.category] = counts.get(detection.category, 0) + 1
        findings = [
            Finding(field, category, actions.get(category, Action.MASK), count)
            for category, count in counts.items()
        ]
        return text, findings


class Screening:
    """The fields of one request, screened one by one; `finish` refuses or reports.

    Every field is screened before anything is refused, so that one
    INVALID_ARGUMENT names every field holding a rejected category.
    """

    def __init__(self, guard: SensitiveDataGuard, actions: Actions) -> None:
        self._guard = guard
        self._actions = actions
        self.findings: list[Finding] = []

    def text(self, field: str, text: str) -> str:
        """The text to keep for a field."""
        masked, found = self._guard.apply(self._actions, field, text)
        self.findings.extend(found)
        return masked

    def metadata(self, field: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """Metadata with every string value screened (keys are names, not content)."""
        screened: dict[str, Any] = self._walk(field, dict(metadata))
        return screened

    def since(self, mark: int) -> tuple[Finding, ...]:
        """The findings recorded after `mark` (a length of `findings` taken earlier)."""
        return tuple(self.findings[mark:])

    def finish(self) -> tuple[Finding, ...]:
        """Every finding, once nothing is refused.

        Raises:
            InvalidArgumentError: a field holds a category the policy rejects.
        """
        violations = [
            FieldViolation(
                finding.field,
                f"contains a {finding.category.value.replace('_', ' ')}, which this server "
                f"does not accept (sensitive-data policy: {finding.category.value}=reject)",
                SENSITIVE_DATA_REASON,
            )
            for finding in self.findings
            if finding.action is Action.REJECT
        ]
        if violations:
            raise InvalidArgumentError(violations)
        return tuple(self.findings)

    def _walk(self, field: str, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(field, value)
        if isinstance(value, Mapping):
            return {key: self._walk(f"{field}.{key}", item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._walk(f"{field}[{i}]", item) for i, item in enumerate(value)]
        return value


def _replace(text: str, detections: Sequence[Detection]) -> str:
    pieces: list[str] = []
    position = 0
    for detection in detections:  # in order and not overlapping (Detector.find)
        pieces.append(text[position : detection.start])
        pieces.append(placeholder(detection.category, text[detection.start : detection.end]))
        position = detection.end
    pieces.append(text[position:])
    return "".join(pieces)
