"""Import: write parsed records into recalld in batches, with the zero-loss check.

1. `import_plan.plan_batches` (pure) resolves each record's user, splits content
   over 8192 characters into several memories, and cuts batches of at most 100
   memories, starting a new batch whenever a topic_key or a (normalised) content
   repeats inside the current one, so that the server sees every supersede and
   duplicate in file order.
2. Each batch is one Write (`batch_writing.write_batch`) with a deterministic
   `request_id` (a hash of the source digest, the user, the batch index and the
   batch's memories), so a re-run of the same file is idempotent on a server
   that honours request_id. If the server rejects a batch as INVALID_ARGUMENT,
   the memories its BadRequest names are skipped with the server's reason and
   the rest of the batch is sent again. Any other error stops the import.
3. Records whose end_status is ARCHIVED are archived (Forget SOFT) after
   their batch; records whose end_status is SUPERSEDED are archived too unless
   the server superseded them (see `closing.Closer`), so that whatever was not
   current in the source is not recalled.

Zero loss: every parsed record ends up written (every part acknowledged by the
server, whatever the outcome) or skipped with a reason; `ImportReport.ok` is
false, and the command exits non-zero, when parsed != written + skipped.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence

from recalld_client import RecalldClient, RecalldError
from recalld_server.migrate.batch_writing import Written, write_batch
from recalld_server.migrate.closing import Closer
from recalld_server.migrate.import_plan import MAX_BATCH, Plan, plan_batches
from recalld_server.migrate.import_report import ImportReport
from recalld_server.migrate.records import ParseResult, Record, Skipped


async def run_import(
    client: RecalldClient | None,
    parsed: ParseResult,
    *,
    user_id: str = "",
    source_digest: str = "",
    batch_size: int = MAX_BATCH,
    dry_run: bool = False,
    timeout_s: float = 60.0,
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Writes parsed records and returns the report (it never raises for RPC errors).

    Args:
        client: A connected client; may be None for a dry run.
        parsed: The parser's output.
        user_id: Import every record into this user (else each record's user_id).
        source_digest: Hash of the source file, part of every request_id.
        batch_size: Memories per Write, 1..100.
        dry_run: Plan and count only.
        timeout_s: Deadline of each Write.
        on_progress: Called as (memories done, memories planned) after each Write.
    """
    records = parsed.records
    report = ImportReport(
        parsed=parsed.parsed,
        skipped=list(parsed.skipped),
        dry_run=dry_run,
        notes=list(parsed.notes),
    )
    plan = plan_batches(records, user_id=user_id, batch_size=batch_size)
    report.split_records = sum(1 for n in plan.parts_per_record.values() if n > 1)
    for index, reason in plan.skipped.items():
        report.skipped.append(Skipped(records[index].origin, reason))
    if dry_run or client is None:
        report.dry_run = True
        report.written = len(plan.parts_per_record)
        report.memories = plan.memories
        return report

    written: dict[int, list[Written]] = collections.defaultdict(list)
    rejected: dict[int, list[str]] = collections.defaultdict(list)
    closer = Closer(records, plan, report)
    done = 0
    for batch in plan.batches:
        try:
            done += await write_batch(
                client, batch, source_digest, timeout_s, written, rejected, report
            )
            await closer.after_batch(client, batch, written, timeout_s)
        except RecalldError as error:
            report.error = f"batch {batch.index} for user {batch.user_id!r}: {error}"
            break
        if on_progress is not None:
            on_progress(done, plan.memories)
    if not report.error:
        try:
            await closer.finish(client, timeout_s)
        except RecalldError as error:
            report.error = f"archiving after the import: {error}"

    _account_for_records(report, records, plan, written, rejected)
    return report


def _account_for_records(
    report: ImportReport,
    records: Sequence[Record],
    plan: Plan,
    written: dict[int, list[Written]],
    rejected: dict[int, list[str]],
) -> None:
    """Counts each planned record as written, skipped (by the server) or failed."""
    for index, total in plan.parts_per_record.items():
        got = len(written.get(index, ()))
        origin = records[index].origin
        if got == total:
            report.written += 1
        elif got == 0 and rejected.get(index):
            report.skipped.append(Skipped(origin, "; ".join(dict.fromkeys(rejected[index]))))
        elif got:
            report.failed.append(Skipped(origin, f"only {got} of {total} parts written"))
        else:
            report.failed.append(Skipped(origin, "not written (the import stopped)"))
