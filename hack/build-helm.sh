#!/usr/bin/env bash
# Builds the helm CLI from the Go module proxy into a version-keyed cache outside the repository, so
# the chart tests (`helm template`, `helm install`) need no package manager and no registry.
#
# Usage: hack/build-helm.sh            (prints the cache directory, which holds `helm`, on its last line)
# Env:   HELM_VERSION (default v3.22.0), SRIOVOP_HELM_DIR (default ${XDG_CACHE_HOME:-~/.cache}/sriovop/helm/$HELM_VERSION)
#
# The cached check, step() and the Go environment come from hack/lib/k8s-wrapper.sh (helm is a plain
# `go install`: its module has no replace directives, so no wrapper module is needed).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-wrapper.sh"

HELM_VERSION=${HELM_VERSION:-v3.22.0}
K8S_VERSION=${K8S_VERSION:-v1.35.4}
CACHE_ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/sriovop
OUT=${SRIOVOP_HELM_DIR:-$CACHE_ROOT/helm/$HELM_VERSION}
k8s_begin helm

step "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (about 5 min cold on 2 cores)"
GOBIN="$OUT" go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
  "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
step "verify: $("$OUT/helm" version --short)"
touch "$OUT/.complete"
echo "$OUT"
