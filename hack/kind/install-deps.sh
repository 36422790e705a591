#!/usr/bin/env bash
# What the kind failover needs on the host besides `make deps` (docs/kind.md), so that one command works
# on a fresh machine: the Debian packages, installed only when missing (idempotent, quick when present),
# and a Docker engine that answers `docker info`.
#   docker.io:  the docker CLI kind drives, and dockerd, the engine the nodes run in (only when no engine
#               answers)
#   mmdebstrap: the node's base image (hack/kind/build-base-image.sh), only when KIND_NODE_IMAGE is ours
#               (sriovop/..., the default); `make deps` installs it too, listed here so that
#               hack/kind/failover.sh and build-node-image.sh run directly find it
# (The nodes' CNI plugins come from the base image, not from the host.)
#
# When no engine answers, dockerd is started in the background with --ip-forward=false (the kind nodes
# talk over one Docker bridge, so the host needs no forwarding, and Docker then leaves the host's
# ip_forward and FORWARD policy alone), its log in $DOCKERD_DIR/dockerd.log. Its pid goes to
# $DOCKERD_DIR/dockerd.pid, the record that this script started it: `--stop` (hack/kind/failover.sh's
# cleanup) stops that one and no other. An engine that was already running is left alone.
#
# Usage: hack/kind/install-deps.sh [--dry-run | --stop]
#   --dry-run  prints what would be done (`install PKG...`, `start dockerd ...`, `docker: running`), changes
#              nothing; it uses shell builtins only besides `docker info`, so a test can give it any PATH
# Env:   KIND_NODE_IMAGE (sriovop/kind-node:...), DOCKERD_DIR (build/kind), DOCKERD_TIMEOUT (seconds to wait for dockerd to answer or to stop, 300)
set -euo pipefail

here=${BASH_SOURCE[0]%/*}
[[ "$here" == "${BASH_SOURCE[0]}" ]] && here=.
REPO="$(cd "$here/../.." && pwd)"
DOCKERD_DIR=${DOCKERD_DIR:-$REPO/build/kind}
DOCKERD_TIMEOUT=${DOCKERD_TIMEOUT:-300}
DOCKERD_ARGS=(--ip-forward=false)
PIDFILE="$DOCKERD_DIR/dockerd.pid"
MODE=${1:-}
say() { printf '[kind-deps] %s\n' "$*" >&2; }

# The pid this script recorded, when that process is still a dockerd (a stale record is ignored).
started_dockerd() {
  local pid comm
  [[ -f "$PIDFILE" ]] || return 1
  read -r pid <"$PIDFILE" || return 1
  [[ -r "/proc/$pid/comm" ]] || return 1
  read -r comm <"/proc/$pid/comm"
  [[ "$comm" == dockerd ]] || return 1
  echo "$pid"
}

# Whether PID still runs: a zombie (state Z, not yet reaped by a parent that is not this script) has
# ended.
running() {
  local stat
  [[ -r "/proc/$1/stat" ]] || return 1
  read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}

stop() {
  local pid deadline
  if ! pid=$(started_dockerd); then
    rm -f "$PIDFILE"
    return 0
  fi
  say "stopping the dockerd started for kind (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + DOCKERD_TIMEOUT))
  while running "$pid" && ((SECONDS < deadline)); do sleep 1; done
  if running "$pid"; then
    say "dockerd (pid $pid) still runs after ${DOCKERD_TIMEOUT}s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

# Only what this host lacks for this run: dockerd only when no engine answers (a remote or rootless
# engine is fine), mmdebstrap only when the node image is built here (not for a kindest/node image).
missing_packages() {
  local -A need=([docker]=docker.io) missing=()
  local cmd
  engine_answers || need[dockerd]=docker.io
  [[ "${KIND_NODE_IMAGE:-sriovop/}" != sriovop/* ]] || need[mmdebstrap]=mmdebstrap
  for cmd in "${!need[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing[${need[$cmd]}]=1
  done
  ((${#missing[@]} == 0)) || printf '%s\n' "${!missing[@]}"
}

engine_answers() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

start_dockerd() {
  local log="$DOCKERD_DIR/dockerd.log" pid deadline
  mkdir -p "$DOCKERD_DIR"
  say "no Docker engine answers: starting dockerd ${DOCKERD_ARGS[*]} (log $log)"
  # setsid: its own session, so it outlives this script and the make target, and a Ctrl-C of make does
  # not reach it; the failover's cleanup stops it.
  setsid dockerd "${DOCKERD_ARGS[@]}" >>"$log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$PIDFILE"
  deadline=$((SECONDS + DOCKERD_TIMEOUT))
  until docker info >/dev/null 2>&1; do
    if ! running "$pid"; then
      rm -f "$PIDFILE"
      say "dockerd exited; the end of $log:"
      tail -n 20 "$log" >&2
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      say "dockerd (pid $pid) did not answer within ${DOCKERD_TIMEOUT}s; see $log"
      stop
      exit 1
    fi
    sleep 1
  done
  say "dockerd answers (pid $pid, after ${SECONDS}s)"
}

main() {
  local missing
  case "$MODE" in
    --stop) stop; return ;;
    --dry-run | "") ;;
    *) say "unknown argument: $MODE (use --dry-run or --stop)"; exit 2 ;;
  esac
  mapfile -t missing < <(missing_packages)
  if [[ "$MODE" == --dry-run ]]; then
    ((${#missing[@]} == 0)) || echo "install ${missing[*]}"
    if engine_answers; then
      echo "docker: running"
    else
      echo "start dockerd ${DOCKERD_ARGS[*]}"
    fi
    return
  fi
  if ((${#missing[@]} > 0)); then
    if ((EUID != 0)); then
      say "missing Debian packages (run as root to install): ${missing[*]}"
      exit 1
    fi
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  engine_answers && return
  if ((EUID != 0)); then
    say "no Docker engine answers, and starting dockerd needs root"
    exit 1
  fi
  start_dockerd
}

main
