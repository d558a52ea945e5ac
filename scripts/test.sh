#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs, checks the
# contract and generated code, lints, then runs the Python tests (unit,
# integration against real Milvus Lite, end-to-end over real gRPC) and the Node
# and Go client suites against a live server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh

step() { printf '\n==> %s\n' "$*"; }

step "System packages"
if ! command -v redis-server >/dev/null 2>&1; then
  # The Redis cache tests run a real redis-server (Debian's package; not started).
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
fi
redis-server --version

step "Milvus standalone server (PyPI milvus, its own venv)"
# The shared suites also run against a real Milvus server; the tests start it on
# loopback ports (tests/services.py). Its own venv: it pins other packages.
if [[ ! -x .venv-milvus/bin/milvus-server ]]; then
  python3 -m venv .venv-milvus
  .venv-milvus/bin/python -m pip install --quiet "milvus==2.3.5"
fi
export RECALLD_MILVUS_SERVER_BIN="$root/.venv-milvus/bin/milvus-server"

step "Node dependencies"
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error)
buf=clients/node/node_modules/.bin/buf

step "Deployment checkers: helm, kubecheck, composecheck, envoycheck (Go module proxy, into .tools/)"
# tests/packaging lints and renders the chart, loads the compose file and checks the
# Envoy configuration with them.
if [[ ! -x .tools/helm || ! -x .tools/kubecheck || ! -x .tools/composecheck || ! -x .tools/envoycheck ]]; then
  (cd deploy/tools && go build -o ../../.tools/helm helm.sh/helm/v4/cmd/helm \
    && go build -o ../../.tools/kubecheck ./kubecheck \
    && go build -o ../../.tools/composecheck ./composecheck \
    && go build -o ../../.tools/envoycheck ./envoycheck)
fi

step "Contract: buf lint and format"
"$buf" lint proto
"$buf" format --diff --exit-code proto
# The contract only grows: compared with the last release kept in-tree.
"$buf" breaking proto --against contract/released/0.1.0

step "Generated code is fresh"
bash scripts/gen-protos.sh --check

step "TypeScript and Go lint and format"
(cd clients/node && npm run --silent lint)
unformatted=$(gofmt -l clients/go deploy/tools)
[[ -z "$unformatted" ]] || { echo "gofmt would change: $unformatted"; exit 1; }
(cd deploy/tools && go vet ./kubecheck ./composecheck ./envoycheck)

step "Python lint and types"
ruff check .
ruff format --check server clients/python/recalld_client clients/python/recalld_mcp tests benchmarks
mypy
lint-imports

step "Python tests"
python -m pytest -q tests

step "Node and Go clients against a live server"
data_dir=$(mktemp -d)
log="$data_dir/server.log"
export RECALLD_OTEL_TRACES_FILE="$data_dir/spans.jsonl"
python -m recalld_server serve --host 127.0.0.1 --port 0 --data-dir "$data_dir" \
  --consolidate-interval 0 >"$log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; rm -rf "$data_dir"' EXIT
for _ in $(seq 1 120); do
  port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.5
done
[[ -n "${port:-}" ]] || { echo "server did not start"; cat "$log"; exit 1; }
export RECALLD_ADDR="127.0.0.1:$port"
# A second replica on the same port of another loopback address, as a headless
# Service's pods share a port: the Node client's dns:/// balancing test uses both.
replica_log="$data_dir/replica.log"
python -m recalld_server serve --host 127.0.0.2 --port "$port" --storage memory \
  --consolidate-interval 0 >"$replica_log" 2>&1 &
replica_pid=$!
trap 'kill "$server_pid" "$replica_pid" 2>/dev/null; wait "$server_pid" "$replica_pid" 2>/dev/null; rm -rf "$data_dir"' EXIT
for _ in $(seq 1 120); do
  grep -q "listening on 127\.0\.0\.2:$port" "$replica_log" && break
  kill -0 "$replica_pid" 2>/dev/null || { cat "$replica_log"; exit 1; }
  sleep 0.5
done
grep -q "listening on 127\.0\.0\.2:$port" "$replica_log" || { cat "$replica_log"; exit 1; }
export RECALLD_ADDR_REPLICA="127.0.0.2:$port"
# The Node integration test checks the server logged no GOAWAY with an error code.
export RECALLD_SERVER_LOG="$log"
(cd clients/node && npm test)
(cd clients/go && go vet ./... && go test -count=1 -timeout 600s ./...)
