"""HPACK (RFC 7541): the header compression of HTTP/2, as much as a gRPC peer needs.

Decoding is complete (static and dynamic table, size updates, Huffman strings): the kubelet's Go
gRPC stack uses all of it. Encoding uses only "literal without indexing" with plain strings, which
every decoder must accept and which keeps this side stateless.
"""

from __future__ import annotations

from typing import Final

from sriovop.kubelet.huffman_table import CODES, LENGTHS

#: RFC 7541 Appendix A (index 1..61).
STATIC_TABLE: Final[tuple[tuple[str, str], ...]] = (
    (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
    (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
    (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
    ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""),
    ("cache-control", ""), ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""),
    ("content-length", ""), ("content-location", ""), ("content-range", ""), ("content-type", ""),
    ("cookie", ""), ("date", ""), ("etag", ""), ("expect", ""), ("expires", ""), ("from", ""), ("host", ""),
    ("if-match", ""), ("if-modified-since", ""), ("if-none-match", ""), ("if-range", ""),
    ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""), ("location", ""), ("max-forwards", ""),
    ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""), ("referer", ""), ("refresh", ""),
    ("retry-after", ""), ("server", ""), ("set-cookie", ""), ("strict-transport-security", ""),
    ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""), ("www-authenticate", ""),
)
ENTRY_OVERHEAD: Final = 32
EOS: Final = 256


class HpackError(ValueError):
    """A header block that does not decode (a COMPRESSION_ERROR in HTTP/2 terms)."""


def _build_decode_tree() -> dict[tuple[int, int], int]:
    return {(LENGTHS[sym], CODES[sym]): sym for sym in range(len(CODES))}


_DECODE: Final = _build_decode_tree()
_MAX_CODE_BITS: Final = max(LENGTHS)


def huffman_decode(data: bytes) -> bytes:
    out = bytearray()
    code, bits = 0, 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = (code << 1) | ((byte >> shift) & 1)
            bits += 1
            sym = _DECODE.get((bits, code))
            if sym is not None:
                if sym == EOS:
                    raise HpackError("Huffman string contains EOS")
                out.append(sym)
                code, bits = 0, 0
            elif bits > _MAX_CODE_BITS:
                raise HpackError("invalid Huffman code")
    # Padding: fewer than 8 bits, all ones (the EOS prefix).
    if bits > 7 or code != (1 << bits) - 1:
        raise HpackError("invalid Huffman padding")
    return bytes(out)


def huffman_encode(data: bytes) -> bytes:
    """Used by tests (and nothing else): the inverse of huffman_decode."""
    acc, bits = 0, 0
    for byte in data:
        acc = (acc << LENGTHS[byte]) | CODES[byte]
        bits += LENGTHS[byte]
    pad = -bits % 8
    acc = (acc << pad) | ((1 << pad) - 1)
    return (acc).to_bytes((bits + pad) // 8, "big") if bits + pad else b""


def encode_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _decode_int(data: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
    if pos >= len(data):
        raise HpackError("truncated integer")
    limit = (1 << prefix_bits) - 1
    value = data[pos] & limit
    pos += 1
    if value < limit:
        return value, pos
    shift = 0
    while True:
        if pos >= len(data):
            raise HpackError("truncated integer")
        byte = data[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
        if shift > 28:
            raise HpackError("integer too large")


def _decode_str(data: bytes, pos: int) -> tuple[str, int]:
    if pos >= len(data):
        raise HpackError("truncated string")
    huffman = bool(data[pos] & 0x80)
    length, pos = _decode_int(data, pos, 7)
    raw = data[pos:pos + length]
    if len(raw) != length:
        raise HpackError("truncated string")
    return (huffman_decode(raw) if huffman else raw).decode("utf-8", "replace"), pos + length


def encode_headers(headers: list[tuple[str, str]]) -> bytes:
    """Literal header fields without indexing, new names, plain strings (RFC 7541 6.2.2)."""
    out = bytearray()
    for name, value in headers:
        out.append(0x00)
        for text in (name.encode(), value.encode()):
            out += encode_int(len(text), 7)
            out += text
    return bytes(out)


class Decoder:
    """One per connection and direction: the dynamic table lives as long as the connection."""

    def __init__(self, max_table_size: int = 4096) -> None:
        self.max_table_size = max_table_size
        self.table_size = max_table_size
        self.dynamic: list[tuple[str, str]] = []  # newest first

    def _size(self) -> int:
        return sum(len(n) + len(v) + ENTRY_OVERHEAD for n, v in self.dynamic)

    def _evict(self) -> None:
        while self.dynamic and self._size() > self.table_size:
            self.dynamic.pop()

    def _entry(self, index: int) -> tuple[str, str]:
        if index <= 0:
            raise HpackError("header index 0")
        if index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        dyn = index - len(STATIC_TABLE) - 1
        if dyn >= len(self.dynamic):
            raise HpackError(f"header index {index} is beyond the dynamic table")
        return self.dynamic[dyn]

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = []
        pos = 0
        while pos < len(block):
            byte = block[pos]
            if byte & 0x80:  # indexed field
                index, pos = _decode_int(block, pos, 7)
                headers.append(self._entry(index))
                continue
            if byte & 0xE0 == 0x20:  # dynamic table size update
                size, pos = _decode_int(block, pos, 5)
                if size > self.max_table_size:
                    raise HpackError(f"table size {size} above the limit {self.max_table_size}")
                self.table_size = size
                self._evict()
                continue
            indexing = bool(byte & 0x40)
            index, pos = _decode_int(block, pos, 6 if indexing else 4)
            if index:
                name = self._entry(index)[0]
            else:
                name, pos = _decode_str(block, pos)
            value, pos = _decode_str(block, pos)
            headers.append((name, value))
            if indexing:
                self.dynamic.insert(0, (name, value))
                self._evict()
        return headers
