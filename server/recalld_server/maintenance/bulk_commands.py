"""`recalld export --with-vectors` and `recalld import --with-vectors FILE` (bulk.py)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pymilvus import MilvusClient, MilvusException

from recalld_server.embedding.registry import embedding_models
from recalld_server.flags import add_store_flags, store_uri
from recalld_server.maintenance.bulk import (
    BulkFileError,
    BulkHeader,
    BulkImportReport,
    BulkModelError,
    export_rows,
    import_rows,
    serving_collection,
    stored_rows,
    target_collection,
)
from recalld_server.progress import Progress
from recalld_server.storage.milvus_collection import StoreModelError
from recalld_server.storage.milvus_features import is_local_uri
from recalld_server.storage.milvus_packing import use_column_packing

MAX_BATCH = 16_384
SERVER_BATCH = 2_000
LITE_BATCH = 250
"""Milvus Lite 2.5.1 copies a call's whole vector and array columns for every row it
inserts, so its cost per row grows with the rows per call: 0.83-0.97 ms of its CPU a
row at 2,000, 0.31-0.34 at 250, 5-6 at 5,000 (benchmarks/README, "Bulk load with
vectors"). A server has no such cost and likes large calls."""


def _store_flags(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    parser.add_argument(
        "--with-vectors",
        action="store_true",
        required=True,
        help="the rows as stored, vectors included, straight from the store",
    )
    add_store_flags(parser, environ)
    parser.add_argument("--no-progress", action="store_true", help="no progress line")


def export_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld export --with-vectors`."""
    parser = argparse.ArgumentParser(
        prog="recalld export --with-vectors",
        description=(
            "Write every memory of the store with its vector (a header line, then one "
            "row per line), for `recalld import --with-vectors`: a copy that loads "
            "without re-embedding. Stop a server on the embedded store first."
        ),
    )
    _store_flags(parser, environ)
    parser.add_argument("--output", "-o", default="-", help="file to write (default '-': stdout)")
    return parser


def import_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld import --with-vectors`."""
    parser = argparse.ArgumentParser(
        prog="recalld import --with-vectors",
        description=(
            "Load a `recalld export --with-vectors` file into a store of the same model "
            "(or an empty one), without re-embedding; rows the store holds are left as "
            "they are, so a run that stopped resumes. Stop the servers using the store."
        ),
    )
    parser.add_argument("file", type=Path, help="the vectors export to load")
    _store_flags(parser, environ)
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"rows written at once (1..{MAX_BATCH}; default {LITE_BATCH} on Milvus Lite, "
        f"{SERVER_BATCH} on a server)",
    )
    parser.add_argument("--writers", type=int, default=4, help="batches written at once (1..16)")
    return parser


def _open(args: argparse.Namespace, command: str, must_exist: bool) -> MilvusClient | None:
    uri = store_uri(args)
    if is_local_uri(uri):
        if must_exist and not Path(uri).exists():
            print(f"recalld {command}: no store at {uri}", file=sys.stderr)
            return None
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
    try:
        client = MilvusClient(uri=uri, token=args.milvus_token)
    except MilvusException as error:
        hint = " (Milvus Lite allows one process per store: stop the server using it)"
        print(
            f"recalld {command}: cannot open {uri}: {error.message}"
            + (hint if is_local_uri(uri) else ""),
            file=sys.stderr,
        )
        return None
    use_column_packing(client._get_connection())
    return client


def main_export(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld export --with-vectors`: returns the exit code."""
    try:
        args = export_parser(environ).parse_args(list(argv))
    except SystemExit as error:
        return int(error.code or 0)
    client = _open(args, "export", must_exist=True)
    if client is None:
        return 2
    uri = store_uri(args)
    to_stdout = args.output == "-"
    partial = Path(f"{args.output}.partial")
    progress = None if args.no_progress else Progress("export", "memories")
    try:
        collection = serving_collection(client, uri, embedding_models())
        if collection is None:
            print(f"recalld export: the store at {uri} holds no memories", file=sys.stderr)
            return 2
        out: TextIO = sys.stdout if to_stdout else partial.open("w", encoding="utf-8", newline="\n")
        try:
            rows = export_rows(client, collection, out.write, on_progress=progress)
        finally:
            if not to_stdout:
                out.close()
        if not to_stdout:
            os.replace(partial, args.output)
    except (OSError, BulkModelError, StoreModelError) as error:
        print(f"recalld export: {error}", file=sys.stderr)
        return 2
    except MilvusException as error:
        print(f"recalld export: Milvus failed ({error.message})", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            progress.finish()
        client.close()
    print(
        f"exported memories: {rows} ({collection.model_id}, dim {collection.dimension})",
        file=sys.stderr,
    )
    return 0


def main_import(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld import --with-vectors FILE`: returns the exit code."""
    try:
        args = import_parser(environ).parse_args(list(argv))
    except SystemExit as error:
        return int(error.code or 0)
    if args.batch_size is None:
        args.batch_size = LITE_BATCH if is_local_uri(store_uri(args)) else SERVER_BATCH
    if not 1 <= args.batch_size <= MAX_BATCH:
        print(f"recalld import: --batch-size must be 1..{MAX_BATCH}", file=sys.stderr)
        return 2
    if not 1 <= args.writers <= 16:
        print("recalld import: --writers must be 1..16", file=sys.stderr)
        return 2
    try:
        handle = args.file.open(encoding="utf-8")
    except OSError as error:
        print(f"recalld import: {error}", file=sys.stderr)
        return 2
    with handle:
        try:
            header = BulkHeader.from_line(handle.readline())
        except (BulkFileError, UnicodeDecodeError) as error:
            print(f"recalld import: {args.file}: {error}", file=sys.stderr)
            return 2
        client = _open(args, "import", must_exist=False)
        if client is None:
            return 2
        return _import(client, args, header, handle)


def _import(
    client: MilvusClient, args: argparse.Namespace, header: BulkHeader, handle: TextIO
) -> int:
    uri = store_uri(args)
    report = BulkImportReport(header)
    progress = None if args.no_progress else Progress("import", "memories")
    started = time.monotonic()
    try:
        collection, report.created_collection = target_collection(
            client, uri, args.milvus_token, header, embedding_models()
        )
        report.collection = collection.name
        import_rows(
            client,
            collection,
            header,
            enumerate(handle, start=2),  # line 1 is the header
            report,
            batch_size=args.batch_size,
            writers=args.writers,
            on_progress=progress,
            # A collection this run created empty holds only what the run writes.
            check_present=not report.created_collection or stored_rows(client, collection.name) > 0,
        )
    except (BulkModelError, StoreModelError) as error:
        print(f"recalld import: {error}", file=sys.stderr)
        return 2
    except (BulkFileError, UnicodeDecodeError) as error:
        print(
            f"recalld import: {args.file}: {error}; {report.inserted} rows were written "
            "before it: fix the file and run again to resume",
            file=sys.stderr,
        )
        return 1
    except MilvusException as error:
        print(
            f"recalld import: Milvus failed ({error.message}) after {report.inserted} rows; "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    finally:
        if progress is not None:
            progress.finish()
        client.close()
    report.seconds = time.monotonic() - started
    print(report.render(), file=sys.stderr)
    return 0
