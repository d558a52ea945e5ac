"""Refreshes the figures of the bundled models' shipped calibrations, thresholds untouched.

The shipped files (server/recalld_server/calibration/shipped/) carry the
thresholds the bundled models always had; this measures each model on the
labelled sets (`calibration.run.measure`) and records what those thresholds
reach (`calibration.run.figures`), so `recalld calibrate`'s output for a model
can be read beside them.

    python -m benchmarks.calibration.shipped_figures
"""

from __future__ import annotations

import asyncio
import dataclasses
from importlib import resources

from recalld_server.calibration.model import dumps
from recalld_server.calibration.run import figures, measure
from recalld_server.calibration.store import SHIPPED, shipped, slug
from recalld_server.embedding.registry import embedding_models


async def refresh(model_id: str) -> str:
    calibration = shipped(model_id)
    assert calibration is not None, f"no shipped calibration for {model_id}"
    embedder = embedding_models()[model_id].load()
    try:
        measured = await measure(embedder)
    finally:
        await embedder.close()
    updated = dataclasses.replace(calibration, figures=figures(measured, calibration))
    target = resources.files("recalld_server.calibration") / SHIPPED / f"{slug(model_id)}.json"
    with resources.as_file(target) as path:
        path.write_text(dumps(updated), encoding="utf-8")
        return str(path)


def main() -> None:
    for model_id in embedding_models():
        print(asyncio.run(refresh(model_id)))


if __name__ == "__main__":
    main()
