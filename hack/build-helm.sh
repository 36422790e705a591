#!/usr/bin/env bash
# Builds the helm CLI from the Go module proxy into a version-keyed cache outside the repository, so
# the chart tests (`helm template`, `helm install`) need no package manager and no registry.
#
# Usage: hack/build-helm.sh            (prints the helm binary's path on its last line)
# Env:   HELM_VERSION (default v3.22.0), SRIOVOP_HELM_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/helm/$HELM_VERSION)
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_HELM_DIR:-$CACHE_ROOT/helm/$HELM_VERSION}
START=$(date +%s)

step() { printf '[build-helm %4ds] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }

if [ -x "$OUT/helm" ] && [ -f "$OUT/.complete" ]; then
  echo "$OUT/helm"
  exit 0
fi

command -v go >/dev/null || { echo "build-helm: go is not on PATH (Go 1.24+ is needed)" >&2; exit 1; }
mkdir -p "$OUT"
export GOWORK=off GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOPATH=${GOPATH:-$CACHE_ROOT/go}
export GOCACHE=${GOCACHE_OVERRIDE:-$CACHE_ROOT/go-build}
export GOBIN="$OUT"
step "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (a few minutes cold on 2 cores)"
LDF="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
go install -trimpath -ldflags "$LDF" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
step "verify: $("$OUT/helm" version --short)"
touch "$OUT/.complete"
echo "$OUT/helm"
