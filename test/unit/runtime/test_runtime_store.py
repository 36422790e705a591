"""Store and index behaviour ported from client-go's thread_safe_store_test.go / index_test.go."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sriovop.runtime.cache import DeletedFinalStateUnknown, Store, meta_namespace_key, split_meta_namespace_key
from sriovop.runtime.cache.compact import CompactStore
from sriovop.runtime.cache.keys import object_of


@pytest.fixture(params=[Store, CompactStore], ids=["store", "compact"])
def store_cls(request: pytest.FixtureRequest) -> type[Store]:
    return request.param


def obj(name: str, ns: str = "ns", rv: str = "1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels}}


def by_label(label: str):  # type: ignore[no-untyped-def]
    def fn(o: Any) -> list[str]:
        v = o["metadata"]["labels"].get(label)
        return v.split(",") if v else []
    return fn


def test_keys() -> None:
    assert meta_namespace_key(obj("a")) == "ns/a"
    assert meta_namespace_key({"metadata": {"name": "n1"}}) == "n1"
    assert meta_namespace_key("x/y") == "x/y"
    assert meta_namespace_key(DeletedFinalStateUnknown("ns/a", None)) == "ns/a"
    assert split_meta_namespace_key("n1") == ("", "n1")
    assert split_meta_namespace_key("ns/a") == ("ns", "a")
    with pytest.raises(ValueError):
        split_meta_namespace_key("a/b/c")
    assert object_of(DeletedFinalStateUnknown("k", obj("a")))["metadata"]["name"] == "a"


def test_delete_removes_empty_sets_from_index(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("a", mode="foo"))
    assert s.index_keys("testmodes", "foo") == ["ns/a"]
    s.delete(obj("a"))
    assert "foo" not in s.list_index_func_values("testmodes")


def test_add_keeps_non_empty_set_post_delete(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("a", mode="foo"))
    s.add(obj("b", mode="foo"))
    s.delete("ns/a")
    assert s.index_keys("testmodes", "foo") == ["ns/b"]


def test_indexing_functions_with_multiple_values(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("key1", mode="foo"))
    s.add(obj("key2", mode="bar"))

    def check(foo: set[str], bar: set[str], baz: set[str]) -> None:
        assert set(s.index_keys("testmodes", "foo")) == foo
        assert set(s.index_keys("testmodes", "bar")) == bar
        assert set(s.index_keys("testmodes", "baz")) == baz

    check({"ns/key1"}, {"ns/key2"}, set())
    s.update(obj("key1", mode="foo,bar"))
    check({"ns/key1"}, {"ns/key1", "ns/key2"}, set())
    s.update(obj("key1", mode="foo,baz"))
    check({"ns/key1"}, {"ns/key2"}, {"ns/key1"})
    s.update(obj("key1", mode="foo"))
    check({"ns/key1"}, {"ns/key2"}, set())
    s.update(obj("key2", mode="foo"))
    check({"ns/key1", "ns/key2"}, set(), set())
    assert sorted(s.list_index_func_values("testmodes")) == ["foo"]


def test_by_index_index_and_unknown_index(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("a", mode="x,y"))
    s.add(obj("b", mode="y"))
    s.add(obj("c", mode="z"))
    assert sorted(o["metadata"]["name"] for o in s.by_index("testmodes", "y")) == ["a", "b"]
    assert sorted(o["metadata"]["name"] for o in s.index("testmodes", obj("q", mode="x,z"))) == ["a", "c"]
    with pytest.raises(KeyError, match="Index with name nope does not exist"):
        s.by_index("nope", "y")


def test_by_indices_is_the_intersection_of_the_buckets(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("a", mode="x,y"))
    s.add(obj("b", mode="y,z"))
    s.add(obj("c", mode="x,y,z"))

    def names(values: list[str]) -> list[str]:
        return sorted(o["metadata"]["name"] for o in s.by_indices("testmodes", values))

    assert names(["y"]) == ["a", "b", "c"]
    assert names(["x", "y"]) == ["a", "c"]
    assert names(["y", "z", "x"]) == ["c"]
    assert names(["x", "nope"]) == []
    assert names([]) == ["a", "b", "c"]  # no condition: everything
    s.delete(obj("c"))
    assert names(["x", "y"]) == ["a"]


def test_add_indexers_indexes_existing_items_and_rejects_conflicts(store_cls: type[Store]) -> None:
    s = store_cls()
    s.add(obj("a", mode="foo"))
    s.add_indexers({"testmodes": by_label("mode")})
    assert s.index_keys("testmodes", "foo") == ["ns/a"]
    with pytest.raises(ValueError, match="indexer conflict"):
        s.add_indexers({"testmodes": by_label("mode")})


def test_replace_rebuilds_indexes_and_records_rv(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.add(obj("a", mode="foo"))
    s.replace([obj("b", mode="bar")], "42")
    assert s.list_keys() == ["ns/b"]
    assert s.index_keys("testmodes", "foo") == []
    assert s.index_keys("testmodes", "bar") == ["ns/b"]
    assert s.resource_version == "42"


def test_concurrent_writers_keep_index_consistent(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})

    def writer(prefix: str) -> None:
        for i in range(300):
            s.add(obj(f"{prefix}{i % 20}", mode=("a" if i % 2 else "b")))
            if i % 7 == 0:
                s.delete(f"ns/{prefix}{i % 20}")

    threads = [threading.Thread(target=writer, args=(p,)) for p in "pqrs"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for value in ("a", "b"):
        for key in s.index_keys("testmodes", value):
            assert s.get_by_key(key)["metadata"]["labels"]["mode"] == value
    indexed = set(s.index_keys("testmodes", "a")) | set(s.index_keys("testmodes", "b"))
    assert indexed == set(s.list_keys())


def test_compact_store_returns_fresh_read_only_objects() -> None:
    s = CompactStore({"testmodes": by_label("mode")})
    assert s.add(obj("a", rv="1", mode="x")) is None
    old = s.add(obj("a", rv="2", mode="y"))
    assert old["metadata"]["resourceVersion"] == "1"
    got = s.get_by_key("ns/a")
    assert got == obj("a", rv="2", mode="y") and got is not s.get_by_key("ns/a")
    with pytest.raises(TypeError, match="read-only"):
        got["metadata"]["name"] = "b"
    assert s.index_keys("testmodes", "x") == [] and s.index_keys("testmodes", "y") == ["ns/a"]


def test_replace_with_a_repeated_key_keeps_the_last_object_and_its_index_only(store_cls: type[Store]) -> None:
    s = store_cls({"testmodes": by_label("mode")})
    s.replace([obj("a", rv="1", mode="old"), obj("a", rv="2", mode="new"), obj("b", mode="old")], "7")
    assert s.get_by_key("ns/a")["metadata"]["resourceVersion"] == "2"
    assert s.index_keys("testmodes", "new") == ["ns/a"]
    assert s.index_keys("testmodes", "old") == ["ns/b"]
    assert s.resource_version == "7"
    s.add_indexers({"by-rv": lambda o: [o["metadata"]["resourceVersion"]]})
    assert s.index_keys("by-rv", "2") == ["ns/a"]
