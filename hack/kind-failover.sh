#!/usr/bin/env bash
# The failover fault sequence of hack/failover.py, on a real cluster: kind + Docker.
#
#   hack/kind-failover.sh                 # 6 rounds of 5 faults (30), then the JSON report on stdout
#   ROUNDS=1 KEEP_CLUSTER=1 hack/kind-failover.sh
#
# Creates a kind cluster (1 control plane, 3 workers), builds the operator image from images/Dockerfile
# (target operator), loads it, deploys manifests/ (`kubectl apply -k`), scales the operator Deployment to
# 3 replicas spread over the workers, starts a workload that keeps changing SriovNetworks, and injects
# rounds of: the leader's pod deleted (SIGTERM, graceful handover), the leader's process SIGKILLed on its
# node (crash), the leader's node `docker pause`d past the lease then `docker unpause`d, kube-apiserver
# restarted (its container stopped; the kubelet starts it again), a follower's process SIGKILLed.
# Every pod's log is streamed to $WORK/logs, the Lease holder is polled into $WORK/lease.jsonl, the faults are
# written to $WORK/faults.jsonl, and `hack/failover.py --analyze $WORK` prints the same JSON as the local
# harness: takeover times per fault type, overlapping writers (must be 0), lost SriovNetwork changes.
#
# Needs docker (a running engine), kind, kubectl and the repository's virtualenv (make venv).
# Environment: CLUSTER, IMAGE, NS, DEPLOYMENT, LEASE, TARGET_NS, ROUNDS, LEASE_DURATION, RENEW_DEADLINE,
# RETRY_PERIOD (must match the Deployment's flags), WORK, PYTHON, KEEP_CLUSTER=1 (do not delete it).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER="${CLUSTER:-sriovop-failover}"
IMAGE="${IMAGE:-sriovop-operator:failover}"
NS="${NS:-sriov-network-operator}"
DEPLOYMENT="${DEPLOYMENT:-sriov-network-operator}"
LEASE="${LEASE:-a56def2a.openshift.io}"
TARGET_NS="${TARGET_NS:-failover-nads}"
ROUNDS="${ROUNDS:-6}"
LEASE_DURATION="${LEASE_DURATION:-15}"
RENEW_DEADLINE="${RENEW_DEADLINE:-10}"
RETRY_PERIOD="${RETRY_PERIOD:-2}"
KEEP_CLUSTER="${KEEP_CLUSTER:-0}"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
WORK="${WORK:-$(mktemp -d -t sriovop-kind-failover.XXXXXX)}"
KUBECTL=(kubectl --context "kind-$CLUSTER")
STARTED="$(date +%s)"
BACKGROUND=()
PAUSED_NODE=""

log() { printf '[%5ss] %s\n' "$(($(date +%s) - STARTED))" "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required ($2)"; }

cleanup() {
    local pid
    if [[ -n "$PAUSED_NODE" ]]; then docker unpause "$PAUSED_NODE" >/dev/null 2>&1 || true; fi
    rm -f "$WORK/workload.run" "$WORK/collect.run"
    for pid in "${BACKGROUND[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ "$KEEP_CLUSTER" != 1 ]]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
    log "work directory: $WORK"
}

# ---- cluster, image, deployment ----------------------------------------------------------------------

create_cluster() {
    if kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
        log "reusing kind cluster $CLUSTER"
        return
    fi
    log "creating kind cluster $CLUSTER (1 control plane, 3 workers)"
    kind create cluster --name "$CLUSTER" --wait 300s --config - <<'EOF'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
  - role: worker
  - role: worker
  - role: worker
EOF
}

build_and_load() {
    log "building $IMAGE from images/Dockerfile (target operator)"
    docker build -f "$REPO/images/Dockerfile" --target operator -t "$IMAGE" "$REPO" >&2
    kind load docker-image "$IMAGE" --name "$CLUSTER" >&2
}

deploy() {
    local attempt selector
    log "deploying manifests/"
    for attempt in 1 2 3 4 5; do
        # CRDs and the objects of their kinds are in one kustomization: the first pass may race.
        if "${KUBECTL[@]}" apply -k "$REPO/manifests/" >&2; then break; fi
        [[ "$attempt" == 5 ]] && die "kubectl apply -k manifests/ keeps failing"
        sleep 5
    done
    "${KUBECTL[@]}" wait --for condition=established --timeout 120s crd --all >&2
    # No webhook image is loaded here; webhooks with failurePolicy Fail would refuse the workload.
    if ! "${KUBECTL[@]}" -n "$NS" patch sriovoperatorconfig default --type merge \
        -p '{"spec":{"enableOperatorWebhook":false,"enableInjector":false}}' >&2; then
        "${KUBECTL[@]}" apply -f - >&2 <<EOF
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovOperatorConfig
metadata:
  name: default
  namespace: $NS
spec:
  enableOperatorWebhook: false
  enableInjector: false
  logLevel: 2
EOF
    fi
    "${KUBECTL[@]}" -n "$NS" set image "deployment/$DEPLOYMENT" "*=$IMAGE" >&2
    selector="$("${KUBECTL[@]}" -n "$NS" get deployment "$DEPLOYMENT" -o jsonpath='{.spec.selector.matchLabels}')"
    "${KUBECTL[@]}" -n "$NS" patch deployment "$DEPLOYMENT" --type strategic -p "$(cat <<EOF
{"spec": {"template": {"spec": {
  "containers": [{"name": "$(container_name)", "imagePullPolicy": "IfNotPresent"}],
  "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
    "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": $selector}}]}}}}
EOF
)" >&2
    "${KUBECTL[@]}" -n "$NS" scale deployment "$DEPLOYMENT" --replicas 3 >&2
    "${KUBECTL[@]}" -n "$NS" rollout status deployment "$DEPLOYMENT" --timeout 300s >&2
    "${KUBECTL[@]}" create namespace "$TARGET_NS" --dry-run=client -o yaml | "${KUBECTL[@]}" apply -f - >&2
}

container_name() {
    "${KUBECTL[@]}" -n "$NS" get deployment "$DEPLOYMENT" -o jsonpath='{.spec.template.spec.containers[0].name}'
}

pod_selector() {
    "${KUBECTL[@]}" -n "$NS" get deployment "$DEPLOYMENT" -o jsonpath='{.spec.selector.matchLabels}' |
        "$PYTHON" -c 'import json, sys; print(",".join(f"{k}={v}" for k, v in json.load(sys.stdin).items()))'
}

# ---- observation -------------------------------------------------------------------------------------

holder() {
    "${KUBECTL[@]}" -n "$NS" get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true
}

# controller-runtime's identity (and ours by default) is "<hostname>_<uuid>"; the hostname is the pod.
pod_of() { printf '%s\n' "${1%%_*}"; }

# Polled rather than watched: a loop of short kubectl calls survives API server restarts and leaves no
# long-running child behind when stopped.
record_lease() {
    local last="<none>" h
    while [[ -f "$WORK/collect.run" ]]; do
        h="$(holder)"
        if [[ "$h" != "$last" ]]; then
            printf '{"at": %s, "holder": "%s"}\n' "$(now)" "$h" >>"$WORK/lease.jsonl"
            last="$h"
        fi
        sleep 0.1
    done
}

# One `kubectl logs -f` per container incarnation (pod name + restart count); a container that
# restarted before we saw it is fetched with --previous. The followers are stopped with this loop.
collect_logs() {
    local selector pod restarts key
    trap 'jobs -p | xargs -r kill 2>/dev/null; exit 0' TERM INT
    selector="$(pod_selector)"
    declare -A followed=()
    while [[ -f "$WORK/collect.run" ]]; do
        while read -r pod restarts; do
            [[ -z "$pod" || -z "$restarts" ]] && continue
            key="$pod-$restarts"
            [[ -n "${followed[$key]:-}" ]] && continue
            followed[$key]=1
            if ((restarts > 0)) && [[ -z "${followed[$pod-$((restarts - 1))]:-}" ]]; then
                followed[$pod-$((restarts - 1))]=1
                "${KUBECTL[@]}" -n "$NS" logs --previous "$pod" >"$WORK/logs/$pod-$((restarts - 1)).log" 2>/dev/null || true
            fi
            "${KUBECTL[@]}" -n "$NS" logs -f "$pod" >"$WORK/logs/$key.log" 2>/dev/null &
        done < <("${KUBECTL[@]}" -n "$NS" get pods -l "$selector" -o \
            jsonpath='{range .items[*]}{.metadata.name} {.status.containerStatuses[0].restartCount}{"\n"}{end}' \
            2>/dev/null || true)
        sleep 1
    done
    jobs -p | xargs -r kill 2>/dev/null || true
}

workload() {
    local i name vlan res
    while [[ -f "$WORK/workload.run" ]]; do
        i=$((RANDOM % 8))
        name="$(printf 'net-%02d' "$i")"
        if ((RANDOM % 4 == 0)); then
            "${KUBECTL[@]}" -n "$NS" delete sriovnetwork "$name" --ignore-not-found --wait=false >/dev/null 2>&1 || true
        else
            vlan=$((RANDOM % 4094 + 1))
            res="res$((RANDOM % 4))"
            "${KUBECTL[@]}" apply -f - >/dev/null 2>&1 <<EOF || true
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetwork
metadata:
  name: $name
  namespace: $NS
spec:
  resourceName: $res
  networkNamespace: $TARGET_NS
  vlan: $vlan
  ipam: '{"type": "host-local", "subnet": "10.$i.$((RANDOM % 256)).0/24"}'
EOF
        fi
        sleep 0.3
    done
}

ready_pods() {
    "${KUBECTL[@]}" -n "$NS" get deployment "$DEPLOYMENT" -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true
}

wait_for() { # wait_for <seconds> <description> <command...>
    local timeout="$1" what="$2" deadline
    shift 2
    deadline=$(($(date +%s) + timeout))
    until "$@"; do
        if (($(date +%s) > deadline)); then
            log "  timed out after ${timeout}s waiting for $what"
            return 1
        fi
        sleep 0.2
    done
}

three_ready() { [[ "$(ready_pods)" == 3 ]]; }
has_leader() { [[ -n "$(holder)" ]] && "${KUBECTL[@]}" -n "$NS" get pod "$(pod_of "$(holder)")" >/dev/null 2>&1; }
new_leader() { local h; h="$(holder)"; [[ -n "$h" && "$h" != "$1" ]]; }
apiserver_ready() { "${KUBECTL[@]}" get --raw /readyz >/dev/null 2>&1; }

settle() {
    wait_for 300 "3 ready replicas" three_ready || true
    wait_for $((3 * LEASE_DURATION + 60)) "a leader" has_leader || true
    sleep $((2 * RETRY_PERIOD))
}

# ---- faults --------------------------------------------------------------------------------------------

# SIGKILL the operator process of a pod from its node (a signal from inside the container's PID namespace
# cannot kill its PID 1).
kill_process() {
    local pod="$1" node cid pid
    node="$("${KUBECTL[@]}" -n "$NS" get pod "$pod" -o jsonpath='{.spec.nodeName}')"
    cid="$("${KUBECTL[@]}" -n "$NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')"
    pid="$(docker exec "$node" crictl inspect --output go-template --template '{{.info.pid}}' "${cid#*://}")"
    docker exec "$node" kill -KILL "$pid"
}

record_fault() { # kind at victim old_leader [extra JSON members]
    printf '{"kind": "%s", "at": %s, "victim": "%s", "old_leader": "%s"%s}\n' "$1" "$2" "$3" "$4" "${5:-}" \
        >>"$WORK/faults.jsonl"
}

fault() {
    local kind="$1" old at pod node extra="" cp_node cid other
    settle
    old="$(holder)"
    pod="$(pod_of "$old")"
    case "$kind" in
        sigterm_leader)
            at="$(now)"
            "${KUBECTL[@]}" -n "$NS" delete pod "$pod" --wait=false >&2
            wait_for $((3 * LEASE_DURATION + 60)) "a takeover" new_leader "$old" || true
            ;;
        sigkill_leader)
            at="$(now)"
            kill_process "$pod"
            wait_for $((3 * LEASE_DURATION + 60)) "a takeover" new_leader "$old" || true
            ;;
        sigstop_leader)
            node="$("${KUBECTL[@]}" -n "$NS" get pod "$pod" -o jsonpath='{.spec.nodeName}')"
            at="$(now)"
            docker pause "$node" >/dev/null
            PAUSED_NODE="$node"
            wait_for $((3 * LEASE_DURATION + 60)) "a takeover" new_leader "$old" || true
            sleep "$((LEASE_DURATION + 2 * RETRY_PERIOD))"
            extra=", \"resumed_at\": $(now)"
            docker unpause "$node" >/dev/null
            PAUSED_NODE=""
            ;;
        apiserver_restart)
            cp_node="$CLUSTER-control-plane"
            cid="$(docker exec "$cp_node" crictl ps --name kube-apiserver -q | head -n1)"
            at="$(now)"
            docker exec "$cp_node" crictl stop "$cid" >/dev/null
            sleep 2
            wait_for 180 "kube-apiserver back" apiserver_ready || true
            extra=", \"apiserver_back_at\": $(now)"
            ;;
        follower_kill)
            other="$("${KUBECTL[@]}" -n "$NS" get pods -l "$(pod_selector)" -o name | sed 's|^pod/||' |
                grep -vx "$pod" | head -n1)"
            at="$(now)"
            kill_process "$other"
            pod="$other"
            sleep "$((2 * RETRY_PERIOD))"
            ;;
        *) die "unknown fault $kind" ;;
    esac
    record_fault "$kind" "$at" "$pod" "$old" "$extra"
    log "fault $kind: victim=$pod old=$old new=$(holder)"
}

analyze() {
    "${KUBECTL[@]}" -n "$NS" get sriovnetworks -o json >"$WORK/networks.json"
    "${KUBECTL[@]}" -n "$TARGET_NS" get network-attachment-definitions -o json >"$WORK/nads.json"
    "$PYTHON" "$REPO/hack/failover.py" --analyze "$WORK" --target-namespace "$TARGET_NS" \
        --lease-duration "$LEASE_DURATION" --renew-deadline "$RENEW_DEADLINE" --retry-period "$RETRY_PERIOD"
}

converged() { analyze 2>/dev/null | "$PYTHON" -c 'import json, sys; sys.exit(not json.load(sys.stdin)["all_changes_in_nads"])'; }

main() {
    local round kind
    need docker "a running Docker engine"
    need kind "https://kind.sigs.k8s.io"
    need kubectl "https://kubernetes.io/docs/tasks/tools/"
    [[ -x "$PYTHON" ]] || die "$PYTHON not found: run 'make venv' or set PYTHON"
    docker info >/dev/null 2>&1 || die "the Docker engine is not reachable"
    trap cleanup EXIT
    mkdir -p "$WORK/logs"
    : >"$WORK/faults.jsonl"
    : >"$WORK/lease.jsonl"
    create_cluster
    build_and_load
    deploy
    touch "$WORK/workload.run" "$WORK/collect.run"
    record_lease & BACKGROUND+=("$!")
    collect_logs & BACKGROUND+=("$!")
    workload & BACKGROUND+=("$!")
    log "3 replicas and the workload running; $ROUNDS rounds of 5 faults; files in $WORK"
    for ((round = 1; round <= ROUNDS; round++)); do
        for kind in sigterm_leader sigkill_leader sigstop_leader apiserver_restart follower_kill; do
            fault "$kind"
        done
    done
    settle
    rm -f "$WORK/workload.run"
    log "workload stopped; waiting for the NADs to converge"
    wait_for 120 "the NADs to match the SriovNetworks" converged || true
    sleep 2 # the log followers flush what the replicas wrote last
    rm -f "$WORK/collect.run"
    wait "${BACKGROUND[@]}" 2>/dev/null || true
    BACKGROUND=()
    analyze | tee "$WORK/report.json"
}

# Sourcing the script (for a dry test of its functions) defines them without running anything.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
