"""images/Dockerfile is what `sriovop gen dockerfile` writes from the image list and follows the image
rules; the checker itself catches each kind of violation. Host: none (files of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.devcluster.images.dockerfile import render
from test.support.dockerfile_lint import lint, parse

DOCKERFILE = Path(__file__).resolve().parents[3] / "images" / "Dockerfile"
REQUIREMENTS = DOCKERFILE.parent / "requirements.txt"


def test_committed_dockerfile_is_generated_from_the_spec() -> None:
    assert DOCKERFILE.read_text() == render(), "stale: run `.venv/bin/sriovop gen dockerfile` and commit"


def test_check_flag_fails_on_a_stale_dockerfile(tmp_path: Path) -> None:
    out = tmp_path / "Dockerfile"
    out.write_text(render().replace("USER 65532:65532", "USER 0:0"))
    stale = CliRunner().invoke(main, ["gen", "dockerfile", "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "stale" in stale.output
    assert CliRunner().invoke(main, ["gen", "dockerfile", "--out", str(out)]).exit_code == 0
    assert out.read_text() == render()
    assert CliRunner().invoke(main, ["gen", "dockerfile", "--out", str(out), "--check"]).exit_code == 0


def test_project_dockerfile_is_clean() -> None:
    assert lint(DOCKERFILE.read_text(), nonroot_stages=("operator", "webhook")) == []


def test_project_dockerfile_has_the_three_entrypoints() -> None:
    _, stages = parse(DOCKERFILE.read_text())
    entry = {s.name: next((line for line in s.lines if line.startswith("ENTRYPOINT")), "") for s in stages}
    assert entry["operator"] == 'ENTRYPOINT ["sriovop"]'
    assert 'CMD ["operator"]' in next(s for s in stages if s.name == "operator").lines
    assert entry["webhook"] == 'ENTRYPOINT ["sriovop", "webhook"]'
    assert entry["config-daemon"] == 'ENTRYPOINT ["sriovop", "config-daemon"]'


def test_image_requirements_are_all_pinned() -> None:
    pins = [line for line in REQUIREMENTS.read_text().splitlines() if line and not line.startswith("#")]
    assert pins and all("==" in line for line in pins)
    names = {line.split("==")[0].lower().replace("_", "-") for line in pins}
    assert {"kubernetes", "pyroute2", "tenacity", "structlog", "prometheus-client", "click"} <= names


GOOD = """ARG BASE=python:3.11.11-slim-bookworm
FROM ${BASE} AS build
RUN pip install --no-cache-dir x
FROM build AS operator
USER 65532
"""


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        (GOOD.replace("3.11.11-slim-bookworm", "latest"), "is not pinned"),
        (GOOD.replace("3.11.11-slim-bookworm", "3.11-slim"), "is not pinned"),
        (GOOD.replace("USER 65532", "USER root"), "no non-root USER"),
        (GOOD.replace("USER 65532", ""), "no non-root USER"),
        (GOOD + "ENV API_TOKEN=abc\n", "possible secret"),
        (GOOD + "COPY admin.kubeconfig /root/.kube/config\n", "credential-like file"),
        (GOOD.replace("--no-cache-dir ", ""), "keeps a cache"),
        (GOOD + "RUN apt-get update && apt-get install -y curl\n", "/var/lib/apt/lists"),
    ],
)
def test_checker_catches(text: str, finding: str) -> None:
    findings = lint(text, nonroot_stages=("operator",))
    assert any(finding in f for f in findings), findings


def test_checker_accepts_digest_pins() -> None:
    text = GOOD.replace("python:3.11.11-slim-bookworm", "python@sha256:" + "a" * 64)
    assert lint(text, nonroot_stages=("operator",)) == []
