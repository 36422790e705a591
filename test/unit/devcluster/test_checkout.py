"""`sriovop dev` and `sriovop demo` find the source checkout in one place, and say what to do without one.

Host: none (temporary directories standing in for a checkout and for a wheel's site-packages).
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sriovop.cli import main
from sriovop.devcluster import binaries, checkout
from sriovop.devcluster.checkout import ENV_VAR, NotASourceCheckout, is_source_checkout, source_root

REPO = Path(__file__).resolve().parents[3]


def _fake_checkout(root: Path) -> Path:
    for d in ("hack", "manifests", "images", "sriovop/devcluster"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "setup.cfg").write_text("[metadata]\nname = sriovop\n")
    (root / "sriovop" / "__init__.py").write_text("")
    return root


def _fake_wheel_install(root: Path) -> Path:
    """site-packages/sriovop/devcluster/checkout.py: the package without the repository around it."""
    module = root / "lib" / "site-packages" / "sriovop" / "devcluster" / "checkout.py"
    module.parent.mkdir(parents=True)
    (module.parents[1] / "__init__.py").write_text("")
    module.write_text("")
    return module


def test_this_checkout_is_found_from_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert source_root() == REPO
    assert is_source_checkout(REPO)


def test_a_checkout_is_found_walking_up_from_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    root = _fake_checkout(tmp_path / "src")
    assert source_root(root / "sriovop" / "devcluster" / "checkout.py") == root


def test_the_environment_variable_names_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fake_checkout(tmp_path / "elsewhere")
    monkeypatch.setenv(ENV_VAR, str(root))
    # Wins over the walk, which from a wheel's site-packages would find nothing.
    assert source_root(_fake_wheel_install(tmp_path / "venv")) == root


def test_an_installed_wheel_gets_an_error_saying_how_to_point_at_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(NotASourceCheckout) as err:
        source_root(_fake_wheel_install(tmp_path / "venv"))
    message = err.value.format_message()
    assert "need a sriovop source checkout" in message and ENV_VAR in message
    assert isinstance(err.value, click.ClickException)
    # Callers that turn a missing source file into their own message keep catching it.
    assert isinstance(err.value, FileNotFoundError)


def test_an_environment_variable_naming_no_checkout_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hack").mkdir()
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(NotASourceCheckout, match=f"{ENV_VAR}=.* is not a sriovop source checkout"):
        source_root()


def test_the_cli_prints_the_error_without_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sriovop dev images build` from a wheel: the message, exit 1, no traceback."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    wheel_module = _fake_wheel_install(tmp_path / "venv")
    real = checkout.source_root
    monkeypatch.setattr("sriovop.devcluster.images.build.source_root", lambda: real(wheel_module))
    result = CliRunner().invoke(main, ["dev", "images", "build"])
    assert result.exit_code == 1, result.output
    assert "need a sriovop source checkout" in result.output and "Traceback" not in result.output


def test_building_missing_binaries_needs_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster binaries are built by hack/ scripts: from a wheel, the checkout error, not a path in
    site-packages; without permission to build, the message naming the cache variable as before."""
    monkeypatch.setenv("SRIOVOP_CONTROL_PLANE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "not-a-checkout"))
    with pytest.raises(NotASourceCheckout):
        binaries.find_binaries(build=True)
    with pytest.raises(FileNotFoundError, match="SRIOVOP_CONTROL_PLANE_DIR"):
        binaries.find_binaries(build=False)
