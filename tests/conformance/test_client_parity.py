"""The three clients are siblings: every RPC of the contract, and the same conveniences,
in each language's spelling.

The RPC list comes from the generated descriptors, so an RPC added to the contract
fails this test until every client exposes it. Python is inspected; Node and Go are
read from their sources (this runs before their builds in scripts/test.sh).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from recalld.v1 import memory_service_pb2, session_service_pb2
from recalld_client import RecalldClient

ROOT = Path(__file__).resolve().parents[2]

CONVENIENCES = ("Health", "ListAll", "ListAllSessions", "Close")
"""Beyond the RPCs: the health check, listing every page, closing the channel."""


def _rpcs() -> list[str]:
    names: list[str] = []
    for module in (memory_service_pb2, session_service_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            names.extend(method.name for method in service.methods)
    return names


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _python_methods() -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(RecalldClient)
        if not name.startswith("_") and callable(member)
    }


def _node_methods() -> set[str]:
    source = (ROOT / "clients/node/src/client.ts").read_text(encoding="utf-8")
    body = source[source.index("export class RecalldClient") :]
    # Members sit at two spaces of indentation: `name(`, `async name(`, `async *name(`.
    return set(re.findall(r"^  (?:async\s+)?\*?\s*([a-z]\w*)\s*[(<]", body, re.MULTILINE))


def _go_methods() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "clients/go").glob("*.go"):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r"^func \(c \*Client\) ([A-Z]\w*)\(", text, re.MULTILINE))
    return found


EXPECTED = [*_rpcs(), *CONVENIENCES]


@pytest.mark.parametrize(
    ("language", "methods", "spell"),
    [
        ("python", _python_methods, _snake),
        ("node", _node_methods, _camel),
        ("go", _go_methods, str),
    ],
)
def test_every_client_exposes_every_rpc_and_convenience(
    language: str, methods: Callable[[], set[str]], spell: Callable[[str], str]
) -> None:
    exposed = methods()
    missing = [spell(name) for name in EXPECTED if spell(name) not in exposed]
    assert not missing, f"the {language} client lacks {missing}"


def test_the_contract_has_the_rpcs_this_test_expects() -> None:
    # A guard on the guard: the descriptors are read, not an empty list.
    assert {"Write", "Recall", "Consolidate", "AppendMessages", "GetContext"} <= set(_rpcs())
