"""The Helm chart, checked offline: `helm lint --strict` (values against
values.schema.json), `helm template`, and every rendered manifest decoded strictly
into the Kubernetes API types (`deploy/tools/kubecheck`: unknown fields and wrong
types fail).

scripts/test.sh builds both tools from the Go module proxy into .tools/; elsewhere
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


def test_the_chart_lints_strictly_with_default_and_production_values() -> None:
    for flags in ([], ["-f", str(PRODUCTION)]):
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
    ],
)
def test_values_that_break_the_schema_are_refused(flag: str) -> None:
    linted = run(tool("helm"), "lint", "--strict", str(CHART), "--set", flag)
    assert linted.returncode != 0, flag


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
    assert user["proxy"]["timeTickInterval"] == 20
