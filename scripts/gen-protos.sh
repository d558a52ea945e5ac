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

# TypeScript and Go: buf (npm @bufbuild/buf) with the local, pinned plugins
# listed in proto/buf.gen.yaml (protoc-gen-es from clients/node/package-lock.json;
# protoc-gen-go and protoc-gen-go-grpc from the `tool` directives in
# clients/go/go.mod, fetched from the Go module proxy on first use).
node_dir=clients/node
if [[ ! -x "$node_dir/node_modules/.bin/buf" || ! -x "$node_dir/node_modules/.bin/protoc-gen-es" ]]; then
  (cd "$node_dir" && npm ci --no-audit --no-fund)
fi
buf="$node_dir/node_modules/.bin/buf"
ts_out="$node_dir/src/gen"
go_out=clients/go/gen
# Go's import path comes from one M option per file in proto/buf.gen.yaml, not
# from go_package (see there); a file without one would get the placeholder path.
for f in proto/recalld/v1/*.proto; do
  grep -q -- "- M${f#proto/}=" proto/buf.gen.yaml \
    || { echo "proto/buf.gen.yaml: no Go M option for $f" >&2; exit 1; }
done
rm -rf "$ts_out" "$go_out"
"$buf" generate --template proto/buf.gen.yaml

# The Node client decodes google.rpc.ErrorInfo / BadRequest from the status
# details. Rather than depend on a third-party npm package for those types,
# generate them from the two files that the googleapis-common-protos wheel
# ships (its version is pinned in pyproject.toml). Go uses
# google.golang.org/genproto/googleapis/rpc instead.
rpc_src=$(python -c 'import google.rpc as m; print(list(m.__path__)[0])')
rpc_tmp=$(mktemp -d)
trap 'rm -rf "$rpc_tmp"' EXIT
mkdir -p "$rpc_tmp/google/rpc"
cp "$rpc_src/status.proto" "$rpc_src/error_details.proto" "$rpc_tmp/google/rpc/"
"$buf" generate "$rpc_tmp" --template \
  '{"version":"v2","plugins":[{"local":"'"$node_dir"'/node_modules/.bin/protoc-gen-es","out":"'"$ts_out"'","opt":["target=ts","import_extension=js"]}]}'

if [[ "${1:-}" == "--check" ]]; then
  if [[ -n "$(git status --porcelain -- clients proto)" ]]; then
    git status --porcelain -- clients proto
    git --no-pager diff --stat -- clients proto
    echo "Generated code is stale: run 'bash scripts/gen-protos.sh' and commit the result." >&2
    exit 1
  fi
  echo "Generated code is up to date."
fi
