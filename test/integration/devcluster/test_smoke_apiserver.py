"""The local control plane is a real Kubernetes API server: CRUD, watch, conflicts, CRDs and RBAC."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from sriovop.devcluster import ControlPlane
from test.support.kube import api_client, apply_crds


def test_configmap_create_get_list_watch(kubeconfig: Path, namespace: str) -> None:
    with api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        seen: list[tuple[str, str]] = []
        started = threading.Event()

        def watch_events() -> None:
            w = watch.Watch()
            started.set()
            for event in w.stream(core.list_namespaced_config_map, namespace, timeout_seconds=20):
                seen.append((event["type"], event["object"].metadata.name))
                if event["type"] == "DELETED":
                    w.stop()

        t = threading.Thread(target=watch_events, daemon=True)
        t.start()
        started.wait()
        body = {"metadata": {"name": "smoke"}, "data": {"k": "v"}}
        created = core.create_namespaced_config_map(namespace, body)
        assert created.metadata.resource_version
        assert core.read_namespaced_config_map("smoke", namespace).data == {"k": "v"}
        names = [cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items]
        assert names == ["smoke"]
        core.patch_namespaced_config_map("smoke", namespace, {"data": {"k": "v2"}})
        core.delete_namespaced_config_map("smoke", namespace)
        t.join(timeout=20)
        assert [e for e in seen if e[1] == "smoke"] == [
            ("ADDED", "smoke"), ("MODIFIED", "smoke"), ("DELETED", "smoke")
        ]


def test_lease_update_with_stale_resource_version_conflicts(kubeconfig: Path, namespace: str) -> None:
    with api_client(kubeconfig) as api:
        coord = client.CoordinationV1Api(api)
        body = {"metadata": {"name": "lock"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        lease = api.sanitize_for_serialization(coord.create_namespaced_lease(namespace, body))
        stale_rv = lease["metadata"]["resourceVersion"]
        lease["spec"]["holderIdentity"] = "b"
        updated = api.sanitize_for_serialization(coord.replace_namespaced_lease("lock", namespace, lease))
        assert updated["spec"]["holderIdentity"] == "b"
        assert updated["metadata"]["resourceVersion"] != stale_rv
        lease["metadata"]["resourceVersion"] = stale_rv
        lease["spec"]["holderIdentity"] = "c"
        with pytest.raises(ApiException) as err:
            coord.replace_namespaced_lease("lock", namespace, lease)
        assert err.value.status == 409
        assert coord.read_namespaced_lease("lock", namespace).spec.holder_identity == "b"


def test_crd_becomes_established_and_serves_objects(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    crd = tmp_path / "widgets.yaml"
    crd.write_text(
        """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.smoke.sriovop.test}
spec:
  group: smoke.sriovop.test
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
"""
    )
    assert apply_crds(control_plane.kubeconfig, [crd]) == ["widgets.smoke.sriovop.test"]
    with api_client(control_plane.kubeconfig) as api:
        objs = client.CustomObjectsApi(api)
        good = {"apiVersion": "smoke.sriovop.test/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}}
        objs.create_namespaced_custom_object("smoke.sriovop.test", "v1", namespace, "widgets", good)
        bad = dict(good, metadata={"name": "bad"}, spec={"size": 0})
        with pytest.raises(ApiException) as err:
            objs.create_namespaced_custom_object("smoke.sriovop.test", "v1", namespace, "widgets", bad)
        assert err.value.status == 422
        assert "spec.size" in err.value.body


def test_identity_without_rights_is_forbidden(control_plane: ControlPlane, namespace: str) -> None:
    nobody = control_plane.mint_user("nobody", ["sriovop:test-nobody"])
    with api_client(nobody) as api:
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(api).list_namespaced_config_map(namespace)
        assert err.value.status == 403
        assert json.loads(err.value.body)["message"].startswith('configmaps is forbidden: User "nobody"')


def test_minted_identity_gets_exactly_what_rbac_grants(control_plane: ControlPlane, namespace: str) -> None:
    with api_client(control_plane.kubeconfig) as api:
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.create_namespaced_role(namespace, {
            "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
        })
        rbac.create_namespaced_role_binding(namespace, {
            "metadata": {"name": "cm-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "User", "name": "reader", "apiGroup": "rbac.authorization.k8s.io"}],
        })
    reader = control_plane.mint_user("reader")
    with api_client(reader) as api:
        core = client.CoreV1Api(api)
        assert core.list_namespaced_config_map(namespace).items == []
        with pytest.raises(ApiException) as err:
            core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
        assert err.value.status == 403
