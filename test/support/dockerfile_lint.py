"""A small Dockerfile checker for the rules the project cares about (no hadolint here).

Rules: every base image is pinned (an exact version tag with a patch number, or a digest; never
`latest`); each runtime stage named in `nonroot_stages` ends with a non-root USER; nothing that looks
like a secret is baked in; package caches are not kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_PINNED_TAG = re.compile(r":\d+\.\d+\.\d+[\w.-]*$")
_SECRET_WORDS = re.compile(r"(PASSWORD|SECRET|TOKEN|PRIVATE_KEY|API_KEY|AWS_ACCESS)", re.IGNORECASE)
_SECRET_FILES = re.compile(r"(\.pem|\.key|id_rsa|kubeconfig|\.env)(\s|$)", re.IGNORECASE)


@dataclass
class Stage:
    name: str
    base: str
    user: str | None = None
    lines: list[str] = field(default_factory=list)


def _logical_lines(text: str) -> list[str]:
    out: list[str] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in _logical_lines(text):
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip()
        elif instr == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            base = words[0]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name=name, base=base))
        elif stages:
            stages[-1].lines.append(line)
            if instr == "USER":
                stages[-1].user = rest.strip()
    return args, stages


def _resolve(base: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), base)


def lint(text: str, nonroot_stages: tuple[str, ...]) -> list[str]:
    args, stages = parse(text)
    names = {s.name for s in stages}
    findings: list[str] = []
    if not stages:
        return ["no FROM instruction"]
    for stage in stages:
        base = _resolve(stage.base, args)
        built_on_stage = base in names or base == "scratch"  # scratch is empty, not a pulled image
        if not built_on_stage and "@sha256:" not in base and not _PINNED_TAG.search(base):
            findings.append(f"stage {stage.name}: base image {base!r} is not pinned to a version or digest")
        for line in stage.lines:
            instr = line.split(" ", 1)[0].upper()
            if instr in ("ENV", "ARG") and _SECRET_WORDS.search(line):
                findings.append(f"stage {stage.name}: possible secret baked in: {line!r}")
            if instr in ("COPY", "ADD") and _SECRET_FILES.search(line):
                findings.append(f"stage {stage.name}: copies a credential-like file: {line!r}")
            if instr == "RUN" and "pip install" in line and "--no-cache-dir" not in line:
                findings.append(f"stage {stage.name}: pip install without --no-cache-dir keeps a cache")
            if instr == "RUN" and "apt-get install" in line and "rm -rf /var/lib/apt/lists" not in line:
                findings.append(f"stage {stage.name}: apt-get install without removing /var/lib/apt/lists")
    for wanted in nonroot_stages:
        stage = next((s for s in stages if s.name == wanted), None)
        if stage is None:
            findings.append(f"stage {wanted} is missing")
        elif stage.user is None or stage.user.split(":")[0] in ("0", "root"):
            findings.append(f"stage {wanted}: no non-root USER (found {stage.user!r})")
    return findings


@dataclass
class EffectiveStage:
    """What a stage's image runs and contains, following FROM through the stages it is built on."""

    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    user: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    apt_packages: set[str] = field(default_factory=set)


def _apt_packages(run: str) -> set[str]:
    found: set[str] = set()
    for command in run.split("&&"):
        words = command.split()
        if words[:2] == ["apt-get", "install"]:
            found |= {w for w in words[2:] if not w.startswith("-")}
    return found


def _env(rest: str) -> dict[str, str]:
    pairs = [word.split("=", 1) for word in rest.split()]
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def effective(stages: list[Stage], name: str) -> EffectiveStage:
    """Resolve `name`'s ENTRYPOINT/CMD/USER/ENV and apt-get installs through its FROM chain.

    As in Docker, an ENTRYPOINT set in a stage clears the CMD it inherited.
    """
    by_name = {s.name: s for s in stages}
    chain: list[Stage] = []
    stage: Stage | None = by_name[name]
    while stage is not None:
        chain.insert(0, stage)
        stage = by_name.get(stage.base)
    out = EffectiveStage()
    for stage in chain:
        for line in stage.lines:
            instr, _, rest = line.partition(" ")
            instr = instr.upper()
            if instr == "ENTRYPOINT":
                out.entrypoint, out.cmd = json.loads(rest), None
            elif instr == "CMD":
                out.cmd = json.loads(rest)
            elif instr == "USER":
                out.user = rest.strip()
            elif instr == "ENV":
                out.env.update(_env(rest))
            elif instr == "RUN":
                out.apt_packages |= _apt_packages(rest)
    return out
