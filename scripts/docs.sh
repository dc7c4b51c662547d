#!/usr/bin/env bash
# Build the documentation site with --strict (a broken link, a missing page or a stale API name
# fails) and serve it at http://127.0.0.1:8000 while you edit:
#
#   scripts/docs.sh            # build into site/, then serve with live reload
#   scripts/docs.sh build      # build only
#
# Uses the project's virtual environment (.venv) when there is one, else the active Python.
set -euo pipefail
cd "$(dirname "$0")/.."
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
[ -n "${VIRTUAL_ENV:-}" ] && py="$VIRTUAL_ENV/bin/python"
export NO_MKDOCS_2_WARNING=1
"$py" -m mkdocs build --strict -d site
if [ "${1:-serve}" = serve ]; then
  exec "$py" -m mkdocs serve --strict -a 127.0.0.1:8000
fi
