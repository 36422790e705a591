"""HTTP/2 framing (RFC 9113) over a unix socket: the transport of the kubelet's gRPC APIs.

Only what a gRPC peer on a local socket needs: the preface, SETTINGS (acknowledged), PING (answered),
HEADERS with CONTINUATION, DATA, RST_STREAM, GOAWAY and WINDOW_UPDATE. Flow control is handled by
advertising the largest windows at the start (so the peer never waits for us) and by honouring the
peer's windows when sending. No TLS, no priorities, no server push (disabled in our SETTINGS).
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass
from typing import Final

from sriovop.kubelet.hpack import Decoder, HpackError, encode_headers

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM: Final = 0x1
ACK: Final = 0x1
END_HEADERS: Final = 0x4
PADDED: Final = 0x8
PRIORITY_FLAG: Final = 0x20
SETTINGS_ENABLE_PUSH: Final = 0x2
SETTINGS_INITIAL_WINDOW_SIZE: Final = 0x4
SETTINGS_MAX_FRAME_SIZE: Final = 0x5
MAX_WINDOW: Final = 2**31 - 1
DEFAULT_WINDOW: Final = 65535
DEFAULT_MAX_FRAME: Final = 16384
#: The largest frame we accept (and announce): a large pod-resources answer arrives in fewer frames.
OUR_MAX_FRAME: Final = 1 << 20


class H2Error(ConnectionError):
    """The peer broke the protocol, closed the connection, or reset the stream."""


@dataclass
class Frame:
    type: int
    flags: int
    stream: int
    payload: bytes
    #: A HEADERS frame's decoded block (CONTINUATIONs included).
    headers: list[tuple[str, str]] | None = None


class Connection:
    """One HTTP/2 connection; `send_*` may be called from several threads, `read_frame` from one."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.decoder = Decoder()
        self.peer_max_frame = DEFAULT_MAX_FRAME
        self.peer_initial_window = DEFAULT_WINDOW
        self.send_window = DEFAULT_WINDOW  # connection-level window for our DATA
        self.stream_windows: dict[int, int] = {}
        self._write = threading.Lock()
        self._window = threading.Condition()
        self._buf = b""

    # --- reading -------------------------------------------------------------------------------
    def _recv_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self._buf)))
            if not chunk:
                raise H2Error("connection closed by the peer")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def read_preface(self) -> None:
        if self._recv_exact(len(PREFACE)) != PREFACE:
            raise H2Error("not an HTTP/2 client preface")

    def read_frame(self) -> Frame:
        head = self._recv_exact(9)
        length = int.from_bytes(head[:3], "big")
        ftype, flags = head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        if length > OUR_MAX_FRAME:
            raise H2Error(f"frame of {length} bytes is above our limit {OUR_MAX_FRAME}")
        return Frame(ftype, flags, stream, self._recv_exact(length))

    def read_event(self) -> Frame | None:
        """The next frame a stream cares about (HEADERS with its whole block decoded into
        `payload` as a list, DATA, RST_STREAM, GOAWAY); connection housekeeping is handled here and
        yields None."""
        frame = self.read_frame()
        if frame.type == SETTINGS:
            if not frame.flags & ACK:
                self._apply_settings(frame.payload)
                self.send_frame(SETTINGS, ACK, 0, b"")
            return None
        if frame.type == PING:
            if not frame.flags & ACK:
                self.send_frame(PING, ACK, 0, frame.payload)
            return None
        if frame.type == WINDOW_UPDATE:
            increment = int.from_bytes(frame.payload[:4], "big") & 0x7FFFFFFF
            with self._window:
                if frame.stream == 0:
                    self.send_window += increment
                else:
                    self.stream_windows[frame.stream] = self.stream_windows.get(
                        frame.stream, self.peer_initial_window) + increment
                self._window.notify_all()
            return None
        if frame.type in (PRIORITY, PUSH_PROMISE):
            return None
        if frame.type == HEADERS:
            block = self._strip(frame, headers=True)
            flags = frame.flags
            while not flags & END_HEADERS:
                cont = self.read_frame()
                if cont.type != CONTINUATION or cont.stream != frame.stream:
                    raise H2Error("HEADERS not followed by its CONTINUATION")
                block += cont.payload
                flags |= cont.flags & END_HEADERS
            try:
                frame.headers = self.decoder.decode(block)
            except HpackError as exc:
                raise H2Error(f"header block does not decode: {exc}") from exc
            return frame
        if frame.type == DATA:
            counted = len(frame.payload)  # padding counts against the window too
            frame.payload = self._strip(frame, headers=False)
            if counted:  # streams start with the largest window; keep the connection's open too
                self.send_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", counted))
            return frame
        return frame  # RST_STREAM, GOAWAY, unknown types (ignored by callers)

    def _strip(self, frame: Frame, *, headers: bool) -> bytes:
        data = frame.payload
        pad = 0
        if frame.flags & PADDED:
            if not data:
                raise H2Error("padded frame without a pad length")
            pad, data = data[0], data[1:]
        if headers and frame.flags & PRIORITY_FLAG:
            data = data[5:]
        if pad > len(data):
            raise H2Error("padding longer than the frame")
        return data[:len(data) - pad]

    def _apply_settings(self, payload: bytes) -> None:
        for i in range(0, len(payload) - 5, 6):
            ident, value = struct.unpack(">HI", payload[i:i + 6])
            if ident == SETTINGS_MAX_FRAME_SIZE:
                self.peer_max_frame = value
            elif ident == SETTINGS_INITIAL_WINDOW_SIZE:
                with self._window:
                    delta = value - self.peer_initial_window
                    self.peer_initial_window = value
                    for sid in self.stream_windows:
                        self.stream_windows[sid] += delta
                    self._window.notify_all()

    # --- writing -------------------------------------------------------------------------------
    def send_frame(self, ftype: int, flags: int, stream: int, payload: bytes) -> None:
        head = len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream.to_bytes(4, "big")
        with self._write:
            self.sock.sendall(head + payload)

    def send_settings(self) -> None:
        """Our SETTINGS (no push, largest windows and frames) and a connection window to match."""
        settings = struct.pack(">HIHIHI", SETTINGS_ENABLE_PUSH, 0, SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW,
                               SETTINGS_MAX_FRAME_SIZE, OUR_MAX_FRAME)
        self.send_frame(SETTINGS, 0, 0, settings)
        self.send_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - DEFAULT_WINDOW))

    def send_headers(self, stream: int, headers: list[tuple[str, str]], *, end_stream: bool = False) -> None:
        block = encode_headers(headers)
        first, rest = block[:self.peer_max_frame], block[self.peer_max_frame:]
        flags = (END_STREAM if end_stream else 0) | (0 if rest else END_HEADERS)
        with self._write:  # a header block and its continuations must not be interleaved
            frames = [(HEADERS, flags, first)]
            while rest:
                chunk, rest = rest[:self.peer_max_frame], rest[self.peer_max_frame:]
                frames.append((CONTINUATION, 0 if rest else END_HEADERS, chunk))
            for ftype, fl, payload in frames:
                head = len(payload).to_bytes(3, "big") + bytes([ftype, fl]) + stream.to_bytes(4, "big")
                self.sock.sendall(head + payload)

    def send_data(self, stream: int, data: bytes, *, end_stream: bool = False, timeout: float = 30.0) -> None:
        """DATA within the peer's windows (waits for WINDOW_UPDATE, which another thread reads)."""
        view = memoryview(data)
        while True:
            with self._window:
                window = min(self.send_window, self.stream_windows.setdefault(stream, self.peer_initial_window))
                if view and window <= 0:
                    if not self._window.wait(timeout):
                        raise H2Error("the peer's flow-control window stayed closed")
                    continue
                size = min(len(view), window, self.peer_max_frame)
                self.send_window -= size
                self.stream_windows[stream] -= size
            chunk, view = view[:size], view[size:]
            last = not view
            self.send_frame(DATA, END_STREAM if (end_stream and last) else 0, stream, bytes(chunk))
            if last:
                return

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
