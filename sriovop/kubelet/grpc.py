"""gRPC over HTTP/2 on a unix socket: unary calls (client) and a small server (unary and
server-streaming methods), messages as raw protobuf bytes.

Why not grpcio: it is a large native wheel for one call every scrape (pod-resources `List`); the
kubelet's sockets are local, unauthenticated and speak plain HTTP/2, which fits in a few hundred lines
(`http2.py`, `hpack.py`). The server side exists for tests and tools that stand in for a device
plugin (the kubelet calls it back over the same protocol).

Message framing (gRPC over HTTP/2): 1 byte compressed flag (always 0 here; we never advertise an
encoding), 4 bytes big-endian length, the protobuf message. Status travels in `grpc-status` /
`grpc-message` trailers (or headers, for a "trailers-only" answer).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import structlog

from sriovop.kubelet import http2 as h2

log = structlog.get_logger(__name__)

OK: Final = 0
UNKNOWN: Final = 2
UNIMPLEMENTED: Final = 12
UNAVAILABLE: Final = 14
CONTENT_TYPE: Final = "application/grpc"


class GrpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"gRPC status {code}: {message}")
        self.code = code
        self.message = message


def frame_message(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def split_messages(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        if pos + 5 > len(data):
            raise GrpcError(UNKNOWN, "truncated gRPC message prefix")
        if data[pos]:
            raise GrpcError(UNKNOWN, "compressed gRPC message (no encoding was negotiated)")
        length = int.from_bytes(data[pos + 1:pos + 5], "big")
        if pos + 5 + length > len(data):
            raise GrpcError(UNKNOWN, "truncated gRPC message")
        out.append(data[pos + 5:pos + 5 + length])
        pos += 5 + length
    return out


def _status(headers: list[tuple[str, str]]) -> tuple[int, str] | None:
    values = dict(headers)
    if "grpc-status" not in values:
        return None
    try:
        code = int(values["grpc-status"])
    except ValueError:
        code = UNKNOWN
    return code, urllib.parse.unquote(values.get("grpc-message", ""))


def unary_call(socket_path: str | Path, method: str, request: bytes, *, timeout: float = 10.0,
               max_response: int = 16 << 20) -> bytes:
    """Call `/package.Service/Method` with one message and return the one response message."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(socket_path))
    except OSError as exc:
        sock.close()
        raise GrpcError(UNAVAILABLE, f"cannot connect to {socket_path}: {exc}") from exc
    conn = h2.Connection(sock)
    try:
        sock.sendall(h2.PREFACE)
        conn.send_settings()
        conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", method),
                              (":authority", "localhost"), ("content-type", CONTENT_TYPE), ("te", "trailers"),
                              ("grpc-timeout", f"{max(1, int(timeout * 1000))}m")])
        conn.send_data(1, frame_message(request), end_stream=True, timeout=timeout)
        body = bytearray()
        status: tuple[int, str] | None = None
        http_status = ""
        while status is None:
            frame = conn.read_event()
            if frame is None or frame.stream not in (0, 1):
                continue
            if frame.type == h2.HEADERS and frame.headers is not None:
                http_status = http_status or dict(frame.headers).get(":status", "")
                status = _status(frame.headers)
                if status is None and frame.flags & h2.END_STREAM:
                    raise GrpcError(UNKNOWN, f"{method}: stream ended without grpc-status (HTTP {http_status})")
            elif frame.type == h2.DATA:
                body += frame.payload
                if len(body) > max_response + 5:
                    raise GrpcError(UNKNOWN, f"{method}: response larger than {max_response} bytes")
            elif frame.type == h2.RST_STREAM:
                raise GrpcError(UNAVAILABLE, f"{method}: stream reset by the server "
                                             f"(HTTP/2 error {int.from_bytes(frame.payload[:4], 'big')})")
            elif frame.type == h2.GOAWAY:
                raise GrpcError(UNAVAILABLE, f"{method}: connection closed by the server (GOAWAY)")
    except (h2.H2Error, OSError) as exc:
        raise GrpcError(UNAVAILABLE, f"{method} on {socket_path}: {exc}") from exc
    finally:
        conn.close()
    code, message = status
    if code != OK:
        raise GrpcError(code, f"{method}: {message}")
    messages = split_messages(bytes(body))
    if len(messages) != 1:
        raise GrpcError(UNKNOWN, f"{method}: expected one response message, got {len(messages)}")
    return messages[0]


#: A unary handler maps the request message to the response message; a streaming one yields messages.
Unary = Callable[[bytes], bytes]
Streaming = Callable[[bytes], Iterable[bytes]]


@dataclass
class Server:
    """Serves `unary` and `streaming` methods on a unix socket, one thread per connection and stream."""

    path: Path
    unary: dict[str, Unary] = field(default_factory=dict)
    streaming: dict[str, Streaming] = field(default_factory=dict)
    _sock: socket.socket | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _conns: list[h2.Connection] = field(default_factory=list)

    def start(self) -> Server:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        sock.listen(16)
        sock.settimeout(0.2)
        self._sock = sock
        threading.Thread(target=self._accept, name=f"grpc-accept {self.path.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._sock is not None:
            self._sock.close()
        for conn in list(self._conns):
            conn.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            conn = h2.Connection(client)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="grpc-conn", daemon=True).start()

    def _serve(self, conn: h2.Connection) -> None:
        requests: dict[int, tuple[str, bytearray]] = {}
        try:
            conn.read_preface()
            conn.send_settings()
            while not self._stop.is_set():
                frame = conn.read_event()
                if frame is None:
                    continue
                if frame.type == h2.HEADERS and frame.headers is not None:
                    requests[frame.stream] = (dict(frame.headers).get(":path", ""), bytearray())
                elif frame.type == h2.DATA and frame.stream in requests:
                    requests[frame.stream][1].extend(frame.payload)
                elif frame.type == h2.RST_STREAM:
                    requests.pop(frame.stream, None)
                    continue
                elif frame.type == h2.GOAWAY:
                    return
                if frame.stream in requests and frame.flags & h2.END_STREAM:
                    path, body = requests.pop(frame.stream)
                    threading.Thread(target=self._call, args=(conn, frame.stream, path, bytes(body)),
                                     name=f"grpc {path}", daemon=True).start()
        except (h2.H2Error, OSError) as exc:
            if not self._stop.is_set():
                log.debug("grpc connection ended", error=str(exc))
        finally:
            conn.close()
            with contextlib.suppress(ValueError):
                self._conns.remove(conn)

    def _call(self, conn: h2.Connection, stream: int, path: str, body: bytes) -> None:
        headers = [(":status", "200"), ("content-type", CONTENT_TYPE)]
        try:
            request = split_messages(body)
            message = request[0] if request else b""
            if path in self.unary:
                response = self.unary[path](message)
                conn.send_headers(stream, headers)
                conn.send_data(stream, frame_message(response))
            elif path in self.streaming:
                conn.send_headers(stream, headers)
                for item in self._stream_items(path, message):
                    conn.send_data(stream, frame_message(item))
            else:
                conn.send_headers(stream, [*headers, ("grpc-status", str(UNIMPLEMENTED)),
                                           ("grpc-message", f"unknown method {path}")], end_stream=True)
                return
            conn.send_headers(stream, [("grpc-status", "0")], end_stream=True)
        except GrpcError as exc:
            with contextlib.suppress(h2.H2Error, OSError):
                conn.send_headers(stream, [*headers, ("grpc-status", str(exc.code)),
                                           ("grpc-message", urllib.parse.quote(exc.message))], end_stream=True)
        except (h2.H2Error, OSError):
            pass  # the peer went away

    def _stream_items(self, path: str, message: bytes) -> Iterator[bytes]:
        for item in self.streaming[path](message):
            if self._stop.is_set():
                return
            yield item
