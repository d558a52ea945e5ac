#!/usr/bin/env bash
# Idempotent set-up of the Python environment in .venv (server, Python client,
# dev tools). Sourced by serve.sh and test.sh; safe to run on a fresh machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.installed-$(sha256sum "$root/pyproject.toml" | cut -c1-16)"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
if [[ ! -f "$stamp" ]]; then
  "$venv/bin/python" -m pip install --quiet --upgrade "pip>=24" >/dev/null
  "$venv/bin/python" -m pip install --quiet -e "$root[dev,bench]"
  rm -f "$venv"/.installed-* && touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
