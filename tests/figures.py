"""Figures the fault suite measures, recorded when asked.

With RECALLD_FAULT_FIGURES=<path>, tests append one JSON object per figure to that
file (benchmarks/README.md, "Reliability", quotes them with the command). Without
it, recording does nothing: the assertions are the tests, the figures a by-product.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


def record(name: str, **values: Any) -> None:
    """Appends a measured figure, if figures are being collected."""
    path = os.environ.get("RECALLD_FAULT_FIGURES")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"figure": name, "at": time.time(), **values}) + "\n")
