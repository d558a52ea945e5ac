"""`recalld import` and `recalld export`: flags, file handling, progress, exit codes.

Nothing here runs at import time; `main_import(argv, environ)` and
`main_export(argv, environ)` read their flags and environment when called and
return the process exit code:

* import: 0 when every parsed record was written or skipped with a reason;
  1 when the zero-loss check fails or the server stopped the import; 2 when
  the source cannot be read or the flags are wrong.
* export: 0 on success; 1 when a call failed (the partial output is left in
  `<output>.partial`); 2 for bad flags.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient
from recalld_server.domain.core.model import MemoryType, Tier
from recalld_server.migrate import jsonl, memory_md, sqlite_layouts
from recalld_server.migrate.exporting import ALL_STATUSES, ExportReport, export_memories
from recalld_server.migrate.import_plan import MAX_BATCH
from recalld_server.migrate.import_report import ImportReport
from recalld_server.migrate.importing import run_import
from recalld_server.migrate.records import (
    MAX_SCOPE_CHARS,
    ParseResult,
    clean_identifier,
    clean_tags,
)
from recalld_server.progress import Progress

FORMATS = ("auto", "memory-md", "sqlite", "jsonl")
DEFAULT_ADDRESS = "127.0.0.1:50051"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _connection_flags(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    group = parser.add_argument_group("server")
    group.add_argument(
        "--address",
        # RECALLD_ADDR as in the three clients; RECALLD_ADDRESS, this command's first
        # spelling, still works.
        default=environ.get("RECALLD_ADDR") or environ.get("RECALLD_ADDRESS") or DEFAULT_ADDRESS,
        help=f"host:port of the recalld server (default {DEFAULT_ADDRESS}; env RECALLD_ADDR)",
    )
    group.add_argument(
        "--api-key",
        default=environ.get("RECALLD_API_KEY", ""),
        help="API key (decides the tenant; env RECALLD_API_KEY keeps it off the command line)",
    )
    group.add_argument(
        "--tenant",
        default=environ.get("RECALLD_TENANT", ""),
        help="tenant for servers without keys (loopback development); env RECALLD_TENANT",
    )
    group.add_argument(
        "--tls",
        action="store_true",
        help="connect with TLS (the default for every host but loopback)",
    )
    group.add_argument("--ca-file", type=Path, help="PEM root certificates for --tls")
    group.add_argument(
        "--timeout", type=float, default=60.0, help="deadline of each call in seconds (60)"
    )
    group.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _client(args: argparse.Namespace) -> RecalldClient:
    roots = args.ca_file.read_bytes() if args.ca_file else None
    try:
        return RecalldClient(
            args.address,
            api_key=args.api_key,
            tenant=args.tenant,
            # Unless asked: TLS for every host but loopback, so a key never goes out in clear.
            tls=True if args.tls or args.ca_file else None,
            root_certificates=roots,
        )
    except ValueError as error:
        raise SystemExit(f"recalld: {error}") from error


# -- import --------------------------------------------------------------------


def import_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld import`."""
    parser = argparse.ArgumentParser(
        prog="recalld import",
        description=(
            "Import memories from a MEMORY.md file, a SQLite memory database "
            "(agent_memories or memories layout) or a recalld JSONL export. "
            "Every parsed record is written or skipped with a reason; the command "
            "exits 1 if the counts do not add up. See docs/migration.md."
        ),
    )
    parser.add_argument("path", help="source file ('-' reads MEMORY.md or JSONL from stdin)")
    parser.add_argument(
        "--format", choices=FORMATS, default="auto", help="source format (default: detect)"
    )
    parser.add_argument(
        "--user",
        default="",
        help="user_id to import into (required except for JSONL, whose records name theirs)",
    )
    _connection_flags(parser, environ)
    shaping = parser.add_argument_group("MEMORY.md and SQLite")
    shaping.add_argument(
        "--default-tier",
        choices=("P0", "P1", "P2"),
        default="P1",
        help="tier when the source names none (P1)",
    )
    shaping.add_argument(
        "--default-type",
        choices=[t.name.lower() for t in MemoryType],
        default="fact",
        help="MEMORY.md: type when no heading or marker suggests one (fact)",
    )
    shaping.add_argument("--agent-scope", default="", help="agent_scope of every memory")
    shaping.add_argument(
        "--tag", action="append", default=[], help="tag added to every memory (repeatable)"
    )
    sqlite = parser.add_argument_group("SQLite")
    sqlite.add_argument(
        "--layout",
        choices=("auto", *sqlite_layouts.LAYOUTS),
        default="auto",
        help="which table to read (default: every known one present)",
    )
    sqlite.add_argument(
        "--agent-id",
        action="append",
        default=[],
        help="only rows of this agent_id / owner (repeatable; default: all rows)",
    )
    sqlite.add_argument(
        "--scope-from-agent-id",
        action="store_true",
        help="use agent_id / owner as the memory's agent_scope (default: shared)",
    )
    sqlite.add_argument(
        "--session-summaries",
        action="store_true",
        help="memories layout: also import sessions.summary as SUMMARY memories",
    )
    parser.add_argument_group("JSONL").add_argument(
        "--reset-expiry",
        action="store_true",
        help="drop exported expire_at values so the tier default applies from now",
    )
    run = parser.add_argument_group("run")
    run.add_argument(
        "--batch-size", type=int, default=MAX_BATCH, help=f"memories per Write (1..{MAX_BATCH})"
    )
    run.add_argument("--dry-run", action="store_true", help="parse and count; write nothing")
    run.add_argument("--report-json", type=Path, help="also write the report as JSON here")
    return parser


def detect_format(path: str, head: bytes) -> str:
    """memory-md, sqlite or jsonl, from the file's first bytes and its name."""
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".md", ".markdown", ".txt"):
        return "memory-md"
    if suffix in (".db", ".sqlite", ".sqlite3"):
        return "sqlite"
    first = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return "jsonl" if first.startswith("{") else "memory-md"


def parse_source(args: argparse.Namespace, data: bytes, name: str) -> ParseResult:
    """Runs the parser the flags ask for over the source bytes."""
    tier = Tier[args.default_tier]
    scope = clean_identifier(args.agent_scope, MAX_SCOPE_CHARS)
    tags = clean_tags(args.tag)
    if args.format == "sqlite":
        return sqlite_layouts.parse_sqlite(
            Path(args.path),
            layout=args.layout,
            default_tier=tier,
            agent_ids=args.agent_id,
            scope_from_agent=args.scope_from_agent_id,
            session_summaries=args.session_summaries,
        )
    text = data.decode("utf-8-sig")
    if args.format == "jsonl":
        return jsonl.parse_jsonl(
            text.splitlines(), source_name=name, keep_expiry=not args.reset_expiry
        )
    return memory_md.parse_memory_md(
        text,
        source_name=name,
        default_tier=tier,
        default_type=MemoryType[args.default_type.upper()],
        agent_scope=scope,
        tags=tags,
    )


def _apply_common(result: ParseResult, args: argparse.Namespace, fmt: str) -> ParseResult:
    """SQLite records get --agent-scope and --tag too (MEMORY.md has them already)."""
    if fmt != "sqlite" or not (args.agent_scope or args.tag):
        return result
    scope = clean_identifier(args.agent_scope, MAX_SCOPE_CHARS)
    result.records = [
        dataclasses.replace(
            r,
            agent_scope=r.agent_scope or scope,
            tags=clean_tags([*r.tags, *args.tag]),
        )
        for r in result.records
    ]
    return result


def main_import(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld import`: returns the exit code."""
    args = import_parser(environ).parse_args(list(argv))
    if not 1 <= args.batch_size <= MAX_BATCH:
        print(f"recalld import: --batch-size must be 1..{MAX_BATCH}", file=sys.stderr)
        return 2
    try:
        if args.path == "-":
            if args.format not in ("memory-md", "jsonl"):
                print("recalld import: stdin needs --format memory-md or jsonl", file=sys.stderr)
                return 2
            data, name = sys.stdin.buffer.read(), "stdin"
        else:
            data, name = Path(args.path).read_bytes(), Path(args.path).name
        if args.format == "auto":
            args.format = detect_format(args.path, data[:64])
        if args.format != "jsonl" and not args.user:
            print(f"recalld import: --user is required for {args.format}", file=sys.stderr)
            return 2
        parsed = _apply_common(parse_source(args, data, name), args, args.format)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"recalld import: {error}", file=sys.stderr)
        return 2
    digest = hashlib.sha256(data).hexdigest()
    report = asyncio.run(_import(args, parsed, digest))
    target = f"user {args.user}" if args.user else "the users named in the file"
    print(f"recalld import: {name} ({args.format}) into {target}")
    print(report.render())
    if args.report_json:
        args.report_json.write_text(
            json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    return 0 if report.ok else 1


async def _import(args: argparse.Namespace, parsed: ParseResult, digest: str) -> ImportReport:
    progress = None if args.no_progress else Progress("import", "memories")
    if args.dry_run:
        return await run_import(None, parsed, user_id=args.user, source_digest=digest, dry_run=True)
    async with _client(args) as client:
        report = await run_import(
            client,
            parsed,
            user_id=args.user,
            source_digest=digest,
            batch_size=args.batch_size,
            timeout_s=args.timeout,
            on_progress=progress,
        )
    if progress is not None:
        progress.finish()
    return report


# -- export --------------------------------------------------------------------


def export_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld export`."""
    parser = argparse.ArgumentParser(
        prog="recalld export",
        description=(
            "Export users' memories (every status, oldest first) as JSONL, one "
            "recalld Memory per line in proto JSON form; `recalld import` reads it back."
        ),
    )
    parser.add_argument(
        "--user", action="append", default=[], help="user_id to export (repeatable)"
    )
    parser.add_argument("--users-file", type=Path, help="file with one user_id per line")
    parser.add_argument(
        "--output", "-o", default="-", help="JSONL file to write (default '-': stdout)"
    )
    parser.add_argument(
        "--status",
        action="append",
        default=[],
        choices=["active", "superseded", "archived", "draft", "conflict"],
        help="only these statuses (repeatable; default: all)",
    )
    parser.add_argument("--page-size", type=int, default=500, help="List page size (1..500)")
    _connection_flags(parser, environ)
    return parser


def main_export(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld export`: returns the exit code."""
    args = export_parser(environ).parse_args(list(argv))
    users = [u.strip() for u in args.user if u.strip()]
    if args.users_file:
        try:
            lines = args.users_file.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            print(f"recalld export: {error}", file=sys.stderr)
            return 2
        users += [u.strip() for u in lines if u.strip() and not u.startswith("#")]
    if not users:
        print("recalld export: name at least one --user or a --users-file", file=sys.stderr)
        return 2
    if not 1 <= args.page_size <= 500:
        print("recalld export: --page-size must be 1..500", file=sys.stderr)
        return 2
    to_stdout = args.output == "-"
    partial = Path(f"{args.output}.partial")
    try:
        out = sys.stdout if to_stdout else partial.open("w", encoding="utf-8", newline="\n")
    except OSError as error:
        print(f"recalld export: {error}", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(_export(args, users, out))
    finally:
        if to_stdout:
            out.flush()
        else:
            out.close()
    if not to_stdout and not report.error:
        os.replace(partial, args.output)
    print(report.render(), file=sys.stderr)
    if report.error and not to_stdout:
        print(f"recalld export: partial output left in {partial}", file=sys.stderr)
    return 1 if report.error else 0


async def _export(args: argparse.Namespace, users: list[str], out: TextIO) -> ExportReport:
    statuses = (
        [memory_pb2.MemoryStatus.Value(f"MEMORY_STATUS_{s.upper()}") for s in args.status]
        if args.status
        else list(ALL_STATUSES)
    )
    progress = None if args.no_progress else Progress("export", "users")
    async with _client(args) as client:
        return await export_memories(
            client,
            users,
            out.write,
            statuses=statuses,
            page_size=args.page_size,
            timeout_s=args.timeout,
            on_progress=progress,
        )
