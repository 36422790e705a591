#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing (idempotent, quick when
# everything is present). Needs root for apt-get; without root it only reports what is missing.
#   iproute2: `ip netns` for the simulated hosts' network namespaces and veth pairs
#   kmod:     modprobe/modinfo, used when resolving module dependencies
#   containerd, runc: the images' tests import and run them in a private containerd; the container runtime
#             of the kubelet nodes of `sriovop dev cluster up --nodes N` (one containerd per node)
#   containernetworking-plugins (/usr/lib/cni): the nodes' pod network (bridge + host-local)
#   mmdebstrap: builds the images' Debian root filesystems (`make images`)
#   openvswitch-switch: ovsdb-server for the simulated hosts' OVS bridges, and ovs-vswitchd in the QEMU e2e guest
#     (the guest's root is this host's, over 9p)
#   systemd:  systemd-analyze verify checks the systemd-mode unit files
#   iptables: the cluster's Service routing (ClusterIP DNAT rules in its own chains)
#   mstflint: mstconfig/mstfwreset, the Mellanox firmware tools the config daemon runs (a test runs them)
set -euo pipefail
declare -A need=([ip]=iproute2 [modinfo]=kmod [containerd]=containerd [ctr]=containerd [runc]=runc
                 [/usr/lib/cni/bridge]=containernetworking-plugins [/usr/lib/cni/host-local]=containernetworking-plugins
                 [iptables]=iptables [iptables-restore]=iptables [mmdebstrap]=mmdebstrap
                 [ovs-vsctl]=openvswitch-switch [ovsdb-server]=openvswitch-switch [systemd-analyze]=systemd
                 [mstconfig]=mstflint [mstfwreset]=mstflint)
missing=()
for cmd in "${!need[@]}"; do
  if [[ $cmd == /* ]]; then
    [ -x "$cmd" ] || missing+=("${need[$cmd]}")
  else
    command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
  fi
done
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')
if ! command -v go >/dev/null 2>&1; then
  # Debian's golang-go (1.19) is too old for kube-apiserver 1.35 and predates GOTOOLCHAIN downloads.
  echo "install-deps: Go 1.21+ is needed on PATH to build kube-apiserver (e.g. golang-1.23-go from" \
       "bookworm-backports; GOTOOLCHAIN=auto then fetches the toolchain Kubernetes asks for)" >&2
  exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing Debian packages (run as root to install): ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
