"""Run inside the QEMU guest (real igb/igbvf): the static shim against `sriovop cni-server`, ADD/DEL of
an igbvf VF into fresh network namespaces, printed as one `SRIOVOP-RESULT <json>` line.

argv: SHIM_BINARY CYCLES. Uses the host's venv and host-local IPAM (/usr/lib/cni) over 9p.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PF = "eth0"
PF_PCI = "0000:01:00.0"
SOCKETS = Path("/run/sriovop/cni")
BIN = Path("/run/cni-bin")
CNI_PATHS = ":".join(d for d in ("/usr/lib/cni", "/opt/cni/bin") if Path(d, "host-local").exists())


def sh(cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=120, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{cmd}: rc {done.returncode}: {done.stderr.strip()}")
    return done


def wait(what: str, cond: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def vf_netdev(pci: str) -> str | None:
    net = Path("/sys/bus/pci/devices") / pci / "net"
    names = sorted(os.listdir(net)) if net.is_dir() else []
    return names[0] if names else None


def pf_vf(index: int) -> dict[str, Any]:
    [link] = json.loads(sh(f"ip -j -d link show {PF}").stdout)
    for vf in link.get("vfinfo_list", []):
        if vf.get("vf") == index:
            return dict(vf)
    raise RuntimeError(f"{PF} reports no VF {index}")


def shim(command: str, conf: dict[str, Any], netns: str, cid: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_IFNAME": "net1",
           "CNI_NETNS": f"/var/run/netns/{netns}" if netns else "", "CNI_PATH": CNI_PATHS,
           "SRIOVOP_CNI_SOCKET_DIR": str(SOCKETS), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    started = time.monotonic()
    done = subprocess.run([str(BIN / "sriov")], input=json.dumps(conf), env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    return done, time.monotonic() - started


def pod_view(netns: str) -> dict[str, Any]:
    [link] = json.loads(sh(f"ip -n {netns} -j addr show net1").stdout)
    driver = sh(f"ip netns exec {netns} readlink -f /sys/class/net/net1/device/driver").stdout.strip()
    pci = sh(f"ip netns exec {netns} readlink -f /sys/class/net/net1/device").stdout.strip()
    return {"mac": link["address"], "up": "UP" in link["flags"], "driver": os.path.basename(driver),
            "pci": os.path.basename(pci),
            "ips": [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a["family"] == "inet"]}


def main() -> None:
    shim_binary, cycles = Path(sys.argv[1]), int(sys.argv[2])
    out: dict[str, Any] = {}
    sh(f"ip link set {PF} up")
    sh(f"echo 2 > /sys/bus/pci/devices/{PF_PCI}/sriov_numvfs")
    vf_pci = os.path.basename(os.path.realpath(f"/sys/bus/pci/devices/{PF_PCI}/virtfn0"))
    wait("the VF netdev", lambda: vf_netdev(vf_pci) is not None)
    host_name = vf_netdev(vf_pci)
    host_mac = Path(f"/sys/class/net/{host_name}/address").read_text().strip()
    out["vf"] = {"pci": vf_pci, "name": host_name, "mac": host_mac,
                 "driver": os.path.basename(os.path.realpath(f"/sys/bus/pci/devices/{vf_pci}/driver"))}
    BIN.mkdir(parents=True, exist_ok=True)
    (BIN / "sriov").symlink_to(shim_binary)  # invoked as `sriov`: the shim picks the socket by its name
    log = open("/run/cni.log", "w")  # noqa: SIM115 (the server's stderr for its whole life)
    server = subprocess.Popen([str(Path(sys.executable).parent / "sriovop"), "cni-server", "--socket-dir",
                               str(SOCKETS), "--plugins", "sriov", "--state-dir", "/run/cni-state",
                               "--log-format", "console"], stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait("the cni-server socket", (SOCKETS / "sriov.sock").exists, timeout=300)
        conf = {"cniVersion": "1.0.0", "name": "igb-e2e", "type": "sriov", "deviceID": vf_pci, "vlan": 100,
                "mac": "02:00:00:00:aa:01",
                "ipam": {"type": "host-local", "subnet": "10.88.0.0/24", "dataDir": "/run/ipam"}}
        sh("ip netns add pod1")
        out["pf_vf_before"] = pf_vf(0)
        add, _ = shim("ADD", conf, "pod1", "c1")
        out["add"] = {"rc": add.returncode, "stdout": add.stdout, "stderr": add.stderr}
        if add.returncode == 0:
            out["pod"] = pod_view("pod1")
            out["pf_vf_after_add"] = pf_vf(0)
            out["host_has_vf_name_after_add"] = Path(f"/sys/class/net/{host_name}").exists()
            dele, _ = shim("DEL", conf, "pod1", "c1")
            out["del"] = {"rc": dele.returncode, "stdout": dele.stdout, "stderr": dele.stderr}
            name = vf_netdev(vf_pci)
            out["after_del"] = {"name": name, "mac": Path(f"/sys/class/net/{name}/address").read_text().strip()
                                if name else None, "pf_vf": pf_vf(0)}
            # The pod dies without a DEL first: the kernel hands the VF back to the host (as net1).
            sh("ip netns add pod2")
            add2, _ = shim("ADD", conf, "pod2", "c2")
            sh("ip netns del pod2")
            wait("the VF back in the host", lambda: vf_netdev(vf_pci) is not None, timeout=60)
            out["returned_by_kernel_as"] = vf_netdev(vf_pci)
            del2, _ = shim("DEL", conf, "pod2", "c2")
            name = vf_netdev(vf_pci)
            out["dead_netns_del"] = {"add_rc": add2.returncode, "add_stdout": add2.stdout, "rc": del2.returncode,
                                     "stdout": del2.stdout,
                                     "name": name, "mac": Path(f"/sys/class/net/{name}/address").read_text().strip()
                                     if name else None}
            add_seconds = []
            out["cycle_errors"] = []
            for i in range(cycles):
                sh(f"ip netns add t{i}")
                timed, seconds = shim("ADD", conf, f"t{i}", f"t{i}")
                if timed.returncode != 0:
                    out["cycle_errors"].append(f"ADD {i}: {timed.stdout}")
                else:
                    add_seconds.append(seconds)
                dele = shim("DEL", conf, f"t{i}", f"t{i}")[0]
                if dele.returncode != 0:
                    out["cycle_errors"].append(f"DEL {i}: {dele.stdout}")
                sh(f"ip netns del t{i}")
            out["add_seconds"] = add_seconds
            out["add_median_seconds"] = statistics.median(add_seconds) if add_seconds else None
            name = vf_netdev(vf_pci)
            out["final"] = {"name": name, "mac": Path(f"/sys/class/net/{name}/address").read_text().strip()
                            if name else None, "state_files": sorted(str(p) for p in Path("/run/cni-state").rglob("*")
                                                                      if p.is_file() and "vf_lock" not in p.parts)}
    except Exception as e:  # the record so far is what the test needs to say what went wrong
        out["error"] = repr(e)
    finally:
        server.terminate()
        server.wait(60)
        log.close()
        out["server_log_tail"] = Path("/run/cni.log").read_text()[-3000:]
    print("SRIOVOP-RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
