"""Small helpers shared by the driver and the workers: disk and RSS figures, JSON-safe
values, the installed milvus-lite version, short error texts, the log line.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

MARK = "@@"  # prefix of protocol lines on a worker's stdout


def path_size(path: str) -> dict[str, int]:
    apparent = 0
    allocated = 0
    if os.path.isfile(path):
        st = os.stat(path)
        return {"apparent_bytes": st.st_size, "allocated_bytes": st.st_blocks * 512}
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                apparent += st.st_size
                allocated += st.st_blocks * 512
    return {"apparent_bytes": apparent, "allocated_bytes": allocated}


def rss() -> dict[str, int]:
    """RSS of this process and of its children (Lite 2.5.x runs the engine as a child)."""
    try:
        import psutil
    except ImportError:  # fall back to /proc
        own = tree_rss(os.getpid(), children=False)
        return {"self_bytes": own, "children_bytes": tree_rss(os.getpid()) - own}
    p = psutil.Process()
    children = 0
    for c in p.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            children += c.memory_info().rss
    return {"self_bytes": p.memory_info().rss, "children_bytes": children}


def tree_rss(pid: int, children: bool = True) -> int:
    """RSS in bytes of a process and its descendants (a Milvus server), from /proc."""
    total = 0
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    if not children:
        return total
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):  # children are listed per thread
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as fh:
                for child in fh.read().split():
                    total += tree_rss(int(child))
    return total


def jsonable(v: Any) -> Any:
    """Plain JSON for whatever pymilvus returned (delete results hold protobuf containers)."""
    if isinstance(v, dict) and "delete_count" in v:
        return {"delete_count": v["delete_count"]}
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v) and len(v) > 3:
        return {"ids_returned": len(v)}
    if isinstance(v, dict) and "upsert_count" in v:
        return {"upsert_count": v["upsert_count"]}
    try:
        return json.loads(json.dumps(v, default=str))
    except (TypeError, ValueError):
        return str(v)


def lite_version() -> str:
    from importlib.metadata import version

    return version("milvus-lite")


def short_err(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 400 else s[:400] + "..."


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)
