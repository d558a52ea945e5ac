"""`recalld calibrate`: measure the embedding model on the shipped labelled sets.

Runs `calibration.run.calibrate` against the model, prints the thresholds and
the figures they reach, and writes the calibration file into the data directory
(`<data dir>/calibration/<model>.json`), where the server finds it at start; it
takes precedence over a bundled model's shipped calibration. docs/calibration.md
describes what is measured.

The model is a bundled one (`--embedding-model`) or one behind an
OpenAI-compatible endpoint (`--embedding-base-url` and the remote model's name,
the same flags `recalld serve` takes): the file is written for the model id the
server will serve with (`openai:<model>:<dimension>`).

Exit codes: 0 calibrated (written, or printed with --dry-run); 1 the endpoint
failed during the run; 2 bad flags, an unknown model, or an endpoint that cannot
be reached at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from recalld_server.calibration import shipped, write
from recalld_server.calibration.fusion_search import GRID
from recalld_server.calibration.model import Calibration, dumps
from recalld_server.calibration.run import calibrate
from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.embedding.endpoint_settings import EndpointProbeError
from recalld_server.embedding.registry import (
    DEFAULT_MODEL_ID,
    UnknownModelError,
    embedding_models,
    model_spec,
)
from recalld_server.flags import add_embedding_endpoint_flags, embedding_endpoint
from recalld_server.maintenance.embedders import STARTUP_TIMEOUT_S, OwnedEmbedder, open_model


def calibrate_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Flags of `recalld calibrate`."""
    parser = argparse.ArgumentParser(
        prog="recalld calibrate",
        description=(
            "Measure an embedding model on the labelled sets recalld ships and write its "
            "calibration (near-duplicate threshold, judge floors, recall fusion and gate) "
            "into the data directory, where the server loads it at start."
        ),
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(environ.get("RECALLD_DATA_DIR", "recalld-data")),
        help="where the calibration file is written (env RECALLD_DATA_DIR)",
    )
    parser.add_argument(
        "--embedding-model",
        default=environ.get("RECALLD_EMBEDDING_MODEL", ""),
        help=f"the model to calibrate: {', '.join(embedding_models())} (default "
        f"{DEFAULT_MODEL_ID}); with --embedding-base-url, the remote model's name",
    )
    add_embedding_endpoint_flags(parser, environ)
    parser.add_argument("--dry-run", action="store_true", help="print the calibration only")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    return parser


async def open_embedder(args: argparse.Namespace, environ: Mapping[str, str]) -> OwnedEmbedder:
    """The model the flags name, loaded or probed (the caller closes it).

    Raises:
        UnknownModelError: No such bundled model.
        EndpointProbeError: The endpoint cannot be reached or answers badly.
        SystemExit: The endpoint flags are inconsistent (the message says how).
    """
    endpoint = embedding_endpoint(args, environ, STARTUP_TIMEOUT_S)
    return await open_model(endpoint or model_spec(args.embedding_model or DEFAULT_MODEL_ID))


def render(calibration: Calibration) -> str:
    """The thresholds and figures, one per line."""
    fusion = calibration.fusion
    lines = [
        f"model: {calibration.model_id}",
        "near_duplicate_similarity: "
        + (
            "exact duplicates only (no threshold is safe on the labelled pairs)"
            if calibration.exact_duplicates_only
            else f"{calibration.near_duplicate_similarity:g}"
        ),
        f"judge_duplicate_similarity: {calibration.judge_duplicate_similarity:g}",
        f"judge_contradiction_similarity: {calibration.judge_contradiction_similarity:g}",
        "fusion: " + ", ".join(f"{k}={v:g}" for k, v in dataclasses.asdict(fusion).items()),
        "figures:",
    ]
    lines += [f"  {name}: {value:g}" for name, value in sorted(calibration.figures.items())]
    return "\n".join(lines)


def main_calibrate(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """`recalld calibrate`: returns the exit code."""
    try:
        args = calibrate_parser(environ).parse_args(list(argv))
    except SystemExit as error:  # argparse exits 2 on bad flags, 0 on --help
        return int(error.code or 0)
    return asyncio.run(_run(args, environ))


async def _run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    def step(line: str) -> None:
        if not args.no_progress:
            print(f"calibrate: {line}", file=sys.stderr, flush=True)

    try:
        embedder = await open_embedder(args, environ)
    except (UnknownModelError, EndpointProbeError) as error:
        print(f"recalld calibrate: {error}", file=sys.stderr)
        return 2
    except SystemExit as error:
        print(str(error.code).replace("recalld:", "recalld calibrate:", 1), file=sys.stderr)
        return 2
    try:
        calibration = await calibrate(embedder, GRID, step=step)
    except (BackendUnavailableError, TextRefusedError) as error:
        print(
            f"recalld calibrate: the embedding endpoint failed ({error}); nothing written",
            file=sys.stderr,
        )
        return 1
    finally:
        await embedder.close()
    print(render(calibration))
    if args.dry_run:
        print("dry run: nothing written")
        print(dumps(calibration), end="")
        return 0
    path = write(args.data_dir, calibration)
    print(f"written: {path}")
    if shipped(calibration.model_id) is not None:
        print(
            "note: this file takes precedence over the calibration shipped for this model; "
            "delete it to go back to the shipped one"
        )
    return 0
