"""The deployment manifests: RBAC hygiene, kustomization completeness, the operator's security settings,
and the generated supported-nic-ids ConfigMap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from sriovop.api.v1 import consts
from sriovop.api.v1.supportednics import DEFAULT_SUPPORTED_NIC_IDS
from sriovop.cli import main
from sriovop.commands.gen import supported_nics_yaml
from sriovop.demo.identities import COMPONENTS
from sriovop.render import metrics_exporter, workloads

REPO = Path(__file__).resolve().parents[3]
MANIFESTS = REPO / "manifests"
#: Directories of manifests/ that belong to other kustomizations or are not deployed (monitoring is opt-in).
NOT_DEPLOYED = ("samples", "demo", "monitoring")


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _all_docs() -> list[dict[str, Any]]:
    return [d for p in sorted(MANIFESTS.rglob("*.yaml")) if p.name != "kustomization.yaml"
            and p.relative_to(MANIFESTS).parts[0] not in NOT_DEPLOYED for d in _docs(p)]


def _of_kind(*kinds: str) -> list[dict[str, Any]]:
    return [d for d in _all_docs() if d["kind"] in kinds]


def _kustomize_files(directory: Path) -> set[Path]:
    """Files a kustomization pulls in, following directory resources into their own kustomization."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    out: set[Path] = set()
    for entry in spec.get("resources") or []:
        path = (directory / entry).resolve()
        assert path.exists(), f"{directory / 'kustomization.yaml'} lists {entry!r}, which does not exist"
        out |= _kustomize_files(path) if path.is_dir() else {path}
    return out


def test_no_rule_uses_a_wildcard() -> None:
    roles = _of_kind("Role", "ClusterRole")
    assert roles
    for role in roles:
        for i, rule in enumerate(role.get("rules") or []):
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                values = rule.get(key) or []
                where = f"{role['kind']} {role['metadata']['name']} rule {i}: {key}"
                assert not any("*" in str(v) for v in values), where
            assert rule.get("verbs"), f"{role['metadata']['name']} rule {i} has no verbs"
            assert not rule.get("nonResourceURLs"), f"{role['metadata']['name']} rule {i}: nonResourceURLs"


def test_no_role_grants_escalation_verbs_or_secrets() -> None:
    """Nothing here may mint permissions (escalate/bind/impersonate) or touch RBAC. The only Secrets
    anyone may touch are the operator's own webhook-certificate Secrets, in its namespace, by name:
    no list or watch, so no other Secret can be read."""
    for role in _of_kind("Role", "ClusterRole"):
        for rule in role.get("rules") or []:
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), role["metadata"]["name"]
            assert "rbac.authorization.k8s.io" not in rule["apiGroups"], role["metadata"]["name"]
            if "secrets" not in rule.get("resources", []):
                continue
            where = f"{role['kind']} {role['metadata']['name']}"
            assert (role["kind"], role["metadata"]["name"]) == ("Role", "sriov-network-operator"), where
            assert rule["resources"] == ["secrets"], where
            if rule.get("resourceNames"):
                assert set(rule["verbs"]) == {"get", "update"}, where
                assert set(rule["resourceNames"]) == {"sriov-network-operator-webhook-ca", "operator-webhook-cert",
                                                      "network-resources-injector-cert"}, where
            else:
                assert rule["verbs"] == ["create"], where


def test_resource_names_are_never_paired_with_create_or_list_only() -> None:
    """RBAC cannot check a name on create (the name is not in the URL): such a rule would deny it."""
    for role in _of_kind("Role", "ClusterRole"):
        for rule in role.get("rules") or []:
            if rule.get("resourceNames"):
                assert "create" not in rule["verbs"], role["metadata"]["name"]


def test_every_service_account_referenced_by_a_binding_exists() -> None:
    accounts = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in _of_kind("ServiceAccount")}
    bindings = _of_kind("RoleBinding", "ClusterRoleBinding")
    assert bindings
    for binding in bindings:
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount", binding["metadata"]["name"]
            assert (subject["namespace"], subject["name"]) in accounts, (binding["metadata"]["name"], subject)


def test_every_binding_refers_to_a_role_defined_here() -> None:
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
             for d in _of_kind("Role", "ClusterRole")}
    for binding in _of_kind("RoleBinding", "ClusterRoleBinding"):
        ref = binding["roleRef"]
        ns = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        assert (ref["kind"], ns, ref["name"]) in roles, binding["metadata"]["name"]


def test_the_rendered_workloads_service_accounts_exist() -> None:
    """The operator renders pods that run as these accounts; a missing one would stop their pods."""
    accounts = {d["metadata"]["name"] for d in _of_kind("ServiceAccount")}
    rendered = {workloads.CONFIG_DAEMON_SERVICE_ACCOUNT, workloads.DEVICE_PLUGIN_SERVICE_ACCOUNT,
                workloads.OPERATOR_WEBHOOK_SERVICE_ACCOUNT, workloads.INJECTOR_SERVICE_ACCOUNT,
                metrics_exporter.SERVICE_ACCOUNT}
    assert rendered <= accounts
    assert {c.service_account for c in COMPONENTS} <= accounts
    deployment = _of_kind("Deployment")[0]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] in accounts


def test_namespaced_objects_live_in_the_operator_namespace() -> None:
    namespaces = [d["metadata"]["name"] for d in _of_kind("Namespace")]
    assert namespaces == [consts.DEFAULT_OPERATOR_NAMESPACE]
    for doc in _all_docs():
        if doc["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            continue
        assert doc["metadata"].get("namespace") == consts.DEFAULT_OPERATOR_NAMESPACE, (doc["kind"], doc["metadata"])


@pytest.mark.parametrize("directory", [MANIFESTS, MANIFESTS / "crds"], ids=["manifests", "crds"])
def test_kustomization_lists_every_file(directory: Path) -> None:
    listed = _kustomize_files(directory)
    present = {p.resolve() for p in directory.rglob("*.yaml") if p.name != "kustomization.yaml"
               and p.relative_to(directory).parts[0] not in NOT_DEPLOYED}
    assert present - listed == set(), "files not in the kustomization"
    assert listed - present == set()


def _operator_container() -> tuple[dict[str, Any], dict[str, Any]]:
    deployment = next(d for d in _of_kind("Deployment") if d["metadata"]["name"] == "sriov-network-operator")
    pod = deployment["spec"]["template"]["spec"]
    return deployment, pod


def test_operator_deployment_security_settings() -> None:
    _, pod = _operator_container()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod.get("hostNetwork") is not True and pod.get("hostPID") is not True
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc.get("privileged") is not True
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    limits, requests = container["resources"]["limits"], container["resources"]["requests"]
    assert set(limits) == {"cpu", "memory"} and set(requests) == {"cpu", "memory"}
    assert all(not v.get("hostPath") for v in pod.get("volumes") or [])


def test_operator_deployment_runs_three_replicas_with_leader_election_and_probes() -> None:
    deployment, pod = _operator_container()
    assert deployment["spec"]["replicas"] == 3
    (container,) = pod["containers"]
    args = container["args"]
    assert "--leader-elect" in args
    assert "--health-probe-bind-address=:8081" in args
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["probes"] == 8081
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    env = {e["name"]: e for e in container["env"]}
    assert env["NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["RESOURCE_PREFIX"]["value"]
    # Every image variable the operator requires to render its workloads is set.
    for name in ("SRIOV_NETWORK_CONFIG_DAEMON_IMAGE", "SRIOV_DEVICE_PLUGIN_IMAGE", "SRIOV_CNI_IMAGE",
                 "SRIOV_INFINIBAND_CNI_IMAGE", "SRIOV_NETWORK_WEBHOOK_IMAGE", "NETWORK_RESOURCES_INJECTOR_IMAGE"):
        assert env[name]["value"], name
    pdb = _of_kind("PodDisruptionBudget")[0]
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]


def test_operator_settings_accept_the_deployment_environment() -> None:
    from sriovop.operator.settings import OperatorSettings

    _, pod = _operator_container()
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"] if "value" in e}
    settings = OperatorSettings.from_env(consts.DEFAULT_OPERATOR_NAMESPACE, env)
    settings.render.require("config_daemon_image", "device_plugin_image", "cni_image", "infiniband_cni_image",
                            "webhook_image", "injector_image")


def test_default_operator_config_is_named_default() -> None:
    (config,) = _of_kind("SriovOperatorConfig")
    assert config["metadata"]["name"] == consts.DEFAULT_CONFIG_NAME


def test_supported_nic_ids_has_the_full_list() -> None:
    (cm,) = [d for d in _of_kind("ConfigMap") if d["metadata"]["name"] == consts.SUPPORTED_NIC_IDS_CONFIGMAP]
    assert cm["data"] == dict(DEFAULT_SUPPORTED_NIC_IDS)
    assert len(cm["data"]) >= 40


def test_supported_nic_ids_file_is_fresh() -> None:
    path = MANIFESTS / "supported-nic-ids.yaml"
    assert path.read_text() == supported_nics_yaml(consts.DEFAULT_OPERATOR_NAMESPACE), \
        "run `sriovop gen supported-nics` and commit manifests/supported-nic-ids.yaml"
    result = CliRunner().invoke(main, ["gen", "supported-nics", "--check", "--out", str(path)])
    assert result.exit_code == 0, result.output


def test_gen_supported_nics_check_flags_a_stale_file(tmp_path: Path) -> None:
    out = tmp_path / "nics.yaml"
    runner = CliRunner()
    assert runner.invoke(main, ["gen", "supported-nics", "--check", "--out", str(out)]).exit_code == 1
    assert runner.invoke(main, ["gen", "supported-nics", "--out", str(out)]).exit_code == 0
    assert runner.invoke(main, ["gen", "supported-nics", "--check", "--out", str(out)]).exit_code == 0
    out.write_text(out.read_text().replace("8086 158b 154c", "8086 158b 0000"))
    stale = runner.invoke(main, ["gen", "supported-nics", "--check", "--out", str(out)])
    assert stale.exit_code == 1 and "stale" in stale.output
