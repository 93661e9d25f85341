#!/usr/bin/env bash
# One-time set-up on a fresh Debian machine (idempotent): the graphviz `dot` binary from
# Debian's `graphviz` package, a virtual environment in .venv, and lstmgraph with its test
# dependencies installed into it. Usage: bash setup.sh
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v dot >/dev/null 2>&1; then
  echo "setup: installing Debian's graphviz package (for the 'dot' binary)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO=none; fi
  if [ "$SUDO" = none ]; then
    echo "setup: cannot install graphviz without root; run 'apt-get install graphviz' as root." >&2
    echo "setup: continuing: lstmgraph render will write .dot files only." >&2
  else
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends graphviz >/dev/null
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
echo "setup: done ($(.venv/bin/lstmgraph --version))"
