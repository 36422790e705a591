"""The one list of images (spec.py) agrees with images/Dockerfile and with the names manifests/ use.

`make images` builds from spec.py and Docker users build from the Dockerfile generated from it
(`sriovop gen dockerfile`); these tests parse the generated stages back and fail when the generator
writes a different entrypoint, user or package set than the list holds, or when an image name differs
from what the manifests and the operator's image environment variables pull. No host is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sriovop import __version__
from sriovop.devcluster.images.cni import CNI_IMAGES
from sriovop.devcluster.images.spec import ENV, IMAGES, ImageSpec, by_target
from sriovop.render import settings
from test.support.dockerfile_lint import EffectiveStage, effective, parse

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "images" / "Dockerfile"
DEPLOYMENT = REPO / "manifests" / "operator" / "deployment.yaml"


def _stage(target: str) -> EffectiveStage:
    _, stages = parse(DOCKERFILE.read_text())
    assert target in {s.name for s in stages}, f"images/Dockerfile has no stage {target!r}"
    return effective(stages, target)


@pytest.mark.parametrize("spec", IMAGES, ids=lambda s: s.target)
def test_dockerfile_stage_matches_the_spec(spec: ImageSpec) -> None:
    stage = _stage(spec.target)
    assert stage.entrypoint == list(spec.entrypoint)
    assert (stage.cmd or []) == list(spec.cmd)
    assert stage.user == spec.user
    assert stage.apt_packages == set(spec.packages)
    # The Dockerfile's base image sets PATH; the rest of the environment must be the same.
    assert stage.env == dict(e.split("=", 1) for e in ENV if not e.startswith("PATH="))


def test_effective_stage_follows_from_and_resets_cmd_on_entrypoint() -> None:
    text = """FROM debian:12.1.0 AS a
ENV A=1
RUN apt-get update && apt-get install -y --no-install-recommends x y && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["a"]
CMD ["c"]
USER 1
FROM a AS b
ENTRYPOINT ["b"]
RUN apt-get install -y z
"""
    _, stages = parse(text)
    b = effective(stages, "b")
    assert (b.entrypoint, b.cmd, b.user, b.env, b.apt_packages) == (["b"], None, "1", {"A": "1"}, {"x", "y", "z"})
    assert effective(stages, "a").cmd == ["c"]


def _deployment_images() -> dict[str, str]:
    """container name or env var -> image, from the shipped operator Deployment."""
    doc = yaml.safe_load(DEPLOYMENT.read_text())
    [container] = doc["spec"]["template"]["spec"]["containers"]
    found = {container["name"]: container["image"]}
    found |= {e["name"]: e["value"] for e in container["env"] if e["name"].endswith("_IMAGE") and "value" in e}
    return found


def test_image_names_are_the_ones_the_manifests_use() -> None:
    images = _deployment_images()
    assert images["sriov-network-operator"] == by_target("operator").name
    assert images[settings.ENV_CONFIG_DAEMON_IMAGE] == by_target("config-daemon").name
    assert images[settings.ENV_WEBHOOK_IMAGE] == by_target("webhook").name
    assert images[settings.ENV_INJECTOR_IMAGE] == by_target("webhook").name
    for cni in CNI_IMAGES:
        assert images[cni.env] == cni.name
    ours = {v for v in images.values() if v.startswith("ghcr.io/sriovop/")}
    assert ours == {s.name for s in IMAGES} | {c.name for c in CNI_IMAGES}, \
        "a manifest names a sriovop image that `make images` does not build"


def test_images_are_tagged_with_the_package_version() -> None:
    """`latest` would make the kubelet pull (default policy Always) the DaemonSets the operator renders."""
    assert {s.name.rsplit(":", 1)[1] for s in (*IMAGES, *CNI_IMAGES)} == {__version__}


def test_operator_deployment_runs_the_operator_image_as_its_user() -> None:
    doc = yaml.safe_load(DEPLOYMENT.read_text())
    pod = doc["spec"]["template"]["spec"]
    uid, gid = by_target("operator").user.split(":")
    assert (str(pod["securityContext"]["runAsUser"]), str(pod["securityContext"]["runAsGroup"])) == (uid, gid)
    assert pod["containers"][0]["command"][0] == by_target("operator").entrypoint[0]


def test_every_image_the_manifests_name_is_built() -> None:
    """Every image the shipped Deployment names is one `make images` builds: no stand-ins are left."""
    images = _deployment_images()
    built = {s.name for s in IMAGES} | {c.name for c in CNI_IMAGES}
    assert set(images.values()) <= built


@pytest.mark.parametrize("image", CNI_IMAGES, ids=lambda c: c.target)
def test_cni_image_stage_installs_its_plugin(image: Any) -> None:
    """The Dockerfile's CNI stages hold only the static shim and install the plugin the image is for."""
    stage = _stage(image.target)
    assert stage.entrypoint == list(image.entrypoint)
    assert stage.entrypoint[-1] == image.plugin
