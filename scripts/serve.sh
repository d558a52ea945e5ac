#!/usr/bin/env bash
# One command from a fresh clone to a running server on the embedded default:
# Milvus Lite under ./recalld-data and the bundled embedding model, on
# 127.0.0.1:50051 (flags after the script name go to `recalld serve`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/bootstrap.sh
source "$root/scripts/bootstrap.sh"
cd "$root"
exec recalld serve --host 127.0.0.1 --port 50051 --data-dir "$root/recalld-data" "$@"
