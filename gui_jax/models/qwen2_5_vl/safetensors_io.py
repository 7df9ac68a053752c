"""Minimal streaming safetensors reader/writer on numpy (with bfloat16 via ml_dtypes).

The `safetensors` numpy binding cannot return bfloat16, and real Qwen checkpoints are bfloat16, so we read the
(simple) format directly: u64 little-endian header length, JSON header {name: {dtype, shape, data_offsets}},
then the raw bytes. Reads are memory-mapped, one tensor at a time.
"""
from __future__ import annotations

import json
import os
import struct

import ml_dtypes
import numpy as np

_DTYPES = {
    "F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype(np.int64), "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U8": np.dtype(np.uint8), "BOOL": np.dtype(np.bool_),
}
_NAMES = {v: k for k, v in _DTYPES.items()}


class SafetensorsFile:
  """Lazy reader: `keys()`, `shape(name)`, `dtype(name)`, `get(name) -> np.ndarray` (a copy)."""

  def __init__(self, path: str):
    self.path = path
    with open(path, "rb") as f:
      head = f.read(8)
      if len(head) != 8:
        raise ValueError(f"{path}: not a safetensors file (too short)")
      (n,) = struct.unpack("<Q", head)
      try:
        header = json.loads(f.read(n))
      except json.JSONDecodeError as e:
        raise ValueError(f"{path}: corrupt safetensors header ({e})") from e
    self.metadata = header.pop("__metadata__", None) or {}
    self._header = header
    self._data_start = 8 + n
    self._mmap = None

  def keys(self) -> list[str]:
    return list(self._header)

  def shape(self, name: str) -> tuple[int, ...]:
    return tuple(self._header[name]["shape"])

  def dtype(self, name: str) -> np.dtype:
    code = self._header[name]["dtype"]
    if code not in _DTYPES:
      raise ValueError(f"{self.path}: tensor {name!r} has unsupported dtype {code}")
    return _DTYPES[code]

  def get(self, name: str) -> np.ndarray:
    if name not in self._header:
      raise KeyError(f"{self.path}: no tensor {name!r}")
    if self._mmap is None:
      self._mmap = np.memmap(self.path, dtype=np.uint8, mode="r")
    begin, end = self._header[name]["data_offsets"]
    raw = self._mmap[self._data_start + begin:self._data_start + end]
    return np.array(raw).view(self.dtype(name)).reshape(self.shape(name))


def write_safetensors(path: str, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
  """Writes `tensors` (name -> numpy array) to `path` in safetensors format (names sorted, like the reference)."""
  header, offset, names = {}, 0, sorted(tensors)
  for name in names:
    arr = tensors[name]
    if arr.dtype not in _NAMES:
      raise ValueError(f"tensor {name!r}: dtype {arr.dtype} cannot be stored in safetensors")
    nbytes = arr.size * arr.dtype.itemsize
    header[name] = {"dtype": _NAMES[arr.dtype], "shape": list(arr.shape), "data_offsets": [offset, offset + nbytes]}
    offset += nbytes
  if metadata:
    header = {"__metadata__": metadata, **header}
  blob = json.dumps(header, separators=(",", ":")).encode()
  blob += b" " * (-len(blob) % 8)
  tmp = path + ".tmp"
  with open(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(blob)))
    f.write(blob)
    for name in names:
      f.write(np.ascontiguousarray(tensors[name]).tobytes())
  os.replace(tmp, path)
