"""The built wheel, not the editable checkout: every module ships and every command starts.

An editable install hides packaging mistakes (a package left out of
`pyproject.toml` still imports from the source tree). This builds the wheel,
installs it alone into a fresh directory, and runs the console script from there
with the source tree out of reach: the dependencies come from this environment's
site-packages as plain path entries, so no editable finder can stand in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(root / "dist"), str(ROOT)],
        check=True, timeout=300, cwd=root,
    )  # fmt: skip
    [wheel] = (root / "dist").glob("recalld-*.whl")
    target = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
         "--target", str(target), str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    dependencies = sysconfig.get_paths()["purelib"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), dependencies]),
        "PYTHONNOUSERSITE": "1",
    }
    return target, env


def _run(installed: tuple[Path, dict[str, str]], *args: str, cwd: Path) -> str:
    target, env = installed
    # -S: no site processing, so the checkout's editable-install hook never loads.
    done = subprocess.run(
        [sys.executable, "-S", str(target / "bin" / "recalld"), *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_command_starts_from_the_installed_wheel(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    target, env = installed
    located = subprocess.run(
        [sys.executable, "-S", "-c", "import recalld_server, recalld_client, recalld.v1; "
         "print(recalld_server.__file__)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=True,
    )  # fmt: skip
    assert located.stdout.strip().startswith(str(target)), located.stdout
    assert "recalld serve" in _run(installed, "serve", "--help", cwd=tmp_path)
    assert "usage" in _run(installed, "import", "--help", cwd=tmp_path).lower()
    listed = _run(installed, "reembed", "--list", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert "usem3-multilingual-v3-512" in listed
    assert "--embedding-model" in _run(installed, "calibrate", "--help", cwd=tmp_path)
    assert "--key-users" in _run(installed, "mcp", "--help", cwd=tmp_path)
    mcp = subprocess.run(
        [sys.executable, "-S", str(target / "bin" / "recalld-mcp"), "--help"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert mcp.returncode == 0 and "--allow-user-argument" in mcp.stdout, mcp.stderr


def test_the_wheel_ships_the_labelled_sets_and_the_shipped_calibrations(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    target, env = installed
    data = target / "recalld_server" / "calibration" / "data"
    for name in ("memories.json", "queries.json", "pairs.json", "near_duplicates.json"):
        assert (data / name).is_file(), name
    loaded = subprocess.run(
        [sys.executable, "-S", "-c", "from recalld_server.calibration import dataset, shipped; "
         "users, queries = dataset.load_precision(); "
         "print(len(queries), shipped('usem3-multilingual-v3-512').near_duplicate_similarity)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=True,
    )  # fmt: skip
    assert loaded.stdout.split()[1] == "0.88", loaded.stdout


def test_the_wheel_contains_every_module_of_the_source_tree(
    installed: tuple[Path, dict[str, str]],
) -> None:
    target, _ = installed
    shipped = {
        p.relative_to(target).with_suffix("").as_posix()
        for p in target.rglob("*.py")
        if not p.relative_to(target).as_posix().startswith("bin/")
    }
    for tree, prefix in (
        (ROOT / "server", ""),
        (ROOT / "clients" / "python", ""),
        (ROOT / "clients" / "python" / "gen", ""),
    ):
        for package in ("recalld_server", "recalld_client", "recalld_mcp", "recalld"):
            source = tree / package
            if not source.is_dir():
                continue
            for path in source.rglob("*.py"):
                module = prefix + path.relative_to(tree).with_suffix("").as_posix()
                assert module in shipped, f"{module} is missing from the wheel"
