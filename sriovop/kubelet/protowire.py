"""The protobuf wire format (varints and length-delimited fields), enough for the kubelet's APIs.

The kubelet's pod-resources and device-plugin messages are a handful of strings, integers, booleans
and nested messages; reading them field by field is a few lines, where generated classes would need
protobuf and grpcio, which the image does not carry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

VARINT: Final = 0
FIXED64: Final = 1
LEN: Final = 2
FIXED32: Final = 5


class ProtoError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ProtoError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtoError("varint longer than 10 bytes")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value): an int for varint/fixed fields, bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoError("field number 0")
        if wire == VARINT:
            value, pos = read_varint(data, pos)
            yield number, wire, value
        elif wire == LEN:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ProtoError(f"field {number}: length {length} runs past the message")
            yield number, wire, data[pos:pos + length]
            pos += length
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > len(data):
                raise ProtoError(f"field {number}: truncated fixed{size * 8}")
            yield number, wire, int.from_bytes(data[pos:pos + size], "little")
            pos += size
        else:
            raise ProtoError(f"field {number}: unsupported wire type {wire}")


def signed64(value: int) -> int:
    """int64 fields are sent as two's complement varints."""
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        out.append(value)
    return out


def encode_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_bytes(number: int, value: bytes) -> bytes:
    return encode_varint(number << 3 | LEN) + encode_varint(len(value)) + value


def field_str(number: int, value: str) -> bytes:
    """Proto3: an empty string is not sent."""
    return field_bytes(number, value.encode()) if value else b""


def field_int(number: int, value: int) -> bytes:
    """Proto3: zero (and false) is not sent."""
    return encode_varint(number << 3 | VARINT) + encode_varint(value) if value else b""
