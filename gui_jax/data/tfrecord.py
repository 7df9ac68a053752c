"""TFRecord files and `tf.train.Example` protos without TensorFlow.

TFRecord framing, per record (all little-endian):
  uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32). Files may be GZIP-compressed
(detected by the gzip magic bytes). Example wire layout (tensorflow/core/example/*.proto):
  Example{features=1: Features}, Features{feature=1: map<string, Feature>} (map entry: key=1,
  value=2), Feature{bytes_list=1 | float_list=2 | int64_list=3}, each list {repeated value=1};
  float/int64 lists may be packed (one length-delimited field) or unpacked (one field per value).

Errors are `TFRecordError(path, record_index, field, message)`; subclasses add context.
"""
from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator, Optional, Sequence, Union

import numpy as np

# ----------------------------------------------------------------------------- crc32c

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected


def _make_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _CRC32C_POLY if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE = _make_table()
_TABLE_LIST = [int(v) for v in _TABLE]


def _slice_by_4_tables() -> tuple[np.ndarray, np.ndarray]:
    """Tables consuming one little-endian 32-bit word per step (slicing-by-4, merged in pairs):
    state' = LO[s & 0xFFFF] ^ HI[s >> 16] where s = state ^ word."""
    t = [_TABLE]
    for _ in range(3):
        t.append((t[-1] >> 8) ^ _TABLE[t[-1] & 0xFF])
    i = np.arange(65536, dtype=np.uint32)
    lo = (t[3][i & 0xFF] ^ t[2][i >> 8]).astype(np.uint32)
    hi = (t[1][i & 0xFF] ^ t[0][i >> 8]).astype(np.uint32)
    return lo, hi


_LO16, _HI16 = _slice_by_4_tables()
_CHUNK = 1024  # bytes per lane in the vectorised path (a multiple of 4)
_shift_tables_cache: dict[int, tuple[list[int], ...]] = {}


def _crc_update_py(state: int, data: bytes) -> int:
    """Raw (no init/final xor) reflected CRC32C update, one byte at a time."""
    t = _TABLE_LIST
    for b in data:
        state = t[(state ^ b) & 0xFF] ^ (state >> 8)
    return state


def _shift_tables(n_bytes: int) -> tuple[list[int], ...]:
    """Tables for the linear map 'feed n_bytes zero bytes' on a 32-bit CRC state.

    The map is linear over GF(2), so it is fixed by its action on the 32 basis states;
    T_k[b] = map(b << 8k) lets us apply it with four lookups.
    """
    cached = _shift_tables_cache.get(n_bytes)
    if cached is not None:
        return cached
    basis = np.array([1 << i for i in range(32)], dtype=np.uint32)
    for _ in range(n_bytes):
        basis = _TABLE[basis & 0xFF] ^ (basis >> 8)
    images = [int(v) for v in basis]
    tables = []
    for k in range(4):
        tk = [0] * 256
        for b in range(256):
            v = 0
            for bit in range(8):
                if b >> bit & 1:
                    v ^= images[8 * k + bit]
            tk[b] = v
        tables.append(tk)
    _shift_tables_cache[n_bytes] = tuple(tables)
    return _shift_tables_cache[n_bytes]


def crc32c(data: Union[bytes, bytearray, memoryview]) -> int:
    """CRC-32C (Castagnoli) of `data`, as used by TFRecord; crc32c(b'123456789') == 0xE3069283.

    Long inputs are split into equal lanes whose raw CRCs are computed together with numpy,
    then chained: crc(A||B) = shift_|B|(crc(A)) ^ crc_raw(B) by linearity.
    """
    data = bytes(data) if not isinstance(data, bytes) else data
    n = len(data)
    state = 0xFFFFFFFF
    n_lanes = n // _CHUNK
    if n_lanes >= 16:
        # words[j, l] = j-th little-endian uint32 of lane l; all lanes advance together
        words = np.ascontiguousarray(np.frombuffer(data, dtype="<u4", count=n_lanes * _CHUNK // 4)
                                     .reshape(n_lanes, _CHUNK // 4).T)
        crc = np.zeros(n_lanes, dtype=np.uint32)
        lo, hi = _LO16, _HI16
        for w in words:
            crc ^= w
            crc = lo[crc & 0xFFFF] ^ hi[crc >> 16]
        t0, t1, t2, t3 = _shift_tables(_CHUNK)
        for c in crc.tolist():
            state = (t0[state & 0xFF] ^ t1[(state >> 8) & 0xFF] ^ t2[(state >> 16) & 0xFF]
                     ^ t3[state >> 24] ^ c)
        tail = data[n_lanes * _CHUNK:]
    else:
        tail = data
    return _crc_update_py(state, tail) ^ 0xFFFFFFFF


def masked_crc32c(data: Union[bytes, bytearray, memoryview]) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ----------------------------------------------------------------------------- errors


class TFRecordError(ValueError):
    """A TFRecord file or an Example in it is malformed. Names file, record and field."""

    def __init__(self, path, record_index: Optional[int], field: Optional[str], message: str):
        self.path = str(path)
        self.record_index = record_index
        self.field = field
        where = self.path
        if record_index is not None:
            where += f": record {record_index}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")


# ----------------------------------------------------------------------------- framing


def _open_maybe_gzip(path: Union[str, os.PathLike]) -> BinaryIO:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _read_exact(f: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        b = f.read(left)
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def iter_tfrecord(path: Union[str, os.PathLike], *, verify_crc: bool = True,
                  error_cls: type = TFRecordError) -> Iterator[bytes]:
    """Yields the records of a (possibly GZIP-compressed) TFRecord file, streaming."""
    f = _open_maybe_gzip(path)
    try:
        index = 0
        while True:
            try:
                header = _read_exact(f, 12)
            except (OSError, EOFError, gzip.BadGzipFile) as e:
                raise error_cls(path, index, None, f"corrupt compressed stream: {e}") from None
            if not header:
                return
            if len(header) < 12:
                raise error_cls(path, index, None,
                                f"truncated record header ({len(header)} of 12 bytes)")
            (length,) = struct.unpack("<Q", header[:8])
            (length_crc,) = struct.unpack("<I", header[8:])
            if verify_crc and masked_crc32c(header[:8]) != length_crc:
                raise error_cls(path, index, None,
                                f"bad length CRC (stored {length_crc:#010x}, computed "
                                f"{masked_crc32c(header[:8]):#010x}); file corrupt")
            try:
                body = _read_exact(f, length + 4)
            except (OSError, EOFError, gzip.BadGzipFile) as e:
                raise error_cls(path, index, None, f"corrupt compressed stream: {e}") from None
            if len(body) < length + 4:
                raise error_cls(path, index, None, f"truncated record: header says {length} data "
                                f"bytes + 4 CRC bytes, file has {len(body)}")
            data = body[:length]
            (data_crc,) = struct.unpack("<I", body[length:])
            if verify_crc:
                computed = masked_crc32c(data)
                if computed != data_crc:
                    raise error_cls(path, index, None, f"bad data CRC (stored {data_crc:#010x}, "
                                    f"computed {computed:#010x}); record corrupt")
            yield data
            index += 1
    finally:
        f.close()


def frame_record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def write_tfrecord(path: Union[str, os.PathLike], records: Iterable[bytes], *,
                   compress: bool = True) -> None:
    """Writes raw records with TFRecord framing; GZIP-compressed when `compress`."""
    opener = (lambda p: gzip.open(p, "wb", compresslevel=6)) if compress else (lambda p: open(p, "wb"))
    with opener(path) as f:
        for r in records:
            f.write(frame_record(bytes(r)))


# ----------------------------------------------------------------------------- protobuf wire

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class ProtoWireError(ValueError):
    pass


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise ProtoWireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtoWireError("varint longer than 10 bytes")


def iter_proto_fields(buf: memoryview) -> Iterator[tuple[int, int, object]]:
    """Yields (field_number, wire_type, value); LEN values are memoryviews into `buf`."""
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtoWireError("field number 0")
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos)
        elif wire == _I64:
            if pos + 8 > n:
                raise ProtoWireError("truncated 64-bit field")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == _LEN:
            length, pos = _read_varint(buf, pos)
            if pos + length > n:
                raise ProtoWireError(f"length-delimited field {number} runs past its message "
                                 f"({length} bytes at offset {pos}, message has {n})")
            value, pos = buf[pos:pos + length], pos + length
        elif wire == _I32:
            if pos + 4 > n:
                raise ProtoWireError("truncated 32-bit field")
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ProtoWireError(f"unsupported wire type {wire} (field {number})")
        yield number, wire, value


def to_int64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


@dataclass
class Feature:
    """One decoded `tf.train.Feature`: kind is 'bytes', 'float' or 'int64'."""

    kind: str
    values: list


_KINDS = {1: "bytes", 2: "float", 3: "int64"}


def _decode_list(kind: str, buf: memoryview) -> list:
    out: list = []
    for number, wire, value in iter_proto_fields(buf):
        if number != 1:
            continue  # unknown field: ignored, as protobuf does
        if kind == "bytes":
            if wire != _LEN:
                raise ProtoWireError(f"bytes_list value with wire type {wire}")
            out.append(bytes(value))
        elif kind == "float":
            if wire == _I32:
                out.append(struct.unpack("<f", value)[0])
            elif wire == _LEN:
                if len(value) % 4:
                    raise ProtoWireError(f"packed float_list of {len(value)} bytes (not a multiple of 4)")
                out.extend(np.frombuffer(value, dtype="<f4").tolist())
            else:
                raise ProtoWireError(f"float_list value with wire type {wire}")
        else:
            if wire == _VARINT:
                out.append(to_int64(value))
            elif wire == _LEN:
                pos = 0
                while pos < len(value):
                    v, pos = _read_varint(value, pos)
                    out.append(to_int64(v))
            else:
                raise ProtoWireError(f"int64_list value with wire type {wire}")
    return out


def parse_example(data: bytes) -> dict[str, Feature]:
    """Decodes a serialized `tf.train.Example` into {name: Feature}. Raises ValueError.

    The message names the feature being decoded when the error is inside one.
    """
    buf = memoryview(data)
    features: dict[str, Feature] = {}
    try:
        for number, wire, value in iter_proto_fields(buf):
            if number != 1:
                continue
            if wire != _LEN:
                raise ProtoWireError("Example.features is not length-delimited")
            for fnum, fwire, entry in iter_proto_fields(value):
                if fnum != 1:
                    continue
                if fwire != _LEN:
                    raise ProtoWireError("Features.feature entry is not length-delimited")
                key, feat_buf = "", memoryview(b"")
                for enum, ewire, ev in iter_proto_fields(entry):
                    if enum == 1 and ewire == _LEN:
                        key = bytes(ev).decode("utf-8")
                    elif enum == 2 and ewire == _LEN:
                        feat_buf = ev
                try:
                    feature = Feature(kind="none", values=[])
                    for knum, kwire, kv in iter_proto_fields(feat_buf):
                        if knum in _KINDS and kwire == _LEN:
                            feature = Feature(kind=_KINDS[knum], values=_decode_list(_KINDS[knum], kv))
                except ProtoWireError as e:
                    raise ProtoWireError(f"feature {key!r}: {e}") from None
                features[key] = feature  # a repeated map key: last one wins (protobuf rule)
    except ProtoWireError as e:
        raise ValueError(f"malformed Example proto: {e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"malformed Example proto: feature name is not UTF-8: {e}") from None
    return features


def encode_varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def len_field(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | _LEN) + encode_varint(len(payload)) + payload


def encode_feature(kind: str, values: Sequence, *, packed: bool = True) -> bytes:
    """Serialized `tf.train.Feature` (TF itself writes packed float/int64 lists)."""
    if kind == "bytes":
        body = b"".join(len_field(1, bytes(v)) for v in values)
        return len_field(1, body)
    if kind == "float":
        if packed:
            body = len_field(1, np.asarray(values, dtype="<f4").tobytes()) if len(values) else b""
        else:
            body = b"".join(encode_varint(1 << 3 | _I32) + struct.pack("<f", v) for v in values)
        return len_field(2, body)
    if kind == "int64":
        if packed:
            body = len_field(1, b"".join(encode_varint(int(v)) for v in values)) if len(values) else b""
        else:
            body = b"".join(encode_varint(1 << 3 | _VARINT) + encode_varint(int(v)) for v in values)
        return len_field(3, body)
    raise ValueError(f"unknown feature kind {kind!r}; expected bytes, float or int64")


def encode_example(features: dict[str, tuple[str, Sequence]], *, packed: bool = True) -> bytes:
    """Serialized `tf.train.Example` from {name: (kind, values)}; keys written sorted."""
    entries = b""
    for name in sorted(features):
        kind, values = features[name]
        entry = len_field(1, name.encode("utf-8")) + len_field(2, encode_feature(kind, values, packed=packed))
        entries += len_field(1, entry)
    return len_field(1, entries)
