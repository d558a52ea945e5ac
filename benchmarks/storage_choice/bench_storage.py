"""Storage-choice benchmark: Milvus Lite 2.5.1 vs 3.2.x, partition key vs partition per tenant.

One script, two roles:

* **driver** (what you run): spawns one *worker* process per variant
  (interpreter x layout), has each worker generate the same seeded data set and
  load it into its own Milvus Lite database under ``--workdir``, then runs the
  timed operations *interleaved* (op 1 on A, B, C; op 2 on A, B, C; ...; the
  variant order rotates every round). Interleaving matters on small machines
  that throttle after ~40 s of full load: every variant sees the same thermal
  state, so the side-by-side ratios are trustworthy even when absolute numbers
  drift. Results go to ``--out`` (JSON) and a Markdown table on stdout.
* **worker** (``--worker``, started by the driver): owns one database and one
  ``MilvusClient``; answers JSON-line commands on its stdin.

Pass several interpreters with ``--python`` to compare Milvus Lite versions in
one run (each venv has its own ``milvus-lite``); the default is the current
interpreter only. ``--checks`` runs the functional checks (partition key
filters, partition-per-tenant CRUD, partition limit, upsert with BM25, delete by
filter in a partition) in each interpreter.

Example::

    python benchmarks/storage_choice/bench_storage.py --rows 100000 --tenants 100 \
        --users-per-tenant 100 --layout partition_per_tenant partition_key \
        --python /tmp/venv-lite25/bin/python /tmp/venv-lite3/bin/python \
        --checks --out results.json

The study is split by meaning into the modules beside this file (this one is the entry
point; the workers run it too, with ``--worker``): ``storage_data`` (the seeded data),
``storage_schema`` (layouts and schema), ``storage_ops`` (the timed operations),
``storage_correctness`` (``--verify`` and ``--filter-order``), ``storage_worker`` (a
worker's load and command loop), ``storage_checks`` (``--checks``), ``storage_procs``
(worker processes and version probes), ``storage_driver`` (a run), ``storage_report``
(summary and tables, ``--report``), ``storage_cli`` (the flags), ``storage_common``
(helpers). They import only each other and third-party packages, so any venv with
pymilvus and milvus-lite can run a worker.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING or __package__:
    from benchmarks.storage_choice.storage_cli import build_parser
    from benchmarks.storage_choice.storage_driver import run
    from benchmarks.storage_choice.storage_report import markdown
    from benchmarks.storage_choice.storage_worker import worker_main
else:  # run as a script: sys.path[0] is this folder
    from storage_cli import build_parser
    from storage_driver import run
    from storage_report import markdown
    from storage_worker import worker_main


def main() -> None:
    ap = build_parser(__doc__.split("\n\n")[0] if __doc__ else None)
    args = ap.parse_args()

    if args.worker:
        worker_main(json.loads(args.worker))
        return
    if args.report:
        with open(args.report) as fh:
            print(markdown(json.load(fh)))
        return
    run(args, os.path.abspath(__file__))


if __name__ == "__main__":
    main()
