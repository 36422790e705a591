# Sourced by the hack/build-*.sh scripts: the Go environment and the wrapper module that builds any
# k8s.io/kubernetes/cmd/<name> at one release.
#
# Go ignores a dependency's `replace` directives, and k8s.io/kubernetes points every staging module at
# ./staging with one, so a throwaway wrapper module pins each staging module to its published v0.N.M tag.
# Callers set K8S_VERSION, CACHE_ROOT and OUT (the cache directory), then call k8s_begin.

START=$(date +%s)
step() { printf '[%s %4ds] %s\n' "$(basename "$0" .sh)" "$(( $(date +%s) - START ))" "$*" >&2; }

# k8s_begin BINARY...: when $OUT holds every BINARY and .complete, prints $OUT and exits (the warm path);
# otherwise prepares the Go environment, $OUT and a work directory $W removed on exit.
k8s_begin() {
  local b cached=1
  for b in "$@"; do [ -x "$OUT/$b" ] || cached=0; done
  if [ "$cached" = 1 ] && [ -f "$OUT/.complete" ]; then
    step "cached: $OUT"
    echo "$OUT"
    exit 0
  fi
  k8s_go_env
  mkdir -p "$OUT"
  W=$(mktemp -d)
  trap 'rm -rf "$W"' EXIT
}

k8s_go_env() {
  command -v go >/dev/null || { echo "$(basename "$0"): go is not on PATH (Go 1.24+ is needed)" >&2; exit 1; }
  export GOWORK=off GOTOOLCHAIN=${GOTOOLCHAIN:-auto} CGO_ENABLED=0 GOFLAGS=-mod=mod
  export GOPATH=${GOPATH:-$CACHE_ROOT/go}
  export GOCACHE=${GOCACHE_OVERRIDE:-$CACHE_ROOT/go-build}
  K8S_MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
  K8S_PATCH=$(echo "$K8S_VERSION" | cut -d. -f3)
  K8S_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
  K8S_LDFLAGS="$K8S_LDFLAGS -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_MINOR}"
  K8S_LDFLAGS="$K8S_LDFLAGS -X k8s.io/component-base/version.gitTreeState=clean"
  K8S_LDFLAGS="$K8S_LDFLAGS -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"
}

# k8s_kubernetes_gomod: prints the path of k8s.io/kubernetes@$K8S_VERSION's go.mod (downloads it once).
k8s_kubernetes_gomod() {
  go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])'
}

# k8s_wrapper_module DIR NAME: makes DIR a module whose staging modules are pinned; cd's into it.
k8s_wrapper_module() {
  mkdir -p "$1" && cd "$1"
  go mod init "local/$2" >/dev/null 2>&1
  step "downloading k8s.io/kubernetes@$K8S_VERSION go.mod"
  K8S_GOMOD=$(k8s_kubernetes_gomod)
  local mods
  mods=$(python3 - "$K8S_GOMOD" <<'PY'
import re, sys
mods = set()
for line in open(sys.argv[1]):
    s = line.split("//")[0].strip()
    m = re.match(r'^(?:require\s+)?(k8s\.io/[\w.\-/]+)\s+v0\.0\.0$', s)
    if m:
        mods.add(m.group(1))
    m = re.match(r'^(?:replace\s+)?(k8s\.io/[\w.\-/]+)\s+=>\s+\./staging/', s)
    if m:
        mods.add(m.group(1))
print("\n".join(sorted(mods)))
PY
)
  step "pinning $(echo "$mods" | wc -l) staging modules to v0.${K8S_MINOR}.${K8S_PATCH}"
  local m
  for m in $mods; do go mod edit -replace="${m}=${m}@v0.${K8S_MINOR}.${K8S_PATCH}"; done
}
