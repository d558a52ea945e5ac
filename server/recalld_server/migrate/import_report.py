"""What an import did, and the zero-loss check the command's exit code rests on.

Every parsed record must end up written or skipped with a reason; the report
keeps the counts that prove it and the lists that say where it failed.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from recalld_server.migrate.records import Skipped

OUTCOMES = ("CREATED", "DUPLICATE", "SUPERSEDED", "CONFLICT", "DRAFT")


@dataclasses.dataclass(slots=True)
class ImportReport:
    """What an import did, with the zero-loss check.

    Attributes:
        parsed: Records the parser recognised (written + skipped when all is well).
        written: Records whose every part the server acknowledged.
        skipped: Records not written, with the reason (parser, planning or server).
        failed: Records neither written nor skipped (an error stopped the import,
            or only some parts of a split record were written).
        outcomes: Memories written, by WriteOutcome name.
        memories: Memories written (a split record counts once per part).
        split_records: Records split because their content was over the limit.
        archived_in_source: Memories archived after the import because the
            source had them archived.
        archived_not_superseded: Memories archived after the import because the
            source had them closed (superseded) but the server kept them active.
        noteworthy: Memories the server did not simply create: (origin, outcome,
            id, related id), e.g. a DUPLICATE and the memory it was folded into,
            a CONFLICT and the core memory it contradicts.
        error: The error that stopped the import, if any.
        dry_run: Nothing was written.
        notes: The parser's notes.
    """

    parsed: int = 0
    written: int = 0
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    failed: list[Skipped] = dataclasses.field(default_factory=list)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    memories: int = 0
    split_records: int = 0
    archived_in_source: int = 0
    archived_not_superseded: int = 0
    noteworthy: list[tuple[str, str, str, str]] = dataclasses.field(default_factory=list)
    error: str = ""
    dry_run: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when parsed == written + skipped and nothing failed."""
        return (
            not self.error and not self.failed and self.parsed == self.written + len(self.skipped)
        )

    def skip_reasons(self) -> collections.Counter[str]:
        """How many records were skipped per reason."""
        return collections.Counter(s.reason for s in self.skipped)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (for `--report-json`)."""
        return {
            "ok": self.ok,
            "dry_run": self.dry_run,
            "parsed": self.parsed,
            "written": self.written,
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "memories": self.memories,
            "outcomes": {name: self.outcomes.get(name, 0) for name in OUTCOMES},
            "split_records": self.split_records,
            "archived_in_source": self.archived_in_source,
            "archived_not_superseded": self.archived_not_superseded,
            "skip_reasons": dict(self.skip_reasons()),
            "skipped_records": [dataclasses.asdict(s) for s in self.skipped],
            "failed_records": [dataclasses.asdict(s) for s in self.failed],
            "not_created": [
                {"origin": o, "outcome": outcome, "id": i, "related_id": r}
                for o, outcome, i, r in self.noteworthy
            ],
            "error": self.error,
            "notes": self.notes,
        }

    def render(self, max_listed: int = 50) -> str:
        """The human summary the command prints."""
        verb = "would write" if self.dry_run else "written"
        lines = [f"parsed records:  {self.parsed}"]
        split = f" ({self.split_records} split over 8192 chars)" if self.split_records else ""
        lines.append(f"{verb + ' records:':<17}{self.written} as {self.memories} memories{split}")
        if not self.dry_run:
            lines.append(
                "  outcomes: " + ", ".join(f"{n} {self.outcomes.get(n, 0)}" for n in OUTCOMES)
            )
        lines.append(f"skipped records: {len(self.skipped)}")
        for reason, count in sorted(self.skip_reasons().items()):
            lines.append(f"  {count} x {reason}")
        for item in self.skipped[:max_listed]:
            lines.append(f"    {item.origin}: {item.reason}")
        if len(self.skipped) > max_listed:
            lines.append(f"    … and {len(self.skipped) - max_listed} more")
        if self.noteworthy:
            lines.append("written but not created:")
            for origin, outcome, _, related in self.noteworthy[:max_listed]:
                relation = {"SUPERSEDED": "superseding", "CONFLICT": "with core", "DRAFT": ""}.get(
                    outcome, "of"
                )
                lines.append(f"    {origin}: {outcome} {relation} {related}".rstrip())
            if len(self.noteworthy) > max_listed:
                lines.append(f"    … and {len(self.noteworthy) - max_listed} more")
        if self.archived_in_source or self.archived_not_superseded:
            lines.append(
                f"archived after import: {self.archived_in_source} archived in the source, "
                f"{self.archived_not_superseded} closed in the source and not superseded "
                "by the server"
            )
        if self.failed:
            lines.append(f"FAILED records:  {len(self.failed)}")
            for item in self.failed[:max_listed]:
                lines.append(f"    {item.origin}: {item.reason}")
        for note in self.notes:
            lines.append(f"note: {note}")
        if self.error:
            lines.append(f"error: {self.error}")
        balance = f"{self.parsed} parsed = {self.written} written + {len(self.skipped)} skipped"
        if self.ok:
            lines.append(f"check: {balance}: OK")
        else:
            lines.append(
                f"check: FAILED: {self.parsed} parsed != {self.written} written + "
                f"{len(self.skipped)} skipped ({len(self.failed)} unaccounted)"
            )
        return "\n".join(lines)
