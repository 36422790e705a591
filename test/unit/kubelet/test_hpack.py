"""HPACK against RFC 7541's own examples (Appendix C), plus the edge cases a peer can send."""

from __future__ import annotations

import pytest

from sriovop.kubelet.hpack import Decoder, HpackError, encode_headers, encode_int, huffman_decode, huffman_encode


def test_integer_encoding_rfc_c1() -> None:
    assert encode_int(10, 5) == bytes([0b01010])
    assert encode_int(1337, 5) == bytes([0b11111, 0b10011010, 0b00001010])
    assert encode_int(42, 8) == bytes([42])


def test_huffman_rfc_c4_strings() -> None:
    for text, hexed in [(b"www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"), (b"no-cache", "a8eb10649cbf"),
                        (b"custom-key", "25a849e95ba97d7f"), (b"custom-value", "25a849e95bb8e8b4bf")]:
        assert huffman_encode(text).hex() == hexed
        assert huffman_decode(bytes.fromhex(hexed)) == text


def test_huffman_round_trip_every_byte() -> None:
    data = bytes(range(256)) * 2
    assert huffman_decode(huffman_encode(data)) == data


@pytest.mark.parametrize("bad", [b"\x00", bytes.fromhex("f1e3c2e5f23a6ba0ab90f4") + b"\x00"])
def test_huffman_bad_padding_is_refused(bad: bytes) -> None:
    with pytest.raises(HpackError):
        huffman_decode(bad)


def test_requests_with_huffman_share_a_dynamic_table_rfc_c4() -> None:
    d = Decoder()
    assert d.decode(bytes.fromhex("828684418cf1e3c2e5f23a6ba0ab90f4ff")) == [
        (":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]
    assert d.decode(bytes.fromhex("828684be5886a8eb10649cbf"))[-1] == ("cache-control", "no-cache")
    assert d.decode(bytes.fromhex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf")) == [
        (":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
        ("custom-key", "custom-value")]
    assert d.dynamic[0] == ("custom-key", "custom-value") and len(d.dynamic) == 3


def test_responses_evict_from_a_small_table_rfc_c6() -> None:
    d = Decoder(max_table_size=256)
    d.table_size = 256
    first = d.decode(bytes.fromhex(
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3"))
    assert first == [(":status", "302"), ("cache-control", "private"), ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                     ("location", "https://www.example.com")]
    second = d.decode(bytes.fromhex("4883640effc1c0bf"))
    assert second[0] == (":status", "307") and second[1:] == first[1:]
    assert (":status", "302") not in d.dynamic  # evicted to make room


def test_size_update_above_the_limit_and_bad_index_are_errors() -> None:
    with pytest.raises(HpackError):
        Decoder(max_table_size=100).decode(bytes([0x3F, 0xE1, 0x1F]))  # size update to 4096
    with pytest.raises(HpackError):
        Decoder().decode(bytes([0xBF]))  # index 63: empty dynamic table


def test_our_encoding_decodes() -> None:
    headers = [(":path", "/v1.PodResourcesLister/List"), ("content-type", "application/grpc"), ("x", "y" * 300)]
    assert Decoder().decode(encode_headers(headers)) == headers
