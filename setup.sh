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
    # Wait (up to 10 minutes) for another apt or dpkg run to release its lock instead of failing.
    APT="apt-get -o DPkg::Lock::Timeout=600"
    $SUDO env DEBIAN_FRONTEND=noninteractive $APT update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive $APT install -y -qq --no-install-recommends graphviz >/dev/null
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# The editable install follows code changes by itself; it is redone only when pyproject.toml
# (dependencies, entry points) has changed since the last successful install, or is broken.
STAMP=.venv/.lstmgraph-installed
WANTED=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANTED" ] || ! .venv/bin/lstmgraph --version >/dev/null 2>&1; then
  rm -f "$STAMP"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  echo "$WANTED" > "$STAMP"
fi
echo "setup: done ($(.venv/bin/lstmgraph --version))"
