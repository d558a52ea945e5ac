"""Build step of the recalld-client wheel that pyproject.toml cannot declare.

The generated stubs ship their .pyi files, and PEP 561 wants a `py.typed` marker
beside them before a type checker reads them. scripts/gen-protos.sh regenerates
gen/recalld from scratch, so a marker kept in the source tree would be deleted by
every regeneration; the wheel gets it at build time instead.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TYPED_GENERATED_PACKAGES = ("recalld", "recalld/v1")


class BuildPyMarkingStubsTyped(build_py):
    """build_py, then a py.typed marker in each generated package."""

    def run(self) -> None:
        """Builds the packages, then marks the generated ones typed."""
        super().run()
        for package in TYPED_GENERATED_PACKAGES:
            marker = Path(self.build_lib, package, "py.typed")
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()


setup(cmdclass={"build_py": BuildPyMarkingStubsTyped})
