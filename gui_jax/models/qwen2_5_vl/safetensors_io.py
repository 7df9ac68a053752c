"""Safetensors checkpoint files on numpy, through the `safetensors` package.

Importing ml_dtypes registers bfloat16 with numpy, which lets the safetensors numpy binding read and write BF16
tensors (real Qwen checkpoints are bfloat16). Reads are lazy: one tensor (or one slice of it) at a time.
"""
from __future__ import annotations

import os

import ml_dtypes  # noqa: F401  (registers numpy bfloat16, needed by the safetensors numpy binding for BF16)
import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

# Safetensors dtype codes we read and write, and their numpy dtypes.
_DTYPES = {
    "F64": np.dtype(np.float64), "F32": np.dtype(np.float32), "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16), "I64": np.dtype(np.int64), "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16), "I8": np.dtype(np.int8), "U8": np.dtype(np.uint8), "BOOL": np.dtype(np.bool_),
}
_STORABLE = frozenset(_DTYPES.values())


class SafetensorsFile:
  """Lazy reader: `keys()`, `shape(name)`, `dtype(name)`, `get(name)`, `get_slice(name, index)` -> np.ndarray."""

  def __init__(self, path: str):
    self.path = path
    try:
      self._file = safe_open(path, framework="numpy")
    except (SafetensorError, OSError) as e:
      raise ValueError(f"{path}: not a readable safetensors file ({e})") from e
    self.metadata = self._file.metadata() or {}
    self._keys = list(self._file.keys())
    self._key_set = set(self._keys)

  def _check(self, name: str) -> None:
    if name not in self._key_set:
      raise KeyError(f"{self.path}: no tensor {name!r}")

  def keys(self) -> list[str]:
    return list(self._keys)

  def shape(self, name: str) -> tuple[int, ...]:
    self._check(name)
    return tuple(self._file.get_slice(name).get_shape())

  def dtype(self, name: str) -> np.dtype:
    self._check(name)
    code = self._file.get_slice(name).get_dtype()
    if code not in _DTYPES:
      raise ValueError(f"{self.path}: tensor {name!r} has unsupported dtype {code}")
    return _DTYPES[code]

  def get(self, name: str) -> np.ndarray:
    """The whole tensor `name` (a fresh array)."""
    self.dtype(name)
    return self._file.get_tensor(name)

  def get_slice(self, name: str, index) -> np.ndarray:
    """`tensor[index]` read without loading the rest of the tensor (index: ints and/or step-1 slices)."""
    self.dtype(name)
    return self._file.get_slice(name)[index]


def write_safetensors(path: str, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
  """Writes `tensors` (name -> numpy array) to `path` in safetensors format, atomically (tmp file + rename)."""
  for name, arr in tensors.items():
    if np.asarray(arr).dtype not in _STORABLE:
      raise ValueError(f"tensor {name!r}: dtype {np.asarray(arr).dtype} cannot be stored in safetensors")
  tmp = path + ".tmp"
  save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, tmp, metadata=metadata)
  os.replace(tmp, path)
