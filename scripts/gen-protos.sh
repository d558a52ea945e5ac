#!/usr/bin/env bash
# Regenerates every language's stubs from proto/. One command, pinned tools:
#   bash scripts/gen-protos.sh          regenerate
#   bash scripts/gen-protos.sh --check  regenerate, then fail if git sees a change
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Python: grpcio-tools (bundled protoc, pinned in pyproject.toml) + mypy-protobuf.
py_out=clients/python/gen
rm -rf "$py_out/recalld"
mkdir -p "$py_out"
python -m grpc_tools.protoc -I proto \
  --python_out="$py_out" --mypy_out="$py_out" \
  --grpc_python_out="$py_out" --mypy_grpc_out="$py_out" \
  proto/recalld/v1/*.proto
# Regular packages, so that setuptools and mypy find them without namespace tricks.
touch "$py_out/recalld/__init__.py" "$py_out/recalld/v1/__init__.py"

if [[ "${1:-}" == "--check" ]]; then
  if [[ -n "$(git status --porcelain -- clients proto)" ]]; then
    git status --porcelain -- clients proto
    git --no-pager diff --stat -- clients proto
    echo "Generated code is stale: run 'bash scripts/gen-protos.sh' and commit the result." >&2
    exit 1
  fi
  echo "Generated code is up to date."
fi
