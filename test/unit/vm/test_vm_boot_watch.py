"""The guest harness replaces a boot that prints nothing, once, and says so; QMP answers are read.

No QEMU here: RunningGuest is given a small shell script in place of hack/vm/run.sh, which stays
silent on its first run and boots on the second (a counter file in the job directory), and the QMP
test serves QEMU's side of the exchange on a unix socket.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from sriovop.devcluster import vmguest, vmqmp
from sriovop.devcluster.vmguest import GuestError, RunningGuest
from test.support.poll import wait_for

SILENT_THEN_BOOT = """
n=$(cat "$1/boots" 2>/dev/null || echo 0); echo $((n + 1)) > "$1/boots"
if [ "$n" = 0 ]; then exec sleep 600; fi
echo "SRIOVOP-GUEST-READY: uptime=1.5"; echo "hello"; echo "SRIOVOP-GUEST-EXIT: 0"
"""


@pytest.fixture
def stall_reports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fakes' stalls go to a list of their own, not the one the e2e summary prints."""
    reports: list[str] = []
    monkeypatch.setattr(vmguest, "STALLED_BOOTS", reports)
    return reports


def _guest(tmp_path: Path, script: str, **kwargs: float | int) -> RunningGuest:
    job = tmp_path / "job"
    job.mkdir()
    return RunningGuest(["sh", "-c", script, "sh", str(job)], job, **kwargs)  # type: ignore[arg-type]


def test_a_silent_boot_is_reported_and_replaced_once(tmp_path: Path, stall_reports: list[str]) -> None:
    # 5 s of silence: the second boot prints long before that even on a busy machine.
    guest = _guest(tmp_path, SILENT_THEN_BOOT, boot_silence=5.0, boot_attempts=2)
    guest.wait_for("hello", timeout=120)
    boots = (tmp_path / "job" / "boots").read_text().strip()
    rc, _ = guest.wait(120)  # removes the job directory
    assert rc == 0
    assert guest.output.strip() == "hello"
    assert len(guest.stalled_boots) == 1, guest.stalled_boots  # the boot that printed was kept
    assert boots == "2"
    assert guest.stalled_boots[0].startswith("boot 1 printed nothing in ")
    assert "QMP at " in guest.stalled_boots[0]  # the fake has no monitor: said, not raised
    assert "booting again (2)" in guest.progress
    assert stall_reports == guest.stalled_boots
    assert guest.boot_seconds is not None and guest.boot_started > guest.started


def test_the_last_silent_boot_is_left_to_the_callers_deadline(tmp_path: Path, stall_reports: list[str]) -> None:
    guest = _guest(tmp_path, SILENT_THEN_BOOT, boot_silence=1.0, boot_attempts=1)
    try:
        wait_for(lambda: bool(guest.stalled_boots), 120)
        with pytest.raises(GuestError) as err:
            guest.wait_for("hello", timeout=0.5)
        assert "boot 1 printed nothing" in str(err.value)
        assert len(stall_reports) == 1
        assert guest.running
        assert (tmp_path / "job" / "boots").read_text().strip() == "1"
    finally:
        guest.kill()
    assert not guest.running


def test_snapshot_reads_status_and_registers_over_qmp(tmp_path: Path) -> None:
    path = tmp_path / "qmp.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    asked: list[dict[str, object]] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("r") as reader:
            conn.sendall(b'{"QMP": {"version": {}}}\n')
            for line in reader:
                request = json.loads(line)
                asked.append(request)
                answers = {"qmp_capabilities": {}, "query-status": {"running": True, "status": "running"},
                           "human-monitor-command": "RIP=ffffffff81000000\r\n"}
                conn.sendall(b'{"event": "RTC_CHANGE"}\n')  # an event before the reply is skipped
                conn.sendall(json.dumps({"return": answers[str(request["execute"])]}).encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    text = vmqmp.snapshot(path)
    server.close()
    assert [a["execute"] for a in asked] == ["qmp_capabilities", "query-status", "human-monitor-command"]
    assert 'query-status: {"running": true, "status": "running"}' in text
    assert "RIP=ffffffff81000000" in text


def test_snapshot_of_a_missing_monitor_says_so(tmp_path: Path) -> None:
    assert vmqmp.snapshot(tmp_path / "absent.sock").startswith(f"QMP at {tmp_path / 'absent.sock'} did not answer")
