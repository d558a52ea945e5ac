"""The deployment files, checked offline (no Docker engine on CI machines).

The compose file is loaded by compose-go, the library behind `docker compose
config` (`deploy/tools/composecheck`: the Compose Specification's schema,
interpolation, references between services and volumes), and held to what
production needs: health checks and restart policies, start order on health,
durable volumes, the lowered Milvus time tick, Redis AOF. The image recipe is
checked for a pinned non-root base built from the wheel. The Helm chart has its
own tests (test_helm_chart.py).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.packaging.tools import run, tool

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return data


def test_compose_services_have_health_checks_restart_policies_and_volumes() -> None:
    compose = _compose()
    services = compose["services"]
    for name, service in services.items():
        assert service.get("restart") == "unless-stopped", name
        if name != "otel-collector":
            assert service["healthcheck"]["test"][0] == "CMD", name
    for name in ("etcd", "minio", "milvus", "redis"):
        for volume in services[name]["volumes"]:
            source = volume.split(":")[0]
            assert source.startswith("./") or source in compose["volumes"], (name, volume)
    recalld = services["recalld"]
    assert recalld["depends_on"]["milvus"]["condition"] == "service_healthy"
    assert recalld["depends_on"]["redis"]["condition"] == "service_healthy"
    assert recalld["healthcheck"]["test"][1:3] == ["recalld", "health"]
    assert recalld["environment"]["RECALLD_REDIS_LOCKS"] == "1"


def test_compose_go_loads_the_file_and_resolves_every_reference() -> None:
    loaded = run(tool("composecheck"), str(DEPLOY / "compose.yaml"))
    assert loaded.returncode == 0, loaded.stderr
    project = json.loads(loaded.stdout)
    services = project["services"]
    assert set(services) >= {"etcd", "minio", "milvus", "redis", "recalld"}
    for name in ("etcd", "minio", "milvus", "redis"):
        for volume in services[name]["volumes"]:
            assert volume["type"] in ("volume", "bind"), (name, volume)
    assert services["recalld"]["depends_on"]["milvus"]["condition"] == "service_healthy"
    assert services["recalld"]["healthcheck"]["test"][1:3] == ["recalld", "health"]


def test_compose_go_refuses_what_docker_compose_would() -> None:
    broken = (
        "services:\n  a:\n    image: x\n    depends_on:\n      b: {condition: service_healthy}\n"
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "compose.yaml"
        path.write_text(broken)
        refused = run(tool("composecheck"), str(path))
    assert refused.returncode != 0
    assert "undefined service" in refused.stderr


def test_milvus_gets_the_lowered_time_tick_and_redis_an_append_only_file() -> None:
    services = _compose()["services"]
    mounts = dict(v.split(":")[:2] for v in services["milvus"]["volumes"])
    assert mounts["./milvus-user.yaml"] == "/milvus/configs/user.yaml"
    overrides = yaml.safe_load((DEPLOY / "milvus-user.yaml").read_text())
    assert overrides["proxy"]["timeTickInterval"] == 10
    command = services["redis"]["command"]
    assert command[command.index("--appendonly") + 1] == "yes"


def test_the_image_is_pinned_non_root_built_from_the_wheel_and_health_checked() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    bases = re.findall(r"^FROM (\S+)", dockerfile, re.MULTILINE)
    assert bases and all(re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", b) for b in bases), bases
    assert "pip wheel" in dockerfile and "/wheels/*.whl" in dockerfile
    assert re.search(r"^USER 10001$", dockerfile, re.MULTILINE)
    assert re.search(r"^HEALTHCHECK .*\n.*recalld\", \"health\"", dockerfile, re.MULTILINE)
