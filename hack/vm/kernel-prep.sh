#!/bin/sh
# Sourced by a guest command before it runs kubelet nodes (node.sh, and the cgroup v2 cluster test's
# command in test/e2e_cgroup2): what the guest kernel needs and the initramfs does not set up.
# - shared mount propagation, so the kubelet's and containerd's mounts reach the containers;
# - a cgroup v2 hierarchy with every controller delegated to children (kubelet and runc use cgroupfs
#   paths under it);
# - the modules a kubelet node uses, loaded by hand: the kernel cannot autoload them, since its
#   modprobe helper runs in the initramfs, not in the 9p root;
# - IP forwarding and bridged traffic through iptables (pod traffic and its NAT).
# A controller that cannot be delegated or a module that cannot load is reported, not fatal.
set -eu
prep_say() { echo "SRIOVOP-KERNEL: $*"; }
mount --make-rshared /
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
  echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control || prep_say "controller $c not delegated"
done
for m in overlay bridge br_netfilter veth nf_tables nft_compat nft_chain_nat nf_nat nf_conntrack \
         xt_tcpudp xt_nat xt_MASQUERADE xt_comment xt_addrtype xt_conntrack xt_mark xt_multiport xt_physdev; do
  modprobe "$m" 2>/dev/null || prep_say "modprobe $m failed"
done
echo 1 > /proc/sys/net/ipv4/ip_forward
echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables
