"""The Service proxy's rules: one DNAT per ready endpoint of each ClusterIP port, spread evenly."""

from __future__ import annotations

from typing import Any

from sriovop.devcluster.serviceproxy import chain_name, render_rules


def svc(name: str, ip: str, *ports: tuple[str, int, str], namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterIP": ip, "ports": [{"name": n, "port": p, "protocol": proto} for n, p, proto in ports]}}


def eps(service: str, ports: list[tuple[str, int]], *endpoints: tuple[str, bool | None],
        namespace: str = "ns", address_type: str = "IPv4") -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "labels": {"kubernetes.io/service-name": service}},
        "addressType": address_type,
        "ports": [{"name": n, "port": p} for n, p in ports],
        "endpoints": [{"addresses": [a], **({} if r is None else {"conditions": {"ready": r}})} for a, r in endpoints],
    }


def test_single_endpoint_is_a_plain_dnat() -> None:
    rules = render_rules([svc("kubernetes", "10.96.3.1", ("https", 443, "TCP"), namespace="default")],
                         [eps("kubernetes", [("https", 6443)], ("192.0.2.2", None), namespace="default")])
    assert rules == ["-d 10.96.3.1/32 -p tcp -m tcp --dport 443 -m comment --comment default/kubernetes:https"
                     " -j DNAT --to-destination 192.0.2.2:6443"]


def test_endpoints_are_spread_with_decreasing_probabilities_and_unready_ones_skipped() -> None:
    rules = render_rules(
        [svc("web", "10.96.3.10", ("http", 80, "TCP"))],
        [eps("web", [("http", 8080)], ("10.208.0.2", True), ("10.208.0.3", False)),
         eps("web", [("http", 8080)], ("10.208.1.2", True), ("10.208.1.3", None))],
    )
    assert [r.split("--to-destination ")[1] for r in rules] == ["10.208.0.2:8080", "10.208.1.2:8080", "10.208.1.3:8080"]
    assert "--probability 0.3333333333" in rules[0] and "--probability 0.5000000000" in rules[1]
    assert "statistic" not in rules[2]


def test_ports_match_by_name_and_protocol_is_kept() -> None:
    rules = render_rules(
        [svc("dns", "10.96.3.53", ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"))],
        [eps("dns", [("dns", 5353), ("dns-tcp", 5354)], ("10.208.0.9", True))],
    )
    assert rules == [
        "-d 10.96.3.53/32 -p udp -m udp --dport 53 -m comment --comment ns/dns:dns"
        " -j DNAT --to-destination 10.208.0.9:5353",
        "-d 10.96.3.53/32 -p tcp -m tcp --dport 53 -m comment --comment ns/dns:dns-tcp"
        " -j DNAT --to-destination 10.208.0.9:5354",
    ]


def test_headless_services_services_without_endpoints_and_other_namespaces_get_no_rule() -> None:
    rules = render_rules(
        [svc("headless", "None", ("x", 1, "TCP")), svc("empty", "10.96.3.20", ("x", 1, "TCP")),
         svc("web", "10.96.3.21", ("x", 1, "TCP"), namespace="a")],
        [eps("web", [("x", 2)], ("10.208.0.2", True), namespace="b"),
         eps("empty", [("x", 2)], ("fd00::1", True), address_type="IPv6")],
    )
    assert rules == []


def test_chain_is_named_after_the_cluster() -> None:
    assert chain_name("sriovop-c12") == "SRIOVOP-C12-SVC"
