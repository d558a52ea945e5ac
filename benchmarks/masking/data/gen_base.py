"""The generators' state: one seeded RNG and the set of values already drawn."""

from __future__ import annotations

import random
from collections.abc import Callable

from benchmarks.masking.data.value_rules import DIGITS


class GenBase:
    """Draws unique values from a seeded RNG. ``used`` is shared between files."""

    def __init__(self, seed: int, used: set[str]) -> None:
        self.r = random.Random(seed)
        self.used = used
        self.phone_region: dict[str, str] = {}

    # helpers
    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def d(self, n: int) -> str:
        return self.s(DIGITS, n)

    def unique(self, fn: Callable[[], str | None]) -> str:
        for _ in range(1000):
            v = fn()
            if v is not None and v not in self.used:
                self.used.add(v)
                return v
        raise AssertionError("could not draw a unique value")

    @staticmethod
    def group(digits: str, sizes: list[int], sep: str) -> str:
        out: list[str] = []
        i = 0
        for n in sizes:
            out.append(digits[i : i + n])
            i += n
        return sep.join(out)
