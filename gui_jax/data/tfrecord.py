"""TFRecord files and `tf.train.Example` protos without TensorFlow.

TFRecord framing, per record (all little-endian):
  uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32), CRC-32C computed by `google-crc32c`. Files may be
GZIP-compressed (detected by the gzip magic bytes). Examples are encoded and decoded by the protobuf runtime
with message classes built from the schema in `gui_jax.data.protos`.

Errors are `TFRecordError(path, record_index, field, message)`; subclasses add context.
"""
from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator, Optional, Sequence, Union

import google_crc32c
from google.protobuf.message import DecodeError

from gui_jax.data.protos import example_messages

# ----------------------------------------------------------------------------- crc32c


def crc32c(data: Union[bytes, bytearray, memoryview]) -> int:
    """CRC-32C (Castagnoli) of `data`, as used by TFRecord; crc32c(b'123456789') == 0xE3069283."""
    return google_crc32c.value(bytes(data))


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


# ----------------------------------------------------------------------------- tf.train.Example

_PACKED = example_messages("gui_jax.tfexample")
_UNPACKED = example_messages("gui_jax.tfexample_unpacked", packed=False)
_LIST_FIELD = {"bytes": "bytes_list", "float": "float_list", "int64": "int64_list"}
_KIND = {v: k for k, v in _LIST_FIELD.items()}
_CAST = {"bytes": bytes, "float": float, "int64": int}


@dataclass
class Feature:
    """One decoded `tf.train.Feature`: kind is 'bytes', 'float', 'int64' or 'none' (no list set)."""

    kind: str
    values: list


def parse_example(data: bytes) -> dict[str, Feature]:
    """Decodes a serialized `tf.train.Example` into {name: Feature}. Raises ValueError.

    Packed and unpacked float/int64 lists both decode; a repeated feature name keeps the last entry.
    """
    try:
        example = _PACKED["Example"].FromString(data)
    except DecodeError as e:
        raise ValueError(f"malformed Example proto ({len(data)} bytes): {e}") from None
    features = {}
    for name, feature in example.features.feature.items():
        which = feature.WhichOneof("kind")
        features[name] = (Feature("none", []) if which is None
                          else Feature(_KIND[which], list(getattr(feature, which).value)))
    return features


def encode_example(features: dict[str, tuple[str, Sequence]], *, packed: bool = True) -> bytes:
    """Serialized `tf.train.Example` from {name: (kind, values)}, keys sorted; packed lists as TF writes them."""
    example = (_PACKED if packed else _UNPACKED)["Example"]()
    for name, (kind, values) in features.items():
        if kind not in _LIST_FIELD:
            raise ValueError(f"feature {name!r}: unknown kind {kind!r}; expected bytes, float or int64")
        value_list = getattr(example.features.feature[name], _LIST_FIELD[kind])
        value_list.SetInParent()  # an empty list still records the feature's kind
        value_list.value.extend(_CAST[kind](v) for v in values)
    return example.SerializeToString(deterministic=True)
