from __future__ import annotations

import pytest

from sriovop.api.v1.supportednics import (
    DEFAULT_SUPPORTED_NIC_IDS,
    SupportedNicError,
    SupportedNics,
    default_supported_nics,
    supported_nic_ids_configmap,
)


def test_default_list_is_upstreams() -> None:
    nics = default_supported_nics()
    assert len(nics) == len(DEFAULT_SUPPORTED_NIC_IDS) >= 45
    assert nics.errors == ()
    # the models the simulator and the QEMU e2e test use
    assert nics.is_supported_model("8086", "158b") and nics.vf_device_id("158b") == "154c"  # XXV710
    assert nics.is_supported_model("8086", "1592") and nics.vf_device_id("1592") == "1889"  # E810
    assert nics.is_supported_model("15b3", "101d") and nics.vf_device_id("101d") == "101e"  # CX-6 Dx
    assert nics.is_supported_model("8086", "10c9") and nics.vf_device_id("10c9") == "10ca"  # 82576 / QEMU igb


def test_lookups() -> None:
    nics = SupportedNics.from_configmap_data({"a": "8086 158b 154c", "b": "15b3 1017 1018"})
    assert nics.is_supported_vendor("8086") and not nics.is_supported_vendor("14e4")
    assert nics.is_supported_model("8086", "158b")
    assert not nics.is_supported_model("15b3", "158b")  # the pair matters
    assert nics.is_supported_device("1017") and not nics.is_supported_device("1018")  # PF ids only
    assert nics.is_vf_supported_model("8086", "154c") and not nics.is_vf_supported_model("8086", "158b")
    assert nics.vf_device_id("9999") is None
    assert nics.vf_device_id("1017", vendor="15b3") == "1018"
    assert nics.vf_device_id("1017", vendor="8086") is None
    assert nics.vf_device_ids() == ["1018", "154c"]


def test_ids_are_normalised_like_sysfs_reports_them() -> None:
    nics = SupportedNics.from_configmap_data({"x": "8086 158B 154C"})
    assert nics.is_supported_model("0x8086", "0x158b")
    assert nics.vf_device_id("158B") == "154c"


@pytest.mark.parametrize(("value", "fragment"), [
    ("8086 158b", "got 2 field(s)"),
    ("8086 158b 154c extra", "got 4 field(s)"),
    ("", "got 0 field(s)"),
    ("8086 158z 154c", "PF device id '158z' is not 4 hex digits"),
    ("80861 158b 154c", "vendor '80861'"),
])
def test_bad_entries_name_the_key(value: str, fragment: str) -> None:
    with pytest.raises(SupportedNicError) as exc:
        SupportedNics.from_configmap_data({"My_NIC": value})
    assert "'My_NIC'" in str(exc.value) and fragment in str(exc.value)


def test_non_strict_parse_skips_bad_entries_and_says_why() -> None:
    nics = SupportedNics.from_configmap_data({"good": "8086 158b 154c", "bad": "junk"}, strict=False)
    assert [m.label for m in nics.models] == ["good"]
    assert len(nics.errors) == 1 and "'bad'" in nics.errors[0]


def test_from_configmap_and_the_default_configmap_object() -> None:
    cm = supported_nic_ids_configmap("ops", extra={"Extra_NIC": "1234 5678 9abc"})
    assert cm["metadata"] == {"name": "supported-nic-ids", "namespace": "ops"}
    nics = SupportedNics.from_configmap(cm)
    assert nics.is_supported_model("1234", "5678") and nics.is_supported_model("8086", "158b")
    assert SupportedNics.from_configmap({"metadata": {}}).models == ()
    with pytest.raises(SupportedNicError):
        supported_nic_ids_configmap(extra={"Bad": "1 2 3"})
