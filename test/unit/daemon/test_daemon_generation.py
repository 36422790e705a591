"""The persisted last-applied generation."""

from __future__ import annotations

from pathlib import Path

from sriovop.daemon.generation import AppliedGeneration


def test_roundtrip_and_identity(tmp_path: Path) -> None:
    store = AppliedGeneration(tmp_path / "etc/sriov-operator")
    assert store.load() is None and not store.is_applied("u1", 1)
    store.save("u1", 3)
    assert AppliedGeneration(tmp_path / "etc/sriov-operator").is_applied("u1", 3)  # a new process sees it
    assert not store.is_applied("u1", 4), "a newer generation is not applied"
    assert not store.is_applied("u2", 3), "a re-created NodeState (new uid) is not applied"
    store.clear()
    assert store.load() is None


def test_corrupt_file_means_not_applied(tmp_path: Path) -> None:
    store = AppliedGeneration(tmp_path)
    store.path.parent.mkdir(parents=True)
    for junk in ("", "{", "[]", '{"uid": "u"}', '{"uid": "u", "generation": "x"}'):
        store.path.write_text(junk)
        assert store.load() is None and not store.is_applied("u", 1)


def test_write_is_atomic(tmp_path: Path) -> None:
    store = AppliedGeneration(tmp_path)
    store.save("u", 1)
    store.save("u", 2)
    assert sorted(p.name for p in store.path.parent.iterdir()) == [store.path.name], "no temp files left"
