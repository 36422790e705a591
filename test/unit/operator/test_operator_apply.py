"""Create-or-merge-update decisions: what counts as drift, what the cluster keeps."""

from __future__ import annotations

from sriovop.controllers.apply import is_subset, merge_for_update, needs_update
from sriovop.runtime.kinds import DAEMON_SET, MUTATING_WEBHOOK_CONFIGURATION, SERVICE


def test_server_defaults_and_omitted_empties_are_not_drift() -> None:
    desired = {"spec": {"template": {"spec": {"containers": [{"name": "c", "volumeMounts": [
        {"name": "v", "mountPath": "/x", "readOnly": False}]}]}}}}
    live = {"spec": {"revisionHistoryLimit": 10, "template": {"spec": {"dnsPolicy": "ClusterFirst", "containers": [
        {"name": "c", "terminationMessagePath": "/dev/termination-log",
         "volumeMounts": [{"name": "v", "mountPath": "/x"}]}]}}}}
    assert is_subset(desired, live)
    assert not needs_update({"metadata": {"name": "x"}, **desired}, {"metadata": {"name": "x"}, **live})


def test_changed_values_list_lengths_and_meaningful_empty_strings_are_drift() -> None:
    assert not is_subset({"a": {"b": "1"}}, {"a": {"b": "2"}})
    assert not is_subset({"a": [1, 2]}, {"a": [1]})
    assert not is_subset({"nodeSelector": {"node-role.kubernetes.io/worker": ""}}, {"nodeSelector": {}})
    assert not is_subset({"replicas": 0}, {})


def test_labels_and_owner_references_are_compared() -> None:
    live = {"metadata": {"name": "x", "labels": {"a": "1", "extra": "kept"}}}
    assert not needs_update({"metadata": {"name": "x", "labels": {"a": "1"}}}, live)
    assert needs_update({"metadata": {"name": "x", "labels": {"a": "2"}}}, live)
    assert needs_update({"metadata": {"name": "x", "ownerReferences": [{"uid": "u"}]}}, live)


def test_update_keeps_cluster_managed_fields() -> None:
    svc = merge_for_update(SERVICE, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 443}]}},
                           {"metadata": {"name": "s", "resourceVersion": "7", "managedFields": [{}]},
                            "spec": {"clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"], "ports": []}})
    assert svc["spec"]["clusterIP"] == "10.0.0.9" and svc["spec"]["ports"] == [{"port": 443}]
    assert svc["metadata"]["resourceVersion"] == "7" and "managedFields" not in svc["metadata"]
    hook = merge_for_update(MUTATING_WEBHOOK_CONFIGURATION,
                            {"metadata": {"name": "w"}, "webhooks": [{"name": "h", "clientConfig": {"url": "u"}}]},
                            {"metadata": {"name": "w"}, "webhooks": [{"name": "h", "clientConfig": {
                                "url": "old", "caBundle": "Q0E="}}]})
    assert hook["webhooks"][0]["clientConfig"] == {"url": "u", "caBundle": "Q0E="}
    ds = merge_for_update(DAEMON_SET, {"metadata": {"name": "d", "annotations": {"mine": "1"}}, "spec": {}},
                          {"metadata": {"name": "d", "annotations": {"deprecated.daemonset.template.generation": "3"}}})
    assert ds["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "3", "mine": "1"}
