"""What the Milvus behind a URI offers, detected at start, so the schema fits it.

| feature | Milvus Lite 2.5.1 | server 2.3 | server 2.4 | server 2.5+ |
| --- | --- | --- | --- | --- |
| BM25 function + analyzers (keyword search in storage) | yes | no | no | yes |
| INVERTED scalar index (else Trie on VARCHAR) | yes | no | yes | yes |
| partition key (the tenant) | no | no (see `detect`) | yes | yes |

Without BM25 the memories collection has no sparse field: keyword search runs
in the working set only, and on the storage path it degrades (the recall says
`keyword_search` in degraded_stages) instead of failing.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import logging
import re

from pymilvus import MilvusClient

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class MilvusFeatures:
    """Capabilities that change the schema or the queries recalld uses."""

    version: str
    bm25: bool
    inverted_index: bool
    partition_key: bool

    @property
    def scalar_index(self) -> str:
        """The index type for VARCHAR filter fields (tenant, user)."""
        return "INVERTED" if self.inverted_index else "Trie"


def is_local_uri(uri: str) -> bool:
    """A file path means embedded Milvus Lite; a URL means a Milvus server."""
    return not uri.startswith(("http://", "https://", "tcp://", "grpc://", "unix:"))


def _version(text: str) -> tuple[int, int]:
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def detect(client: MilvusClient, uri: str) -> MilvusFeatures:
    """Asks the server its version (Lite: the installed package's)."""
    if is_local_uri(uri):
        try:
            lite = importlib.metadata.version("milvus-lite")
        except importlib.metadata.PackageNotFoundError:
            lite = "0.0"
        # Lite 2.5 has BM25 and INVERTED but no partitions; Lite 3 adds partition keys.
        return MilvusFeatures(f"lite {lite}", True, True, _version(lite) >= (3, 0))
    version = str(client.get_server_version())
    major_minor = _version(version)
    features = MilvusFeatures(
        version=version,
        bm25=major_minor >= (2, 5),
        inverted_index=major_minor >= (2, 4),
        # 2.3.5 (the PyPI standalone) answered `tenant_id == "t"` with no rows on a
        # partition-key collection once rows had been upserted (probed here), so
        # before 2.4 the tenant is an indexed filter field, as on Milvus Lite.
        partition_key=major_minor >= (2, 4),
    )
    if not features.bm25:
        log.warning(
            "Milvus %s has no BM25: keyword search runs in the working set only "
            "(storage-path recalls report keyword_search as degraded)",
            version,
        )
    return features
