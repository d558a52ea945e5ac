"""One Write per batch, sending again without the memories the server refuses.

A memory the server rejects as invalid is the data's fault, not the import's:
it is skipped with the server's reason and the rest of its batch still goes
through. Any other error stops the import (the caller's business).
"""

from __future__ import annotations

import dataclasses
import re

import grpc

from recalld.v1 import memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.migrate.import_plan import Batch, request_id_for
from recalld_server.migrate.import_report import ImportReport

_MEMORY_FIELD = re.compile(r"^memories\[(\d+)\]")


@dataclasses.dataclass(slots=True)
class Written:
    """One part the server acknowledged, with the outcome it gave."""

    record_index: int
    id: str
    outcome: str
    related_id: str


async def write_batch(
    client: RecalldClient,
    batch: Batch,
    source_digest: str,
    timeout_s: float,
    written: dict[int, list[Written]],
    rejected: dict[int, list[str]],
    report: ImportReport,
) -> int:
    """Writes one batch, dropping memories the server names as invalid; returns parts sent."""
    parts = list(batch.parts)
    handled = 0
    while parts:
        memories = [p.memory for p in parts]
        try:
            response = await client.write(
                batch.user_id,
                memories,
                request_id=request_id_for(source_digest, batch, memories),
                timeout=timeout_s,
            )
        except RecalldError as error:
            bad = _rejected_indices(error, len(parts))
            if bad is None:
                raise
            for position, reasons in bad.items():
                rejected[parts[position].record_index].extend(reasons)
            handled += len(bad)
            parts = [p for i, p in enumerate(parts) if i not in bad]
            continue
        for part, result in zip(parts, response.results, strict=True):
            outcome = memory_service_pb2.WriteOutcome.Name(result.outcome).removeprefix(
                "WRITE_OUTCOME_"
            )
            report.outcomes[outcome] += 1
            report.memories += 1
            if outcome != "CREATED":
                report.noteworthy.append((part.origin, outcome, result.id, result.related_id))
            written[part.record_index].append(
                Written(part.record_index, result.id, outcome, result.related_id)
            )
        handled += len(parts)
        break
    return handled


def _rejected_indices(error: RecalldError, count: int) -> dict[int, list[str]] | None:
    """Batch positions an INVALID_ARGUMENT names, with reasons; None if it names none."""
    if error.code != grpc.StatusCode.INVALID_ARGUMENT or not error.field_violations:
        return None
    bad: dict[int, list[str]] = {}
    for violation in error.field_violations:
        match = _MEMORY_FIELD.match(violation.field)
        if match is None or int(match.group(1)) >= count:
            return None  # a request-level problem (user_id, request_id): not the data's fault
        field = violation.field[match.end() :].lstrip(".") or "memory"
        bad.setdefault(int(match.group(1)), []).append(
            f"rejected by server: {field} {violation.description}"
        )
    return bad
