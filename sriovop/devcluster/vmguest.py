"""Drive the QEMU guest (hack/vm/run.sh): for the e2e tests and for `sriovop dev cluster up --vm-nodes`.

The guest boots a Debian kernel with emulated Intel 82576 (igb) PFs and runs one shell command chrooted
into a copy-on-write view of this host's root, so the repo, the venv and iproute2 are the host's own.
Two ways to use it:

    rc, console = GuestVM(igb=1).run("cat /sys/class/net/eth0/device/sriov_totalvfs", timeout=120)

    with GuestVM(igb=1, apiserver_port=cp_port, files={"kubeconfig": guest_kubeconfig(kc)}).start(
            "exec /repo/.venv/bin/sriovop config-daemon --kubeconfig /run/job/kubeconfig") as g:
        g.wait_for(r"started", timeout=120)     # meanwhile the test talks to the API server
        rc, console = g.stop()                   # SIGTERM to the command's process group, then poweroff

Inside the guest: files passed in `files` are at /run/job/<name>; `env` is exported before the command;
the guest reaches the host's apiserver at https://10.0.2.100:6443 (see `guest_kubeconfig`).
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

import structlog
import yaml

from sriovop.devcluster import vmqmp

REPO = Path(__file__).resolve().parents[2]
HACK_VM = REPO / "hack" / "vm"
GUEST_APISERVER = "10.0.2.100:6443"
READY_RE = re.compile(r"SRIOVOP-GUEST-READY: uptime=([0-9.]+)")
EXIT_RE = re.compile(r"SRIOVOP-GUEST-EXIT: (-?\d+)")
RESERVED_JOB_FILES = ("cmd", "env", "rc", "stop")
TIMEOUT_RC = 124
NO_EXIT_RC = 125
#: A boot whose console stays empty this long is stalled. The init prints its first line a few seconds
#: after QEMU starts under TCG (READY after 11-14 s); on a machine with a load average in the hundreds,
#: tens of seconds. Silence past this is QEMU or the host, before any of our code ran in the guest.
BOOT_SILENCE_S = 150.0
#: Boots tried when a boot stays silent: the command has not started, so booting again repeats nothing.
BOOT_ATTEMPTS = 2

log = structlog.get_logger(__name__)
#: Every stalled-boot report of this process, for a test run's summary (a replaced boot passes quietly).
STALLED_BOOTS: list[str] = []


class GuestError(AssertionError):
    """The guest did not get where the test needed it; the message carries the console tail."""


class GuestResult(NamedTuple):
    rc: int
    console: str


_live: weakref.WeakSet[RunningGuest] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for guest in list(_live):
        guest.kill()


_setup_lock = threading.Lock()
_setup_seconds: float | None = None


def ensure_setup() -> float:
    """Run hack/vm/setup.sh once per process (install QEMU, fetch kernel, build initramfs).

    Returns the seconds that first call took, so callers can report cold vs warm preparation.
    """
    global _setup_seconds
    with _setup_lock:
        if _setup_seconds is None:
            t0 = time.monotonic()
            proc = subprocess.run([str(HACK_VM / "setup.sh")], capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise GuestError(f"hack/vm/setup.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
            _setup_seconds = time.monotonic() - t0
        return _setup_seconds


def guest_kubeconfig(kubeconfig: Path | str, server: str = GUEST_APISERVER) -> str:
    """The given kubeconfig, rewritten to reach the apiserver from inside the guest.

    The guest sees the apiserver at 10.0.2.100 (QEMU's guestfwd), an address its serving certificate
    does not name, so `tls-server-name: localhost` makes TLS verify against a SAN it does have.
    Credentials must be embedded (`*-data`): the guest's /tmp is not the host's.
    """
    config = yaml.safe_load(Path(kubeconfig).read_text())
    for entry in config.get("clusters", []):
        cluster = entry["cluster"]
        cluster["server"] = f"https://{server}"
        cluster["tls-server-name"] = "localhost"
    for entry in config.get("users", []):
        for key in ("client-certificate", "client-key", "token-file"):
            if key in entry.get("user", {}):
                raise ValueError(f"kubeconfig user {entry.get('name')!r}: {key} is a file path; embed it as data")
    for entry in config.get("clusters", []):
        if "certificate-authority" in entry["cluster"]:
            raise ValueError(f"kubeconfig cluster {entry.get('name')!r}: certificate-authority must be embedded")
    return str(yaml.safe_dump(config))


class GuestVM:
    """Configuration of one guest boot; `run` or `start` boots it (each call is a fresh boot)."""

    def __init__(
        self,
        igb: int = 1,
        apiserver_port: int | None = None,
        *,
        env: Mapping[str, str] | None = None,
        files: Mapping[str, str | bytes] | None = None,
        mem_mb: int = 1024,
        smp: int = 2,
        accel: str = "auto",
        hostname: str = "sriovop-e2e",
        iommu: bool = False,
        cmdline: str | None = None,
        persist: Path | None = None,
    ) -> None:
        if not 0 <= igb <= 4:
            raise ValueError(f"igb: expected 0..4 PFs, got {igb}")
        for name in files or {}:
            if not name or "/" in name or name.startswith(".") or name in RESERVED_JOB_FILES:
                raise ValueError(f"files: {name!r} must be a plain file name other than "
                                 f"{', '.join(RESERVED_JOB_FILES)}")
        if accel not in ("auto", "kvm", "tcg"):
            raise ValueError(f"accel: expected auto, kvm or tcg, got {accel!r}")
        for key in env or {}:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"env: {key!r} is not a shell variable name")
        self.igb = igb
        self.apiserver_port = apiserver_port
        self.env = dict(env or {})
        self.files = dict(files or {})
        self.mem_mb = mem_mb
        self.smp = smp
        self.accel = accel
        self.hostname = hostname
        self.iommu = iommu
        #: The kernel command line a boot loader chose (run.sh appends nohz=off under TCG); None: run.sh's default.
        self.cmdline = cmdline
        #: Directory whose boot/ and state/ are the guest's /boot and /etc/sriov-operator (see vm_boot.py).
        self.persist = persist

    def run(self, cmd: str, timeout: float = 300) -> GuestResult:
        """Boot, run `cmd` to completion, power off. rc 124 = timeout, 125 = guest gave no exit code."""
        guest = self.start(cmd, timeout=timeout)
        try:
            return guest.wait(timeout + 30)
        finally:
            guest.kill()

    def start_kubelet_host(self, cmd: str, timeout: float = 600, console_log: Path | None = None) -> RunningGuest:
        """`start` after hack/vm/kernel-prep.sh (shared mounts, cgroup v2, modules, forwarding): what a
        guest needs before it runs a kubelet or a control plane."""
        return self.start(f". {HACK_VM / 'kernel-prep.sh'}\n{cmd}", timeout=timeout, console_log=console_log)

    def start(self, cmd: str, timeout: float = 600, console_log: Path | None = None) -> RunningGuest:
        """Boot and start `cmd` without waiting for it (a daemon); the VM is killed after `timeout`.
        With `console_log` the console is also appended to that file, for processes other than this one
        (a dev cluster's guest is owned by its supervisor; `sriovop demo pod` reads the console there).
        A boot that prints nothing for BOOT_SILENCE_S is reported (with QEMU's own view) and tried again."""
        ensure_setup()
        job = Path(tempfile.mkdtemp(prefix="sriovop-vm-job-"))
        (job / "cmd").write_text(cmd + "\n")
        (job / "env").write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.env.items()))
        for name, content in self.files.items():
            path = job / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        argv = [str(HACK_VM / "run.sh"), "--igb", str(self.igb), "--timeout", str(int(timeout)),
                "--mem", str(self.mem_mb), "--smp", str(self.smp), "--accel", self.accel,
                "--hostname", self.hostname, "--job", str(job)]
        if self.apiserver_port is not None:
            argv += ["--apiserver", str(self.apiserver_port)]
        if self.iommu:
            argv.append("--iommu")
        if self.cmdline is not None:
            argv += ["--cmdline", self.cmdline]
        if self.persist is not None:
            argv += ["--persist", str(self.persist)]
        return RunningGuest(argv, job, console_log)


GuestFactory = Callable[..., GuestVM]
"""What the e2e `cluster_guest` fixture returns: `make(node=, igb=, kubeconfig=, env=, files=, **GuestVM options)`."""


class RunningGuest:
    """A booted (or booting) guest; collects the console while the test does other things."""

    def __init__(self, argv: list[str], job: Path, console_log: Path | None = None, *,
                 boot_silence: float = BOOT_SILENCE_S, boot_attempts: int = BOOT_ATTEMPTS) -> None:
        self.job = job
        self._argv = argv
        self._console_log = open(console_log, "a") if console_log is not None else None  # noqa: SIM115
        self.started = time.monotonic()
        #: When the current boot started (later than `started` after a stalled boot was replaced).
        self.boot_started = self.started
        self.ready_at: float | None = None
        self.guest_uptime_at_ready: float | None = None
        self.exited_at: float | None = None
        #: One line per boot that stayed silent and was replaced, with QEMU's state at the time.
        self.stalled_boots: list[str] = []
        self._buf: list[str] = []
        self._boot_lines = 0
        self._progress: list[str] = []
        self._cond = threading.Condition()
        self._replacing = False
        self._closed = False
        self._boot_silence = boot_silence
        self._boots_left = boot_attempts - 1
        with self._cond:
            self._spawn()
        threading.Thread(target=self._watch_boot, daemon=True).start()
        _live.add(self)

    def _spawn(self) -> None:
        """Start run.sh and its console readers (caller holds the condition)."""
        self._proc = subprocess.Popen(
            self._argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        self._boot_lines = 0
        self.boot_started = time.monotonic()
        proc = self._proc
        self._readers = [
            threading.Thread(target=self._pump_console, args=(proc,), daemon=True),
            threading.Thread(target=self._pump_progress, args=(proc,), daemon=True),
        ]
        for t in self._readers:
            t.start()

    # ---- a boot that stays silent ----------------------------------------------------------------
    def _silent_boot(self) -> subprocess.Popen[bytes] | None:
        """Wait until the current boot prints, exits or stays silent too long; the silent one's process."""
        with self._cond:
            while True:
                if self._closed or self._boot_lines or self._proc.poll() is not None:
                    return None
                left = self.boot_started + self._boot_silence - time.monotonic()
                if left <= 0:
                    self._replacing = self._boots_left > 0
                    return self._proc
                self._cond.wait(min(left, 1.0))

    def _watch_boot(self) -> None:
        while (proc := self._silent_boot()) is not None:
            qemu = vmqmp.snapshot(self.job / "qmp.sock")
            waited = round(time.monotonic() - self.boot_started)
            report = f"boot {len(self.stalled_boots) + 1} printed nothing in {waited} s; QEMU: {qemu}"
            log.warning("guest boot stalled", job=str(self.job), replaced=self._replacing, qemu=qemu)
            with self._cond:
                self.stalled_boots.append(report)
                STALLED_BOOTS.append(report)
                self._progress.append(f"[harness] {report}\n")
                if not self._replacing:
                    return  # the last attempt: the caller's own deadline reports it, with this line
            _kill_group(proc)
            with self._cond:
                self._boots_left -= 1
                self._replacing = False
                if self._closed:
                    return
                (self.job / "qmp.sock").unlink(missing_ok=True)
                self._spawn()
                self._progress.append(f"[harness] booting again ({len(self.stalled_boots) + 1})\n")
                self._cond.notify_all()

    def _alive(self) -> bool:
        """Still booting or running (caller holds the condition); a boot being replaced counts."""
        return self._replacing or self._proc.poll() is None or self._readers[0].is_alive()

    # ---- output ----------------------------------------------------------------------------------
    def _pump_console(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode(errors="replace").replace("\r", "")
            with self._cond:
                self._buf.append(line)
                self._boot_lines += 1
                if self._console_log is not None:
                    self._console_log.write(line)
                    self._console_log.flush()
                if self.ready_at is None and (m := READY_RE.search(line)):
                    self.ready_at = time.monotonic()
                    self.guest_uptime_at_ready = float(m.group(1))
                self._cond.notify_all()

    def _pump_progress(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            with self._cond:
                self._progress.append(raw.decode(errors="replace"))

    @property
    def console(self) -> str:
        """Everything the guest printed so far (kernel, init, the command)."""
        with self._cond:
            return "".join(self._buf)

    @property
    def output(self) -> str:
        """Only what the command printed: the console between the READY and EXIT lines."""
        text = self.console
        start = READY_RE.search(text)
        body = text[start.end():] if start else text
        end = EXIT_RE.search(body)
        return (body[: end.start()] if end else body).lstrip("\n")

    @property
    def pid(self) -> int:
        """The pid (and process group) of run.sh, QEMU's wrapper: what `dev cluster down` kills when the
        guest's owner is gone."""
        return self._proc.pid

    @property
    def running(self) -> bool:
        with self._cond:
            return self._replacing or self._proc.poll() is None

    @property
    def boot_seconds(self) -> float | None:
        """Host wall time from QEMU start to the guest being ready to run the command (this boot)."""
        return None if self.ready_at is None else self.ready_at - self.boot_started

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """Block until the console matches `pattern` (a regex); fail with the console tail otherwise."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = rx.search("".join(self._buf))
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or not self._alive():
                    break
                self._cond.wait(min(left, 0.5))
        state = "running" if self._proc.poll() is None else f"exited {self._proc.returncode}"
        raise GuestError(f"guest console never matched {pattern!r} within {timeout}s (qemu {state})"
                         f"\n--- console tail ---\n{self.console[-4000:]}\n--- harness ---\n{self.progress[-2000:]}")

    @property
    def progress(self) -> str:
        with self._cond:
            return "".join(self._progress)

    # ---- lifecycle -------------------------------------------------------------------------------
    def _wait_last_boot(self, timeout: float) -> int:
        """Wait for the QEMU of the last boot to exit (a stalled boot's replacement is waited for too)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                proc = self._proc
            rc = proc.wait(max(0.0, deadline - time.monotonic()))
            with self._cond:
                while self._replacing and time.monotonic() < deadline:
                    self._cond.wait(1.0)
                if self._proc is proc and not self._replacing:
                    return rc
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self._argv, timeout)

    def wait(self, timeout: float) -> GuestResult:
        """Wait for the guest to power off; returns the command's exit code and the full console."""
        try:
            rc = self._wait_last_boot(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = TIMEOUT_RC
        except BaseException:  # Ctrl-C or a failing test: never leave a QEMU behind
            self.kill()
            raise
        for t in self._readers:
            t.join(5)
        self.exited_at = time.monotonic()
        self._cleanup()
        return GuestResult(rc, self.console)

    def stop(self, timeout: float = 120) -> GuestResult:
        """Ask the guest's init to SIGTERM the command (then SIGKILL after 60 s) and power off."""
        if self._proc.poll() is None:
            (self.job / "stop").touch()
        return self.wait(timeout)

    def kill(self) -> None:
        """Kill QEMU and its wrapper (our own process group only); no boot is tried after this."""
        with self._cond:
            self._closed = True
            proc = self._proc
        _kill_group(proc)
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.job, ignore_errors=True)

    def __enter__(self) -> RunningGuest:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._proc.poll() is None:
            if exc_type is None:
                self.stop()
            else:
                self.kill()
        else:
            self._cleanup()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL run.sh's process group (QEMU with it) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait(10)
