"""python -m benchmarks.recalld_bench {prepare,run,quality,floor,ghz,report} ..."""

from __future__ import annotations

import argparse

from benchmarks.recalld_bench import compare, quality, scenarios, soak


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recalld_bench")
    sub = parser.add_subparsers(required=True)
    scenarios.add_arguments(sub)
    quality.add_arguments(sub)
    compare.add_arguments(sub)
    soak.add_arguments(sub)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
