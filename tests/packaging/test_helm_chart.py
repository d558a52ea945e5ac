"""The Helm chart, checked offline: `helm lint --strict` (values against
values.schema.json), `helm template`, and every rendered manifest decoded strictly
into the Kubernetes API types (`deploy/tools/kubecheck`: unknown fields and wrong
types fail). With `envoy.enabled`, the rendered Envoy configuration also passes
`deploy/tools/envoycheck` (test_envoy.py checks the file it is rendered from).

scripts/test.sh builds the tools from the Go module proxy into .tools/; elsewhere
these tests are skipped, but never in CI (CI=true), where missing tools fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.packaging.tools import run, tool

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "recalld"
PRODUCTION = REPO / "deploy" / "helm" / "recalld-values-production.yaml"
ENVOY = REPO / "deploy" / "envoy" / "envoy.yaml"


def _render(*flags: str) -> list[dict[str, Any]]:
    """The chart rendered with these flags, after kubecheck accepted every manifest."""
    rendered = run(tool("helm"), "template", "recalld", str(CHART), *flags)
    assert rendered.returncode == 0, rendered.stderr
    checked = run(tool("kubecheck"), stdin=rendered.stdout)
    assert checked.returncode == 0, checked.stderr
    return [d for d in yaml.safe_load_all(rendered.stdout) if d]


def _kinds(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in documents}


def _container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = _kinds(documents)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _named(documents: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}


def _envoy_config(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The rendered Envoy configuration, after envoycheck accepted it."""
    [config_map] = _named(documents, "ConfigMap").values()
    text = config_map["data"]["envoy.yaml"]
    checked = run(tool("envoycheck"), "-", stdin=text)
    assert checked.returncode == 0, checked.stderr
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def _upstream(config: dict[str, Any]) -> dict[str, Any]:
    [cluster] = config["static_resources"]["clusters"]
    endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    return dict(endpoint["address"]["socket_address"])


def test_the_chart_lints_strictly_with_default_and_production_values() -> None:
    for flags in (
        [],
        ["-f", str(PRODUCTION)],
        ["--set", "envoy.enabled=true"],
        ["-f", str(PRODUCTION), "--set", "envoy.enabled=true"],
    ):
        linted = run(tool("helm"), "lint", "--strict", str(CHART), *flags)
        assert linted.returncode == 0, linted.stdout + linted.stderr


def test_default_values_render_probes_a_budget_an_autoscaler_and_a_headless_service() -> None:
    documents = _render()
    kinds = _kinds(documents)
    assert set(kinds) == {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}
    container = _container(documents)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == 50051, probe
    # The start-up probe outlasts the server's own wait for Milvus (120 s).
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] > 120
    assert container["resources"]["requests"]["cpu"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["terminationGracePeriodSeconds"] > 20  # longer than the drain
    assert "replicas" not in kinds["Deployment"]["spec"]  # the autoscaler owns it
    assert kinds["Service"]["spec"]["clusterIP"] == "None"
    hpa = kinds["HorizontalPodAutoscaler"]["spec"]
    assert hpa["scaleTargetRef"]["name"] == kinds["Deployment"]["metadata"]["name"]
    assert hpa["metrics"][0]["resource"]["name"] == "cpu"
    pod_labels = kinds["Deployment"]["spec"]["template"]["metadata"]["labels"]
    for selected in (kinds["PodDisruptionBudget"], kinds["Service"]):
        selector = selected["spec"]["selector"]
        assert selector.get("matchLabels", selector).items() <= pod_labels.items()
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["RECALLD_MILVUS_URI"] == "http://milvus:19530"
    assert "--keys-file=/etc/recalld/keys/keys.json" in container["args"]
    assert "--redis-locks" in container["args"]


def test_production_values_use_tls_secrets_and_tracing() -> None:
    documents = _render("-f", str(PRODUCTION))
    container = _container(documents)
    args = container["args"]
    assert "--tls-cert-file=/etc/recalld/tls/tls.crt" in args
    assert "--allow-plaintext" not in args
    env = {e["name"]: e for e in container["env"]}
    assert env["RECALLD_REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "recalld-redis-url"
    assert env["RECALLD_MILVUS_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "token"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"].startswith("http://otel-collector")
    pod = _kinds(documents)["Deployment"]["spec"]["template"]["spec"]
    assert {v["name"] for v in pod["volumes"]} >= {"keys", "tls"}


def test_a_sentinel_url_reaches_the_server_unchanged() -> None:
    url = "redis+sentinel://redis-node-0:26379,redis-node-1:26379/mymaster/0"
    documents = _render("--set", "redis.url=" + url.replace(",", "\\,"))
    env = {e["name"]: e.get("value") for e in _container(documents)["env"]}
    assert env["RECALLD_REDIS_URL"] == url


def test_fixed_replicas_without_an_autoscaler_or_a_budget() -> None:
    documents = _render(
        "--set",
        "autoscaling.enabled=false",
        "--set",
        "podDisruptionBudget.enabled=false",
        "--set",
        "replicaCount=2",
    )
    kinds = _kinds(documents)
    assert set(kinds) == {"Deployment", "Service"}
    assert kinds["Deployment"]["spec"]["replicas"] == 2


def test_keys_in_clear_text_are_refused_at_render_time() -> None:
    rendered = run(
        tool("helm"), "template", "recalld", str(CHART), "--set", "tls.allowPlaintext=false"
    )
    assert rendered.returncode != 0
    assert "clear text" in rendered.stderr


@pytest.mark.parametrize(
    "flag",
    [
        "server.prot=50051",  # a typo: unknown keys are refused
        "server.reflection=maybe",
        "server.port=70000",
        "milvus.uri=milvus:19530",  # no scheme
        "redis.url=http://redis:6379",
        "autoscaling.targetCPUUtilizationPercentage=0",
        "envoy.enable=true",
        "envoy.image.tag=",
        "envoy.service.type=Ingress",
    ],
)
def test_values_that_break_the_schema_are_refused(flag: str) -> None:
    linted = run(tool("helm"), "lint", "--strict", str(CHART), "--set", flag)
    assert linted.returncode != 0, flag


def test_envoy_hashes_users_onto_the_headless_service() -> None:
    documents = _render("--set", "envoy.enabled=true")
    deployments = _named(documents, "Deployment")
    services = _named(documents, "Service")
    assert set(deployments) == {"recalld", "recalld-envoy"}
    assert set(services) == {"recalld", "recalld-envoy"}
    # The chart's Service is headless: Envoy resolves every ready replica through it.
    assert services["recalld"]["spec"]["clusterIP"] == "None"
    config = _envoy_config(documents)
    assert _upstream(config) == {
        "address": "recalld.default.svc.cluster.local",
        "port_value": 50051,
    }
    # deploy/envoy/envoy.yaml, aimed at the chart's Service and nothing else.
    original = yaml.safe_load(ENVOY.read_text())
    [cluster] = original["static_resources"]["clusters"]
    endpoint = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    endpoint["address"]["socket_address"] = _upstream(config)
    assert config == original

    envoy = deployments["recalld-envoy"]
    pod = envoy["spec"]["template"]
    labels = pod["metadata"]["labels"]
    # The replicas' Service, budget and Deployment never select Envoy's pods, and
    # Envoy's Service selects nothing else.
    for selector in (
        services["recalld"]["spec"]["selector"],
        _kinds(documents)["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
        deployments["recalld"]["spec"]["selector"]["matchLabels"],
    ):
        assert not selector.items() <= labels.items()
    replica_labels = deployments["recalld"]["spec"]["template"]["metadata"]["labels"]
    envoy_selector = services["recalld-envoy"]["spec"]["selector"]
    assert envoy_selector.items() <= labels.items()
    assert not envoy_selector.items() <= replica_labels.items()
    assert envoy["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert services["recalld-envoy"]["spec"]["ports"][0]["targetPort"] == "grpc"

    [container] = pod["spec"]["containers"]
    assert container["image"] == "envoyproxy/envoy:v1.40.0"
    assert "--config-path=/etc/envoy/config/envoy.yaml" in container["args"]
    assert container["ports"][0] == {"name": "grpc", "containerPort": 50051, "protocol": "TCP"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["requests"]["cpu"]
    assert container["readinessProbe"]["tcpSocket"]["port"] == "grpc"
    assert "drain_listeners?graceful" in container["lifecycle"]["preStop"]["exec"]["command"][2]
    assert pod["metadata"]["annotations"]["checksum/config"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == "recalld-envoy"


def test_envoy_gets_a_headless_service_when_the_chart_has_none() -> None:
    documents = _render("--set", "envoy.enabled=true", "--set", "service.headless=false")
    services = _named(documents, "Service")
    assert set(services) == {"recalld", "recalld-headless", "recalld-envoy"}
    assert "clusterIP" not in services["recalld"]["spec"]
    assert services["recalld-headless"]["spec"]["clusterIP"] == "None"
    assert (
        services["recalld-headless"]["spec"]["selector"] == services["recalld"]["spec"]["selector"]
    )
    config = _envoy_config(documents)
    assert _upstream(config)["address"] == "recalld-headless.default.svc.cluster.local"


def test_envoy_with_tls_presents_the_certificate_and_speaks_tls_to_the_replicas() -> None:
    documents = _render(
        "-f", str(PRODUCTION), "--set", "envoy.enabled=true", "--set", "envoy.upstreamCAKey=ca.crt"
    )
    config = _envoy_config(documents)
    [listener] = config["static_resources"]["listeners"]
    downstream = listener["filter_chains"][0]["transport_socket"]["typed_config"]
    assert downstream["@type"].endswith("tls.v3.DownstreamTlsContext")
    assert downstream["common_tls_context"]["alpn_protocols"] == ["h2"]
    [certificate] = downstream["common_tls_context"]["tls_certificates"]
    assert certificate["certificate_chain"]["filename"] == "/etc/envoy/tls/tls.crt"
    [cluster] = config["static_resources"]["clusters"]
    upstream = cluster["transport_socket"]["typed_config"]
    assert upstream["@type"].endswith("tls.v3.UpstreamTlsContext")
    context = upstream["common_tls_context"]
    assert context["validation_context"]["trusted_ca"]["filename"] == "/etc/envoy/tls/ca.crt"
    pod = _named(documents, "Deployment")["recalld-envoy"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "recalld-tls"


def test_kubecheck_refuses_an_unknown_field() -> None:
    manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  portz: []\n"
    checked = run(tool("kubecheck"), stdin=manifest)
    assert checked.returncode != 0
    assert "portz" in checked.stderr


def test_the_milvus_values_ask_for_a_cluster_with_the_lowered_time_tick() -> None:
    values = yaml.safe_load((CHART.parent / "milvus-values.yaml").read_text())
    assert values["cluster"]["enabled"] is True
    assert values["standalone"]["enabled"] is False
    user = yaml.safe_load(values["extraConfigFiles"]["user.yaml"])
    assert user["proxy"]["timeTickInterval"] == 10
