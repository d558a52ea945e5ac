"""The working set's state as OpenTelemetry instruments, read when a reader collects.

Behind several replicas an operator needs to see whether users stay on one
replica: the hit rate (`hits` / `opens`), how many users and bytes each replica
holds, and how often it reads a user from storage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from recalld_server.domain.working_set.cache import WorkingSet


def _reading(value: Callable[[], int]) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def observe(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value())]

    return observe


def observe_working_set(meter: Meter, working_set: WorkingSet) -> None:
    """Registers the working set's counters and gauges on `meter`."""
    counters = {
        "opens": ("Calls that asked for a user's memory set", lambda: working_set.opens),
        "hits": ("Of those, answered from the working set", lambda: working_set.hits),
        "loads": ("User sets read from storage", lambda: working_set.loads),
        "evictions": ("User sets evicted for the budget", lambda: working_set.evictions),
    }
    for name, (description, value) in counters.items():
        meter.create_observable_counter(
            f"recalld.working_set.{name}", [_reading(value)], unit="1", description=description
        )
    meter.create_observable_gauge(
        "recalld.working_set.users",
        [_reading(lambda: working_set.users)],
        unit="1",
        description="Users whose memory set is held",
    )
    meter.create_observable_gauge(
        "recalld.working_set.bytes",
        [_reading(lambda: working_set.bytes)],
        unit="By",
        description="Estimated bytes of the held memory sets",
    )
