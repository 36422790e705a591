"""The e2e-node test's igbvf resets (test/support/vm_pod_vf_reset.py) against a scripted guest shell: no
guest runs; the shell answers `ip -j link show net1` with the flags a script gives and records the resets."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from sriovop.devcluster.vmguest import GuestError
from test.support.vm_pod_vf_reset import carrier_on_all, reset_until_carrier

DOWN = ["BROADCAST", "MULTICAST"]
NO_CARRIER = ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
CARRIER = ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]


class ScriptedShell:
    """Flags for net1 come from `flags`, one list per `ip link show`; a reset moves to the next phase."""

    def __init__(self, phases: list[list[list[str]]], reset_rc: int = 0) -> None:
        self.phases = phases
        self.phase = 0
        self.resets: list[str] = []
        self.reset_rc = reset_rc
        self._answers: Iterator[list[str]] = iter(phases[0])

    def _flags(self) -> list[str]:
        # The last answer of a phase repeats (the link stays as it is until the next reset).
        last = self.phases[self.phase][-1]
        return next(self._answers, last)

    def run(self, cmd: str, timeout: float = 120) -> tuple[int, str, str]:
        if "ip link set net1 down && ip link set net1 up" in cmd:
            self.resets.append(cmd)
            if self.reset_rc:
                return self.reset_rc, "", "RTNETLINK answers: Operation not permitted"
            self.phase = min(self.phase + 1, len(self.phases) - 1)
            self._answers = iter(self.phases[self.phase])
            return 0, "", ""
        assert "ip -j link show net1" in cmd, cmd
        return 0, json.dumps([{"ifname": "net1", "flags": self._flags()}]), ""

    def check(self, cmd: str, timeout: float = 120) -> str:
        rc, out, err = self.run(cmd, timeout)
        if rc != 0:
            raise GuestError(f"guest: {cmd}: rc {rc}: {err.strip()}")
        return out


def test_a_carrier_at_once_needs_no_reset() -> None:
    shell = ScriptedShell([[CARRIER]])
    assert reset_until_carrier(shell, 42, attempts=3, wait_s=0.05) == {"resets": 0, "carrier": True}
    assert shell.resets == []


def test_the_carrier_after_the_second_reset() -> None:
    shell = ScriptedShell([[NO_CARRIER], [NO_CARRIER], [NO_CARRIER, CARRIER]])
    assert reset_until_carrier(shell, 42, attempts=5, wait_s=0.5) == {"resets": 2, "carrier": True}
    assert shell.resets == ["nsenter -t 42 -n sh -c 'ip link set net1 down && ip link set net1 up'"] * 2


def test_no_carrier_after_every_reset_is_reported_not_raised() -> None:
    shell = ScriptedShell([[NO_CARRIER]])
    assert reset_until_carrier(shell, 7, attempts=3, wait_s=0.05) == {"resets": 3, "carrier": False}
    assert len(shell.resets) == 3


def test_an_administratively_down_net1_is_never_reset() -> None:
    shell = ScriptedShell([[DOWN]])
    with pytest.raises(AssertionError, match="administratively down"):
        reset_until_carrier(shell, 7, attempts=3, wait_s=0.05)
    assert shell.resets == []


def test_a_failed_reset_command_fails_with_the_guest_s_words() -> None:
    shell = ScriptedShell([[NO_CARRIER]], reset_rc=2)
    with pytest.raises(GuestError, match="rc 2: RTNETLINK answers: Operation not permitted"):
        reset_until_carrier(shell, 7, attempts=3, wait_s=0.05)


class TwoVfShell:
    """Two pods' net1, each with its own carrier; pod 1's carrier goes again when pod 2's VF is first reset
    (one way to what an e2e-node run saw: vm-vf-a had its carrier back, then none when the ping ran)."""

    def __init__(self) -> None:
        self.carrier = {1: False, 2: False}
        self.resets: list[int] = []

    def run(self, cmd: str, timeout: float = 120) -> tuple[int, str, str]:
        pid = int(cmd.split()[2])
        if "ip link set net1 down && ip link set net1 up" in cmd:
            self.resets.append(pid)
            self.carrier[pid] = True
            if pid == 2 and self.resets.count(2) == 1:
                self.carrier[1] = False
            return 0, "", ""
        assert "ip -j link show net1" in cmd, cmd
        return 0, json.dumps([{"ifname": "net1", "flags": CARRIER if self.carrier[pid] else NO_CARRIER}]), ""

    def check(self, cmd: str, timeout: float = 120) -> str:
        return self.run(cmd, timeout)[1]


def test_carrier_on_all_resets_again_a_vf_that_lost_it_while_the_other_was_reset() -> None:
    shell = TwoVfShell()
    rounds = carrier_on_all(shell, {"a": 1, "b": 2}, attempts=2, wait_s=0.05)
    assert rounds == [{"a": {"resets": 1, "carrier": True}, "b": {"resets": 1, "carrier": True}},
                      {"a": {"resets": 1, "carrier": True}, "b": {"resets": 0, "carrier": True}}]
    assert shell.resets == [1, 2, 1] and all(shell.carrier.values())


def test_carrier_on_all_resets_nothing_when_every_vf_has_a_carrier() -> None:
    shell = TwoVfShell()
    shell.carrier = {1: True, 2: True}
    assert carrier_on_all(shell, {"a": 1, "b": 2}, attempts=2, wait_s=0.05) == []
    assert shell.resets == []


def test_carrier_on_all_gives_up_after_its_rounds_and_reports_them() -> None:
    shell = ScriptedShell([[NO_CARRIER]])
    shell.phases = [[NO_CARRIER]] * 100  # every reset leaves it without a carrier
    rounds = carrier_on_all(shell, {"a": 7}, rounds=2, attempts=2, wait_s=0.05)
    assert rounds == [{"a": {"resets": 2, "carrier": False}}] * 2 and len(shell.resets) == 4
