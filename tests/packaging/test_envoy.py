"""The Envoy configuration (deploy/envoy/envoy.yaml), checked offline (no Envoy binary
on CI machines).

`deploy/tools/envoycheck` decodes it strictly into Envoy's v3 Bootstrap (unknown
fields, wrong types and unresolvable typed configs fail), applies the API's
validation rules to it and to every typed config inside it, and holds it to the
routing recalld needs: every route hashes on `x-recalld-user` into a RING_HASH
cluster speaking HTTP/2, with gRPC health checks and outlier detection. The tests
here also tie it to the contract: the health-checked service and the RPCs retried
after a reset are the ones the protos name. The Helm chart's rendering of it is
checked in test_helm_chart.py.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import descriptor_pb2

from recalld.v1 import memory_service_pb2, session_service_pb2
from tests.packaging.tools import run, tool

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "deploy" / "envoy" / "envoy.yaml"
CHART_COPY = REPO / "deploy" / "helm" / "recalld" / "files" / "envoy.yaml"
SERVICES = (
    memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"],
    session_service_pb2.DESCRIPTOR.services_by_name["SessionService"],
)


def _config() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CONFIG.read_text())
    return data


def _routes(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    [listener] = config["static_resources"]["listeners"]
    [manager] = listener["filter_chains"][0]["filters"]
    [host] = manager["typed_config"]["route_config"]["virtual_hosts"]
    return {r["name"]: r for r in host["routes"]}


def _cluster(config: dict[str, Any]) -> dict[str, Any]:
    [cluster] = config["static_resources"]["clusters"]
    return dict(cluster)


def _envoycheck(text: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "envoy.yaml"
        path.write_text(text)
        return run(tool("envoycheck"), str(path))


def test_envoycheck_accepts_the_configuration() -> None:
    checked = run(tool("envoycheck"), str(CONFIG))
    assert checked.returncode == 0, checked.stderr
    assert "x-recalld-user" in checked.stdout
    assert "recalld" in checked.stdout


def test_the_chart_carries_the_same_configuration() -> None:
    # Helm reads only files inside the chart: the chart keeps a copy.
    assert CHART_COPY.read_text() == CONFIG.read_text(), (
        "copy deploy/envoy/envoy.yaml over deploy/helm/recalld/files/envoy.yaml"
    )


def _edit(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return text.replace(old, new)

    return edit


def _without_hash_policy(text: str) -> str:
    config = yaml.safe_load(text)
    del _routes(config)["calls"]["route"]["hash_policy"]
    return str(yaml.safe_dump(config, sort_keys=False))


def _without_http2(text: str) -> str:
    config = yaml.safe_load(text)
    options = _cluster(config)["typed_extension_protocol_options"]
    http = options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    http["explicit_http_config"] = {"http_protocol_options": {}}
    return str(yaml.safe_dump(config, sort_keys=False))


def _twice_admin(text: str) -> str:
    return text + "admin: {}\n"


BROKEN: dict[str, tuple[Callable[[str], str], str]] = {
    # A typo'd field: Envoy would refuse to start.
    "typo": (_edit("lb_policy: RING_HASH", "lb_polcy: RING_HASH"), "lb_polcy"),
    "round-robin": (_edit("lb_policy: RING_HASH", "lb_policy: ROUND_ROBIN"), "RING_HASH"),
    "no-hash-policy": (_without_hash_policy, "x-recalld-user"),
    "http1": (_without_http2, "HTTP/2"),
    # A validation rule of the API: a health check needs a positive interval.
    "zero-interval": (
        _edit("interval: 5s\n          # Also", "interval: 0s\n          # Also"),
        "interval",
    ),
    # A typed config of an unknown type.
    "unknown-type": (_edit("router.v3.Router", "router.v3.Routr"), "Routr"),
    "admin-everywhere": (
        _edit("address: 127.0.0.1, port_value: 9901", "address: 0.0.0.0, port_value: 9901"),
        "loopback",
    ),
    "duplicate-key": (_twice_admin, "already set"),
    # A validation rule inside a typed config (the connection manager's).
    "empty-stat-prefix": (_edit("stat_prefix: recalld", 'stat_prefix: ""'), "StatPrefix"),
    # Envoy warns about a deprecated field, and refuses it some releases later.
    "deprecated": (
        _edit("type: STRICT_DNS", "type: STRICT_DNS\n      dns_refresh_rate: 5s"),
        "deprecated",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_envoycheck_refuses_a_broken_copy(case: str) -> None:
    break_it, message = BROKEN[case]
    original = CONFIG.read_text()
    broken = break_it(original)
    assert broken != original
    checked = _envoycheck(broken)
    assert checked.returncode != 0, checked.stdout
    assert message.lower() in checked.stderr.lower(), checked.stderr


def test_every_route_hashes_on_the_user_header_into_a_ring() -> None:
    config = _config()
    for name, route in _routes(config).items():
        assert route["match"]["grpc"] == {}, name
        action = route["route"]
        assert action["cluster"] == "recalld", name
        assert action["hash_policy"] == [{"header": {"header_name": "x-recalld-user"}}], name
        # No route timeout: the client's deadline (grpc-timeout) rules, Consolidate's 120 s too.
        assert action["timeout"] == "0s", name
    cluster = _cluster(config)
    assert cluster["lb_policy"] == "RING_HASH"
    assert cluster["type"] == "STRICT_DNS"
    assert cluster["common_lb_config"]["healthy_panic_threshold"] == {"value": 0}


def _rpc_paths() -> dict[str, bool]:
    """Every RPC's HTTP/2 path, and whether the contract lets it be sent again."""
    levels = descriptor_pb2.MethodOptions
    safe = {levels.NO_SIDE_EFFECTS, levels.IDEMPOTENT}
    return {
        f"/{service.full_name}/{method.name}": method.GetOptions().idempotency_level in safe
        for service in SERVICES
        for method in service.methods
    }


def test_only_the_rpcs_the_contract_marks_safe_are_retried_after_a_reset() -> None:
    routes = _routes(_config())
    reads = routes["reads"]
    pattern = re.compile(reads["match"]["safe_regex"]["regex"])
    for path, safe in _rpc_paths().items():
        assert bool(pattern.fullmatch(path)) == safe, path
    assert set(reads["route"]["retry_policy"]["retry_on"].split(",")) == {
        "unavailable",
        "reset",
        "connect-failure",
        "refused-stream",
    }
    # Every other call is sent again only when it never reached a replica.
    other = routes["calls"]["route"]["retry_policy"]
    assert set(other["retry_on"].split(",")) == {"connect-failure", "refused-stream"}
    for route in routes.values():
        policy = route["route"]["retry_policy"]
        assert policy["num_retries"] == 2
        predicates = [p["name"] for p in policy["retry_host_predicate"]]
        assert predicates == ["envoy.retry_host_predicates.previous_hosts"]


def test_replicas_are_checked_with_the_health_service_the_server_registers() -> None:
    cluster = _cluster(_config())
    [health] = cluster["health_checks"]
    # The server sets SERVING for "", MemoryService and SessionService (wiring/server.py).
    assert health["grpc_health_check"]["service_name"] == SERVICES[0].full_name
    outliers = cluster["outlier_detection"]
    assert outliers["enforcing_consecutive_gateway_failure"] == 100
    assert outliers["enforcing_consecutive_local_origin_failure"] == 100
    assert outliers["max_ejection_percent"] <= 50
    endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    assert endpoint["address"]["socket_address"] == {
        "address": "recalld-headless",
        "port_value": 50051,
    }
    http2 = cluster["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
    ]["explicit_http_config"]["http2_protocol_options"]
    # Keepalive pings no more often than the server takes them (every 10 s).
    assert int(http2["connection_keepalive"]["interval"].rstrip("s")) > 10
