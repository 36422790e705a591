"""The demo's working directory: it replaces its own subdirectories at every start, so it claims a
directory with a marker file and refuses one that already holds files it did not put there (a user's
home or project directory given to --dir by mistake) unless told to reuse it."""

from __future__ import annotations

from pathlib import Path

MARKER = ".sriovop-demo"
#: What a start replaces inside the directory.
REPLACED = ("cluster", "hosts", "logs", "webhook")


class DirectoryInUse(RuntimeError):
    """The directory holds files the demo did not create (the message says what to do)."""


def claim(directory: Path, reuse: bool = False) -> None:
    """Create `directory` (or accept it) and mark it as the demo's; raises DirectoryInUse for a
    non-empty directory without the marker unless `reuse`."""
    if directory.exists() and not directory.is_dir():
        raise DirectoryInUse(f"{directory} is not a directory")
    if directory.is_dir() and not (directory / MARKER).exists() and any(directory.iterdir()) and not reuse:
        raise DirectoryInUse(
            f"{directory} is not empty and was not created by sriovop demo; a start replaces its "
            f"{', '.join(d + '/' for d in REPLACED)}: choose another --dir, or pass --reuse to use it anyway")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("created by sriovop demo: its cluster/, hosts/, logs/ and webhook/ are "
                                    "replaced at every start\n")
