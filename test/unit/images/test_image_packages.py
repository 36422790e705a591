"""The benchmarks' child processes import only what the images install (test/bench/image_packages.py).

Host: none (a child interpreter from the development virtualenv, which has `rich` installed for the
lint tools while the images do not)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WRAPPER = REPO / "test" / "bench" / "image_packages.py"

PROBE = """
import json, sys
result = {}
for name in ("rich", "pygments", "structlog", "yaml", "json"):
    try:
        __import__(name)
        result[name] = "imported"
    except ImportError as exc:
        result[name] = str(exc)
result["argv"] = sys.argv[1:]
result["rich_loaded_by_structlog"] = "rich" in sys.modules
print(json.dumps(result))
"""


def test_a_child_sees_the_images_packages_and_not_the_dev_tools(tmp_path: Path) -> None:
    import importlib.util

    assert importlib.util.find_spec("rich") is not None, "the premise: the virtualenv has rich"
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    done = subprocess.run([sys.executable, str(WRAPPER), str(script), "--flag", "x"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structlog"] == result["yaml"] == result["json"] == "imported"
    assert "not installed in the images" in result["rich"]
    assert "not installed in the images" in result["pygments"]
    assert result["rich_loaded_by_structlog"] is False
    assert result["argv"] == ["--flag", "x"]


def test_the_allowed_list_is_the_pinned_image_requirements() -> None:
    sys.path.insert(0, str(WRAPPER.parent))
    try:
        import image_packages
    finally:
        sys.path.remove(str(WRAPPER.parent))
    allowed = image_packages.image_distributions()
    assert {"structlog", "pyyaml", "cryptography", "sriovop", "typing-extensions"} <= allowed
    assert "rich" not in allowed and "pytest" not in allowed
