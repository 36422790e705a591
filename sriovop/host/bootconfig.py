"""The host's boot configuration: where kernel arguments for the next boot are written.

Upstream's kargs.sh uses `rpm-ostree kargs` on OSTree hosts and `grubby` elsewhere, and does nothing on
Ubuntu, so an argument added there never reaches /proc/cmdline and the node reboots in a loop. Here the
files are edited directly, under the host root, as grubby and update-grub leave them:

- BLS entries `boot/loader/entries/*.conf` (Fedora/RHEL/CentOS, systemd-boot): the `options` line of every
  entry, which is what the boot loader passes to the kernel;
- GRUB defaults `etc/default/grub`: `GRUB_CMDLINE_LINUX`, then `update-grub`/`grub2-mkconfig` (run in the
  host root) when no BLS entries exist, because grub.cfg is generated from it;
- OSTree (`run/ostree-booted`): `rpm-ostree kargs --append/--delete`, never the entries (OSTree owns them).

A host with none of these is an error naming what was looked for: rebooting it would not help. Whether the
boot loader really used the edit is checked after the reboot (/proc/cmdline), by the daemon's reboot guard.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path

import structlog

from sriovop.host.errors import HostError
from sriovop.host.kernelio import in_root, run_tool
from sriovop.host.paths import HostPaths

log = structlog.get_logger("sriovop.host.bootconfig")

BLS_DIR = "boot/loader/entries"
GRUB_DEFAULTS = "etc/default/grub"
OSTREE_BOOTED = "run/ostree-booted"
GRUB_VARIABLE = "GRUB_CMDLINE_LINUX"
#: grub.cfg generators, first found wins (Debian/Ubuntu, then RHEL-style, then plain GRUB).
GRUB_MKCONFIG = (("usr/sbin/update-grub", ["update-grub"]),
                 ("usr/sbin/grub2-mkconfig", ["grub2-mkconfig", "-o", "/boot/grub2/grub.cfg"]),
                 ("usr/sbin/grub-mkconfig", ["grub-mkconfig", "-o", "/boot/grub/grub.cfg"]))
_GRUB_LINE = re.compile(rf'^(\s*{GRUB_VARIABLE}=)(.*)$', re.MULTILINE)

Runner = Callable[[list[str]], str]


class BootConfigError(HostError):
    """The kernel arguments cannot be written for the next boot."""


def _edit_tokens(line: str, add: Iterable[str], remove: Iterable[str]) -> str:
    tokens = line.split()
    drop = set(remove)
    tokens = [t for t in tokens if t not in drop]
    tokens += [a for a in add if a not in tokens]
    return " ".join(tokens)


def bls_options(text: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "options":
            return value.strip()
    return None


def _edit_bls(text: str, add: Iterable[str], remove: Iterable[str]) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        key, _, value = line.strip().partition(" ")
        if key == "options":
            lines[i] = "options " + _edit_tokens(value, add, remove)
            break
    else:
        lines.append("options " + _edit_tokens("", add, remove))
    return "\n".join(lines) + "\n"


def grub_cmdline(text: str) -> str | None:
    m = _GRUB_LINE.search(text)
    if m is None:
        return None
    try:
        parts = shlex.split(m.group(2))
    except ValueError:
        return m.group(2).strip().strip('"')
    return " ".join(parts)


def _edit_grub(text: str, add: Iterable[str], remove: Iterable[str]) -> str:
    value = _edit_tokens(grub_cmdline(text) or "", add, remove)
    line = f'{GRUB_VARIABLE}="{value}"'
    if _GRUB_LINE.search(text):
        return _GRUB_LINE.sub(lambda _m: line, text, count=1)
    return text + ("" if text.endswith("\n") or not text else "\n") + line + "\n"


class BootConfig:
    def __init__(self, paths: HostPaths, run: Runner | None = None) -> None:
        self.paths = paths
        self.run: Runner = run or (lambda argv: run_tool(argv, timeout=300.0))

    @property
    def root(self) -> Path:
        return self.paths.root

    def bls_entries(self) -> list[Path]:
        return sorted((self.root / BLS_DIR).glob("*.conf"))

    @property
    def grub_defaults(self) -> Path:
        return self.root / GRUB_DEFAULTS

    @property
    def ostree(self) -> bool:
        return (self.root / OSTREE_BOOTED).exists()

    def kinds(self) -> list[str]:
        """What this host boots from, for messages: e.g. ['bls', 'grub-defaults']."""
        if self.ostree:
            return ["ostree"]
        found = ["bls"] if self.bls_entries() else []
        return found + (["grub-defaults"] if self.grub_defaults.is_file() else [])

    def next_boot_args(self) -> set[str] | None:
        """The arguments the next boot gets, as far as the files say (None: nothing found)."""
        if self.ostree:
            return None
        entries = self.bls_entries()
        if entries:
            return set((bls_options(entries[-1].read_text()) or "").split())
        if self.grub_defaults.is_file():
            return set((grub_cmdline(self.grub_defaults.read_text()) or "").split())
        return None

    def edit(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> list[str]:
        """Add and remove arguments for the next boot; returns what was edited (for the log)."""
        add, remove = sorted(set(add)), sorted(set(remove) - set(add))
        if not add and not remove:
            return []
        if self.ostree:
            argv = ["rpm-ostree", "kargs", *(f"--append-if-missing={a}" for a in add),
                    *(f"--delete-if-present={r}" for r in remove)]
            self._run(argv)
            return ["rpm-ostree kargs"]
        edited: list[str] = []
        entries = self.bls_entries()
        for entry in entries:
            before = entry.read_text()
            after = _edit_bls(before, add, remove)
            if after != before:
                entry.write_text(after)
                edited.append(str(entry.relative_to(self.root)))
        if self.grub_defaults.is_file():
            before = self.grub_defaults.read_text()
            after = _edit_grub(before, add, remove)
            if after != before:
                self.grub_defaults.write_text(after)
                edited.append(GRUB_DEFAULTS)
                if not entries:
                    edited += self._regenerate_grub_cfg()
        elif not entries:
            raise BootConfigError(
                f"cannot {'add ' + ' '.join(add) if add else 'remove ' + ' '.join(remove)}: the host has no boot "
                f"configuration the daemon can edit (looked for /{BLS_DIR}/*.conf, /{GRUB_DEFAULTS}, "
                f"/{OSTREE_BOOTED}); set the kernel arguments out of band")
        log.info("boot configuration edited", add=add, remove=remove, files=edited)
        return edited

    def _regenerate_grub_cfg(self) -> list[str]:
        for rel, argv in GRUB_MKCONFIG:
            if (self.root / rel).exists():
                self._run(argv)
                return [argv[0]]
        log.warning("no grub.cfg generator on the host; the boot loader must read the GRUB defaults itself",
                    looked_for=[rel for rel, _ in GRUB_MKCONFIG])
        return []

    def _run(self, argv: list[str]) -> None:
        try:
            self.run(in_root(self.root, argv))
        except OSError as e:
            raise BootConfigError(f"editing kernel arguments: {e.strerror or e}") from e
