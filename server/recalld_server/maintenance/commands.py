"""`recalld reembed`: flags, progress and exit codes of the model switch.

The target is a bundled model (`--to`) or the model behind an OpenAI-compatible
endpoint (`--embedding-base-url` and `--embedding-model`, the flags `recalld
serve` takes). Back from an endpoint to a bundled model needs no endpoint: the
copy reads contents, not vectors.

Exit codes: 0 switched (or copied with --copy-only, nothing to do, or a dry run);
1 the copy did not verify, or Milvus or the embedding endpoint failed midway (the
old collection still serves; running again resumes); 2 bad flags, an unknown
model, an endpoint that cannot be reached, or a store that cannot be opened (on
Milvus Lite: a server still running on it).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pymilvus import MilvusClient, MilvusException

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.embedding.endpoint_settings import EndpointProbeError
from recalld_server.embedding.registry import (
    UnknownModelError,
    embedding_models,
    model_spec,
)
from recalld_server.flags import (
    add_embedding_endpoint_flags,
    add_store_flags,
    embedding_endpoint,
    store_uri,
)
from recalld_server.maintenance.embedders import STARTUP_TIMEOUT_S, ModelChoice, open_model
from recalld_server.maintenance.reembed import (
    ReembedReport,
    RefusedMemoryError,
    VerificationError,
    reembed,
)
from recalld_server.progress import Progress
from recalld_server.storage.active_collection import (
    ActivePointer,
    describe_memory_collection,
    memory_collections,
)
from recalld_server.storage.milvus_collection import StoreModelError
from recalld_server.storage.milvus_features import is_local_uri


def reembed_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld reembed`."""
    parser = argparse.ArgumentParser(
        prog="recalld reembed",
        description=(
            "Switch the store's embedding model: re-embed every memory into a new "
            "collection, verify the copy, then swap the serving pointer (a Milvus alias "
            "on servers). Stop the servers using the store first."
        ),
    )
    parser.add_argument("--to", dest="model", help="bundled model id to switch to (see --list)")
    parser.add_argument(
        "--embedding-model",
        default=environ.get("RECALLD_EMBEDDING_MODEL", ""),
        help="with --embedding-base-url: the remote model to switch to",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the models and the store's collections"
    )
    add_store_flags(parser, environ)
    parser.add_argument(
        "--batch-size", type=int, default=512, help="memories read, embedded and written at once"
    )
    parser.add_argument(
        "--keep-old",
        action="store_true",
        help="keep the old collection after the switch (it goes stale; default: drop it)",
    )
    parser.add_argument(
        "--copy-only",
        action="store_true",
        help="bring the new collection up to date without switching (on a Milvus server "
        "while servers serve; the switch that follows copies only what changed)",
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would be done")
    parser.add_argument("--no-progress", action="store_true", help="no progress line")
    add_embedding_endpoint_flags(parser, environ)
    return parser


def _print_models(serving: str) -> None:
    print("models:")
    for spec in embedding_models().values():
        mark = "*" if spec.model_id == serving else " "
        print(f" {mark} {spec.model_id:<28} dim {spec.dimension:<4} {spec.summary}")


def _list(client: MilvusClient, uri: str) -> int:
    models = embedding_models()
    active = ActivePointer(client, uri).get()
    serving = describe_memory_collection(client, active, models).model_id if active else ""
    _print_models(serving)
    print("collections:")
    for collection in memory_collections(client, models):
        state = "serving" if collection.name == active else "not serving"
        print(f"   {collection.name} ({collection.model_id}, dim {collection.dimension}, {state})")
    return 0


def main_reembed(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld reembed`: returns the exit code."""
    try:
        args = reembed_parser(environ).parse_args(list(argv))
    except SystemExit as error:  # argparse exits 2 on bad flags, 0 on --help
        return int(error.code or 0)
    try:
        endpoint = embedding_endpoint(args, environ, STARTUP_TIMEOUT_S)
    except SystemExit as error:
        print(str(error.code).replace("recalld:", "recalld reembed:", 1), file=sys.stderr)
        return 2
    if endpoint is not None and args.model:
        print(
            "recalld reembed: give --to (a bundled model) or --embedding-base-url "
            "(an endpoint's model), not both",
            file=sys.stderr,
        )
        return 2
    if not args.list and not args.model and endpoint is None:
        print(
            "recalld reembed: give --to MODEL, or --embedding-base-url and --embedding-model "
            "(or --list)",
            file=sys.stderr,
        )
        return 2
    if args.batch_size < 1 or args.batch_size > 16_384:
        print("recalld reembed: --batch-size must be 1..16384", file=sys.stderr)
        return 2
    uri = store_uri(args)
    if is_local_uri(uri) and not Path(uri).exists():
        if args.list:  # the models are worth listing before any store exists
            _print_models("")
            print(f"collections: none (no store at {uri})")
            return 0
        print(f"recalld reembed: no store at {uri}", file=sys.stderr)
        return 2
    try:
        spec = model_spec(args.model) if args.model else None
    except UnknownModelError as error:
        print(f"recalld reembed: {error}", file=sys.stderr)
        return 2
    try:
        client = MilvusClient(uri=uri, token=args.milvus_token)
    except MilvusException as error:
        hint = (
            " (Milvus Lite allows one process per store: stop the server using it)"
            if is_local_uri(uri)
            else ""
        )
        print(f"recalld reembed: cannot open {uri}: {error.message}{hint}", file=sys.stderr)
        return 2
    try:
        if args.list:
            return _list(client, uri)
        target = spec or endpoint
        assert target is not None
        return asyncio.run(_switch(client, uri, args, target))
    finally:
        client.close()


async def _switch(
    client: MilvusClient,
    uri: str,
    args: argparse.Namespace,
    target: ModelChoice,
) -> int:
    try:
        embedder = await open_model(target)
    except EndpointProbeError as error:
        print(f"recalld reembed: {error}", file=sys.stderr)
        return 2
    progress = None if args.no_progress else Progress("reembed", "memories")
    try:
        report: ReembedReport = await reembed(
            client,
            uri,
            args.milvus_token,
            embedder,
            list(embedding_models()),
            batch_size=args.batch_size,
            keep_source=args.keep_old,
            dry_run=args.dry_run,
            copy_only=args.copy_only,
            on_progress=progress,
        )
    except (StoreModelError, VerificationError, RefusedMemoryError) as error:
        print(f"recalld reembed: {error}", file=sys.stderr)
        return 1
    except BackendUnavailableError as error:
        print(
            f"recalld reembed: the embedding endpoint failed ({error}); the old collection "
            "still serves; run the command again to resume where it stopped",
            file=sys.stderr,
        )
        return 1
    except MilvusException as error:
        print(
            f"recalld reembed: Milvus failed ({error.message}); the old collection still "
            "serves; run the command again to resume where it stopped",
            file=sys.stderr,
        )
        return 1
    finally:
        if progress is not None:
            progress.finish()
        await embedder.close()
    print(report.render())
    return 0
