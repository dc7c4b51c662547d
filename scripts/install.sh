#!/usr/bin/env bash
# Step 1 of the README's set-up ("Set-up (development)"): everything the tests need, in one command.
#
#   scripts/install.sh [extra pip options, e.g. --extra-index-url https://download.pytorch.org/whl/cpu]
#
# 1. System packages: Debian's `chromium` (tests/experiments/test_grid_report.py renders the grid's HTML report
#    in it), and `python3-venv` where Python cannot create a virtual environment. As root with
#    apt-get they are installed; otherwise the script says exactly what to run, carries on with the
#    Python packages, and exits with status 1 at the end.
# 2. The virtual environment: the active one ($VIRTUAL_ENV) if there is one, otherwise `.venv` in
#    the repository (created with $PYTHON, default python3, 3.10 or later).
# 3. The locked Python packages: pip install --no-deps -r requirements/dev.txt (every package is
#    pinned, so --no-deps is safe), plus any options given to this script.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
missing=()     # system packages still absent after step 1

needs_venv() { [ -z "${VIRTUAL_ENV:-}" ] && [ ! -x .venv/bin/python ]; }

wanted_system_packages() {
  if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    echo chromium
  fi
  if needs_venv && ! "$PYTHON" -c 'import ensurepip' >/dev/null 2>&1; then
    echo python3-venv
  fi
}

install_system_packages() {
  local wanted
  wanted=$(wanted_system_packages)
  [ -z "$wanted" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing system packages: $wanted"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -q
    # shellcheck disable=SC2086  # one word per package
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $wanted
    wanted=$(wanted_system_packages)
  fi
  [ -n "$wanted" ] && mapfile -t missing <<<"$wanted"
  return 0
}

report_missing() {
  echo >&2
  echo "install.sh: the tests need these system packages, which this script could not install: ${missing[*]}" >&2
  if command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  else
    echo "install.sh: install them with your system's package manager (the Chromium browser must be on PATH as 'chromium')" >&2
  fi
  echo "install.sh: then run scripts/install.sh again." >&2
}

python_in_venv() {
  if [ -n "${VIRTUAL_ENV:-}" ]; then
    echo "$VIRTUAL_ENV/bin/python"
    return
  fi
  if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
      || { echo "install.sh: $PYTHON is older than Python 3.10; set PYTHON=python3.11 (or newer)" >&2; exit 1; }
    "$PYTHON" -m venv .venv >&2
    .venv/bin/python -m pip install --quiet --upgrade pip >&2
  fi
  echo "$PWD/.venv/bin/python"
}

install_system_packages
if needs_venv && [[ " ${missing[*]} " == *" python3-venv "* ]]; then
  report_missing
  exit 1
fi
py=$(python_in_venv)
echo "install.sh: installing the locked Python packages into $("$py" -c 'import sys; print(sys.prefix)')"
"$py" -m pip install --no-deps -r requirements/dev.txt "$@"
if [ ${#missing[@]} -gt 0 ]; then
  report_missing
  exit 1
fi
echo "install.sh: done; run the tests with: .venv/bin/python -m pytest (or python -m pytest in your active environment)"
