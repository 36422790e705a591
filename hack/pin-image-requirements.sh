#!/usr/bin/env bash
# Regenerates images/requirements.txt: the exact runtime dependency closure of setup.cfg, as pip resolves it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
"$PY" -m pip install --dry-run --ignore-installed --quiet --report "$report" . >/dev/null
{
  echo "# Runtime dependencies of sriovop, pinned for the image (regenerate: hack/pin-image-requirements.sh)."
  "$PY" -c '
import json, sys
report = json.load(open(sys.argv[1]))
pins = sorted((i["metadata"]["name"], i["metadata"]["version"]) for i in report["install"]
              if i["metadata"]["name"] != "sriovop")
print("\n".join(f"{n}=={v}" for n, v in pins))' "$report"
} > images/requirements.txt
echo "wrote images/requirements.txt"
