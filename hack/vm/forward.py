#!/usr/bin/env python3
"""Per-connection TCP connector for QEMU's `guestfwd=...-cmd:` (spawned once per guest connection).

libslirp hands the guest's connection to this process as a socket on fd 0/1; we connect to the host
address given on the command line and copy bytes both ways, passing half-closes through so that HTTP
clients and watches end cleanly. Standard library only: it runs with whatever python3 the host has.
"""

import selectors
import socket
import sys


def main() -> int:
    host, port = sys.argv[1], int(sys.argv[2])
    guest = socket.socket(fileno=0)
    try:
        upstream = socket.create_connection((host, port), timeout=10)
    except OSError as e:
        print(f"sriovop guestfwd: cannot reach {host}:{port}: {e}", file=sys.stderr)
        return 1
    upstream.settimeout(None)
    peers = {guest: upstream, upstream: guest}
    sel = selectors.DefaultSelector()
    for s in peers:
        sel.register(s, selectors.EVENT_READ)
    open_reads = 2
    while open_reads:
        for key, _ in sel.select():
            src = key.fileobj
            assert isinstance(src, socket.socket)
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if data:
                peers[src].sendall(data)
                continue
            sel.unregister(src)
            open_reads -= 1
            try:
                peers[src].shutdown(socket.SHUT_WR)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
