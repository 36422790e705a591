"""Generate the Python modules of the kubelet's gRPC APIs from `sriovop/kubelet/proto/*.proto`.

`sriovop gen protos` writes them; `sriovop gen protos --check` (and a unit test) fails when the checked-in
modules differ from what the .proto files generate, so nobody edits generated code by hand or forgets to
regenerate. The import path `sriovop/kubelet=<proto dir>` makes protoc see each file as
`sriovop/kubelet/<name>.proto`, so the generated gRPC module imports its messages as
`from sriovop.kubelet import <name>_pb2`, which works inside the package.

grpcio-tools (the `gen` and `test` extras) is needed only here, never at run time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR / "proto"
VIRTUAL_DIR = "sriovop/kubelet"
SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


class ProtoGenError(RuntimeError):
    """protoc rejected a .proto file (its message names the file and line)."""


def proto_files(proto_dir: Path = PROTO_DIR) -> list[Path]:
    return sorted(proto_dir.glob("*.proto"))


def generate(proto_dir: Path = PROTO_DIR) -> dict[str, str]:
    """{generated file name: text} for every .proto in `proto_dir`, produced in a scratch directory."""
    import grpc_tools
    from grpc_tools import protoc

    include = str(Path(grpc_tools.__file__).resolve().parent / "_proto")
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sriovop-protos-") as scratch:
        for proto in proto_files(proto_dir):
            args = ["grpc_tools.protoc", f"-I{VIRTUAL_DIR}={proto_dir}", f"-I{include}",
                    f"--python_out={scratch}", f"--pyi_out={scratch}", f"--grpc_python_out={scratch}",
                    f"{VIRTUAL_DIR}/{proto.name}"]
            if protoc.main(args) != 0:
                raise ProtoGenError(f"protoc failed on {proto}")
        for path in sorted((Path(scratch) / VIRTUAL_DIR).iterdir()):
            out[path.name] = path.read_text()
    return out


def write(out_dir: Path = PACKAGE_DIR, proto_dir: Path = PROTO_DIR) -> list[Path]:
    written = []
    for name, text in generate(proto_dir).items():
        path = out_dir / name
        path.write_text(text)
        written.append(path)
    return written


def stale(out_dir: Path = PACKAGE_DIR, proto_dir: Path = PROTO_DIR) -> list[str]:
    """Names of generated modules that are missing from `out_dir` or differ from a fresh generation."""
    fresh = generate(proto_dir)
    found = {p.name for p in out_dir.iterdir() if p.name.endswith(SUFFIXES)}
    wrong = [name for name, text in fresh.items()
             if not (out_dir / name).is_file() or (out_dir / name).read_text() != text]
    return sorted(set(wrong) | (found - set(fresh)))
