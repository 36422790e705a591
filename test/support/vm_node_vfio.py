"""A pod with a vfio-pci VF on the QEMU guest node, for `make e2e-node`: what the test creates and how it
reads the result back from the guest's kernel and from inside the container.

A vfio-pci VF has no netdev: the pod gets the VF's IOMMU group device (`/dev/vfio/<group>`) and the VFIO
container device (`/dev/vfio/vfio`) from our device plugin's Allocate, and the VF's PCI address in
`PCIDEVICE_<RESOURCE>`, as a DPDK application expects. The sriov CNI, run for the network named in the
pod's annotation, sets the PF-side VF attributes only (here the VLAN); the network-status annotation
carries the device-info with the PCI address. The guest side is read with sysfs and `ip` in the guest;
the container's view with `ctr task exec`, which runs in the container's namespaces and cgroup, so
opening the group device there also passes the container's device rules.
"""

from __future__ import annotations

import base64
import json
import shlex
from typing import Any

from sriovop.kubelet import deviceplugin_v1beta1_pb2 as pb
from test.support.vm_daemon import GuestShell
from test.support.vm_node import NODE_DIR
from test.support.vm_node_pods import CONTAINERD_SOCK, vf_pod

NETWORK = "vm-vfio-net"
VLAN = 200
POD_NAME = "vm-vfio"
VFIO_DIR = "/dev/vfio"
CHECKPOINT = NODE_DIR / "kubelet" / "device-plugins" / "kubelet_internal_checkpoint"


def vfio_network(namespace: str, resource_name: str) -> dict[str, Any]:
    """A SriovNetwork for the vfio-pci resource: a VLAN (a PF-side attribute the CNI sets), no IPAM."""
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork",
            "metadata": {"name": NETWORK, "namespace": namespace},
            "spec": {"resourceName": resource_name, "networkNamespace": "default", "vlan": VLAN}}


def vfio_pod(node: str) -> dict[str, Any]:
    """A long-running pod naming the vfio network only in its annotation (the injector adds the request)."""
    return vf_pod(POD_NAME, node, NETWORK)


def host_vfs(shell: GuestShell, pf_pci: str) -> dict[str, dict[str, str]]:
    """PCI address -> driver, IOMMU group and whether the guest has `/dev/vfio/<group>`, for every VF of
    the PF (the guest's sysfs and devtmpfs)."""
    out = shell.check(f"for l in /sys/bus/pci/devices/{pf_pci}/virtfn*; do [ -e \"$l\" ] || continue; "
                     "d=$(readlink -f \"$l\"); g=$(basename \"$(readlink \"$d/iommu_group\")\"); "
                     "c=no; [ -c /dev/vfio/$g ] && c=yes; "
                     "echo \"${d##*/} $(basename \"$(readlink \"$d/driver\")\") $g $c\"; done")
    return {pci: {"driver": driver, "group": group, "dev": dev}
            for pci, driver, group, dev in (line.split() for line in out.splitlines())}


def container_exec(shell: GuestShell, container_id: str, script: str, exec_id: str) -> tuple[int, str]:
    """Run `sh -c script` in the container (its namespaces and cgroup) through the guest's containerd."""
    rc, out, err = shell.run(f"ctr --address {CONTAINERD_SOCK} -n k8s.io task exec --exec-id {exec_id} "
                             f"{container_id} sh -c {shlex.quote(script)}", timeout=180)
    return rc, (out + err).strip()


def pod_vfio(shell: GuestShell, pod: dict[str, Any], pid: int, resource_env: str) -> dict[str, Any]:
    """The container's view: its /dev/vfio, its environment, and whether it can open the group device
    named by the IOMMU group of the VF in its environment."""
    environ = shell.check(f"tr '\\0' '\\n' < /proc/{pid}/environ")
    env = dict(line.split("=", 1) for line in environ.splitlines() if "=" in line)
    pci = env.get(resource_env, "")
    info = json.loads(env.get(f"{resource_env}_INFO") or "{}")
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    rc, listing = container_exec(shell, cid, f"ls {VFIO_DIR}", "vfio-ls")
    devices = sorted(listing.split()) if rc == 0 else []
    group = shell.check(f"basename \"$(readlink /sys/bus/pci/devices/{shlex.quote(pci)}/iommu_group)\"").strip() \
        if pci else ""
    # Opening the group (and the container device) is what a DPDK application does first; it fails with
    # EPERM when the container's device rules lack the node, ENOENT when it is missing.
    opened_rc, opened = container_exec(
        shell, cid, f"exec 3<>{VFIO_DIR}/vfio 4<>{VFIO_DIR}/{group} && echo opened", "vfio-open")
    others = [name for name in devices if name not in (group, "vfio")]
    other_open = {name: container_exec(shell, cid, f"exec 5<>{VFIO_DIR}/{name} && echo opened",
                                       f"vfio-open-{name}") for name in others}
    return {"pci": pci, "group": group, "container_dev_vfio": devices, "info": info,
            "open": opened if opened_rc == 0 else f"rc {opened_rc}: {opened}",
            "dev_listing": container_exec(shell, cid, f"ls -ln {VFIO_DIR}", "vfio-ls-l")[1],
            "others_open": {name: out if rc == 0 else f"rc {rc}: {out}" for name, (rc, out) in other_open.items()},
            "spec_devices": spec_devices(shell, cid), "checkpoint": checkpoint_entries(shell, pod),
            "dev_mounts": [line for line in container_exec(shell, cid, "cat /proc/self/mountinfo", "vfio-mounts")[1]
                           .splitlines() if " /dev" in line],
            "runtime": shell.check("runc --version 2>&1 | head -1 || true").strip(),
            # The container's own view, read from the guest through its init process (no exec involved).
            "init_dev_vfio": sorted(shell.check(f"ls /proc/{pid}/root{VFIO_DIR} 2>/dev/null || true").split()),
            "init_dev_mounts": [line for line in shell.check(f"cat /proc/{pid}/mountinfo").splitlines()
                                if " /dev" in line],
            "spec_dev_mounts": spec_dev_mounts(shell, cid),
            "mnt_ns": {"init": shell.check(f"readlink /proc/{pid}/ns/mnt").strip(),
                       "exec": container_exec(shell, cid, "readlink /proc/self/ns/mnt", "vfio-ns")[1],
                       "guest": shell.check("readlink /proc/self/ns/mnt").strip()}}


def spec_dev_mounts(shell: GuestShell, container_id: str) -> list[str]:
    """The mounts under /dev in the container's OCI spec."""
    info = json.loads(shell.check(f"ctr --address {CONTAINERD_SOCK} -n k8s.io containers info {container_id}"))
    mounts = (info.get("Spec") or {}).get("mounts") or []
    return [f"{m.get('destination')} {m.get('type')} {m.get('source')}" for m in mounts
            if str(m.get("destination", "")).startswith("/dev")]


def device_rules_only_for(seen: dict[str, Any], group: str) -> bool:
    """The devices our Allocate asked for are all the container was given: containerd's spec and the
    kubelet's checkpoint name /dev/vfio/vfio and the VF's group only, and any other group node present
    in the container's /dev/vfio refuses to open (the device cgroup)."""
    wanted = {f"{VFIO_DIR}/vfio", f"{VFIO_DIR}/{group}"}
    spec = {entry.split()[0] for entry in seen["spec_devices"]}
    kept = {d.split("->")[1] for entry in seen["checkpoint"] for d in entry["devices"]}
    refused = all("Operation not permitted" in out for out in seen["others_open"].values())
    return spec == wanted and kept == wanted and refused


def spec_devices(shell: GuestShell, container_id: str) -> list[str]:
    """The device nodes in the container's OCI spec as containerd stored it (what runc created)."""
    info = json.loads(shell.check(f"ctr --address {CONTAINERD_SOCK} -n k8s.io containers info {container_id}"))
    devices = ((info.get("Spec") or {}).get("linux") or {}).get("devices") or []
    return [f"{d.get('path')} {d.get('major')}:{d.get('minor')}" for d in devices]


def checkpoint_entries(shell: GuestShell, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The kubelet's device-manager checkpoint entries of the pod: device IDs and the Allocate response
    the kubelet kept (its devices are what it passes to the runtime)."""
    data = json.loads(shell.check(f"cat {CHECKPOINT}"))
    uid = pod["metadata"]["uid"]
    out = []
    for entry in (data.get("Data") or {}).get("PodDeviceEntries") or []:
        if entry.get("PodUID") != uid:
            continue
        response = pb.ContainerAllocateResponse.FromString(base64.b64decode(entry.get("AllocResp") or ""))
        out.append({"container": entry.get("ContainerName"), "resource": entry.get("ResourceName"),
                    "ids": entry.get("DeviceIDs"),
                    "devices": [f"{d.host_path}->{d.container_path}" for d in response.devices]})
    return out
