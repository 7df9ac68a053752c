"""Roofline step time and estimated MFU of a compiled XLA program (pure functions over its HLO text and cost).

    chip = CHIPS["v5p"]
    walk = hlo_totals(compiled.as_text(), num_devices=32)   # collectives, loop trip counts
    cost = compiled.cost_analysis()
    r = roofline(cost["flops"] + walk["flops_loop_extra"], cost["bytes accessed"] + walk["bytes_loop_extra"],
                 walk["collective_ici_bytes"], chip)
    mfu(model_flops_per_chip, r["time_s"], chip)

Roofline time = max(flops / peak, bytes / HBM bandwidth, collective time): the step can be no faster than its
busiest unit if the other two overlap perfectly; their sum is the pessimistic bound (nothing overlaps).
Collective time = sum over collectives of ring factor x buffer bytes / ICI bandwidth, with the usual ring
factors over a replica group of n chips: all-reduce 2(n-1)/n of the buffer, all-gather (n-1)/n of the
gathered output, reduce-scatter (n-1)/n of the full (pre-scatter) input, all-to-all (n-1)/n, collective-permute
1 (each chip sends its buffer once). The ICI bandwidth is the chip's total over all its links in one direction,
so a collective that runs over one mesh axis (a subset of the links) is modelled optimistically.

Loops: XLA's cost_analysis counts a while body once, whatever its trip count (a scanned 28-layer model reports
one layer's flops). The HLO walk here multiplies every op inside a while by the loop's trip count (recursing
through nested loops, calls, fusions and async wrappers) and also counts it the way XLA does (each body
once); the difference ("loop extra") is added to XLA's flops and bytes, so a program without loops keeps
exactly XLA's numbers. The trip count is `known_trip_count` from the while's backend_config where XLA prints
it (CPU, GPU); the TPU compiler's HLO text does not, so it is read from the loop itself: the condition's
`counter < constant`, the counter's constant start in the init tuple and its constant step in the body. Walk flops are dots and convolutions (2 x output elements x
contracted size); walk bytes are operands + results of each non-fused op (a fusion reading a dynamic-slice of a
parameter counts the slice, an in-place dynamic-update-slice counts the update), the HBM traffic model XLA uses.

MFU here is model-FLOPs utilisation: model FLOPs / (roofline time x peak), with model FLOPs 6 x params x
tokens for a train micro-batch (forward + backward), 2 x params x tokens for a prefill, 2 x params x rows for
one decode step, per chip. Compiled flops / peak / time is the hardware utilisation instead: it also counts
rematerialised forward passes (remat_policy 'full' recomputes each layer in the backward pass) and attention.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re

GB = 1e9
GIB = 1024 ** 3


@dataclasses.dataclass(frozen=True)
class ChipSpec:
  name: str
  peak_flops: float    # dense bf16 FLOP/s per chip
  hbm_bw: float        # HBM bytes/s per chip
  ici_bw: float        # inter-chip interconnect bytes/s per chip, one direction, all links together
  hbm_bytes: int       # HBM capacity per chip


# Cloud TPU system-architecture pages (docs.cloud.google.com/tpu/docs/<version>), per chip. The pages state ICI
# either as "Interchip Interconnect BW" in Gbps (v5p 4,800, v5e 1,600: one direction) or as "bidirectional ICI
# bandwidth" in GBps (v5p 1,200, v5e 400, v6e 800: both directions); both give the same one-direction bytes/s.
CHIPS = {
    # docs.cloud.google.com/tpu/docs/v5p: 459 TFLOP/s bf16, 95 GiB at 2,765 GBps, ICI 4,800 Gbps = 600 GB/s
    "v5p": ChipSpec("v5p", 459e12, 2765 * GB, 4800e9 / 8, 95 * GIB),
    # docs.cloud.google.com/tpu/docs/v5e: 197 TFLOP/s bf16, 16 GB at 819 GBps, ICI 1,600 Gbps = 200 GB/s
    "v5e": ChipSpec("v5e", 197e12, 819 * GB, 1600e9 / 8, 16 * GIB),
    # docs.cloud.google.com/tpu/docs/v4: 275 TFLOP/s bf16, 32 GiB at 1,200 GBps. The v4 page gives no per-chip
    # ICI figure; 2,400 Gbps (= 300 GB/s) is the number quoted in Cloud TPU comparison tables, not re-checked.
    "v4": ChipSpec("v4", 275e12, 1200 * GB, 2400e9 / 8, 32 * GIB),
    # docs.cloud.google.com/tpu/docs/v6e: 918 TFLOP/s bf16, 32 GB at 1,638 GBps (older copies: 1,640),
    # bidirectional ICI 800 GBps = 400 GB/s one way (older copies: 3,584 Gbps = 448 GB/s; the current page is used)
    "v6e": ChipSpec("v6e", 918e12, 1638 * GB, 800 * GB / 2, 32 * GIB),
}
CHIPS["v5litepod"] = CHIPS["v5e"]   # the TPU runtime's name for v5e

# NVIDIA datasheets, per GPU (SXM boards): dense bf16 tensor-core FLOP/s (the sparse figure is twice that), HBM
# bandwidth, NVLink 900 GB/s over both directions (450 GB/s one way), capacity. benchmarks/gpu_suite.py takes the
# peak for MFU from here and measures the bandwidth beside the published one.
GPUS = {
    "h100-sxm": ChipSpec("h100-sxm", 989e12, 3.35e12, 450 * GB, 80 * GB),
    "h200": ChipSpec("h200", 989e12, 4.8e12, 450 * GB, 141 * GB),
}
# substrings of a device kind (jax's device_kind, torch.cuda.get_device_name) -> GPUS key, first match wins;
# the H100 SXM calls itself 'NVIDIA H100 80GB HBM3' (the PCIe and NVL boards have other peaks: not listed)
_GPU_KINDS = ((("H200",), "h200"), (("H100", "SXM"), "h100-sxm"), (("H100", "80GB HBM3"), "h100-sxm"))


def gpu_spec(device_kind: str) -> ChipSpec | None:
  """The GPUS entry for a device kind string, or None for a card not in the table."""
  for parts, key in _GPU_KINDS:
    if all(p in device_kind for p in parts):
      return GPUS[key]
  return None

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_DTYPE_BYTES = {"pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
                "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
# ops that move no HBM bytes of their own (aliases, control flow whose bodies are walked, bookkeeping)
_FREE = {"parameter", "get-tuple-element", "tuple", "constant", "bitcast", "while", "call", "conditional",
         "after-all", "partition-id", "replica-id", "async-done", "opt-barrier", "add-dependency", "domain"}


# ---------------------------------------------------------------------------------------------- HLO text
def shape_bytes(type_text: str) -> float:
  """Bytes of an HLO type ('bf16[4,8]{1,0}', or a tuple of them); unknown element types (token) count 0."""
  total = 0.0
  for dtype, dims in re.findall(r"\b([a-z]+\d*(?:e\d+m\d+\w*)?)\[([\d,]*)\]", type_text):
    size = _DTYPE_BYTES.get(dtype, 1 if dtype.startswith("f8") else 0)
    total += size * math.prod(int(d) for d in dims.split(",") if d)
  return total


def _dims(type_text: str) -> list[int]:
  m = re.search(r"\[([\d,]*)\]", type_text)
  return [int(d) for d in m.group(1).split(",") if d] if m else []


def _split_top(text: str) -> list[str]:
  """Splits at commas outside (), {} and []."""
  out, depth, cur = [], 0, []
  for ch in text:
    if ch in "({[":
      depth += 1
    elif ch in ")}]":
      depth -= 1
    if ch == "," and depth == 0:
      out.append("".join(cur).strip())
      cur = []
    else:
      cur.append(ch)
  if "".join(cur).strip():
    out.append("".join(cur).strip())
  return out


def _closing(text: str, start: int) -> int:
  """Index of the bracket closing the one at text[start]."""
  depth = 0
  for i in range(start, len(text)):
    if text[i] in "({[":
      depth += 1
    elif text[i] in ")}]":
      depth -= 1
      if depth == 0:
        return i
  raise ValueError(f"unbalanced HLO text: {text[start:start + 80]!r}")


@dataclasses.dataclass
class Instr:
  name: str
  type: str
  opcode: str
  operands: list[str]     # operand instruction names
  attrs: str
  root: bool = False


_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")


def parse_hlo(text: str) -> tuple[dict[str, list[Instr]], str]:
  """{computation name: instructions} and the entry computation's name."""
  comps: dict[str, list[Instr]] = {}
  entry, current = "", None
  for line in text.splitlines():
    line = re.sub(r"/\*.*?\*/", "", line)        # /*index=5*/ markers inside long tuples
    if current is None:
      m = _HEADER.match(line)
      if m:
        current = comps.setdefault(m.group(1), [])
        if line.startswith("ENTRY"):
          entry = m.group(1)
      continue
    if line.strip() == "}":
      current = None
      continue
    m = _INSTR.match(line)
    if not m:
      continue
    rest = line[m.end():]
    if rest.startswith("("):                      # tuple-typed result
      end = _closing(rest, 0)
      type_text, rest = rest[:end + 1], rest[end + 1:].lstrip()
    else:
      type_text, _, rest = rest.partition(" ")
    op_m = re.match(r"([\w\-]+)\(", rest)
    if not op_m:
      continue
    open_at = op_m.end() - 1
    close_at = _closing(rest, open_at)
    operands = [o.split()[-1].lstrip("%") for o in _split_top(rest[open_at + 1:close_at]) if o.split()]
    current.append(Instr(m.group(2), type_text, op_m.group(1), operands, rest[close_at + 1:], bool(m.group(1))))
  return comps, entry


def _attr(attrs: str, key: str) -> str | None:
  m = re.search(rf"\b{key}=%?([\w.\-]+)", attrs)
  return m.group(1) if m else None


def _called(ins: Instr) -> list[str]:
  names = [_attr(ins.attrs, k) for k in ("calls", "body", "condition", "to_apply")]
  m = re.search(r"branch_computations=\{([^}]*)\}", ins.attrs)
  if m:
    names += [b.strip().lstrip("%") for b in m.group(1).split(",")]
  return [n for n in names if n]


def trip_count(ins: Instr) -> int | None:
  """A while's known trip count from its backend_config, or None."""
  m = re.search(r"backend_config=(\{.*\})\s*$", ins.attrs)
  if m:
    try:
      n = json.loads(m.group(1)).get("known_trip_count", {}).get("n")
      return int(n) if n is not None else None
    except ValueError:
      pass
  m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.attrs)
  return int(m.group(1)) if m else None


def _resolve(name: str, by_name: dict[str, Instr]) -> Instr | None:
  """Follows copies, converts and bitcasts back to the instruction that makes the value."""
  ins = by_name.get(name)
  while ins is not None and ins.opcode in ("copy", "convert", "bitcast") and ins.operands:
    ins = by_name.get(ins.operands[0])
  return ins


def _const(ins: Instr | None) -> int | None:
  if ins is not None and ins.opcode == "constant" and ins.operands:
    try:
      return int(ins.operands[0])
    except ValueError:
      return None
  return None


def infer_trip_count(ins: Instr, comps: dict[str, list[Instr]], by_name: dict[str, Instr]) -> int | None:
  """The known_trip_count of the while's backend_config (CPU / GPU HLO), else (TPU HLO, which does not print
  it) read from the loop: condition `induction var <cmp> constant`, the init tuple's constant start and the
  body's `add(var, constant)` step. None when the loop has another shape."""
  n = trip_count(ins)
  if n is not None:
    return n
  cond = comps.get(_attr(ins.attrs, "condition") or "", [])
  root = next((i for i in cond if i.root), None)
  if root is not None and root.opcode == "fusion":     # compare wrapped in a fusion: look inside
    inner = comps.get(_attr(root.attrs, "calls") or "", [])
    params = {int(i.operands[0]): i.name for i in inner if i.opcode == "parameter"}
    outer = {params[k]: op for k, op in enumerate(root.operands) if k in params}
    root = next((i for i in inner if i.root), None)
    if root is not None:
      root = dataclasses.replace(root, operands=[outer.get(o, o) for o in root.operands])
  if root is None or root.opcode != "compare" or len(root.operands) != 2:
    return None
  direction = re.search(r"direction=(\w+)", root.attrs)
  a, b = (_resolve(o, by_name) for o in root.operands)
  if _const(b) is None or a is None or a.opcode != "get-tuple-element":
    return None
  limit, index = _const(b), int(re.search(r"index=(\d+)", a.attrs).group(1))
  init_tuple = by_name.get(ins.operands[0]) if ins.operands else None
  start = _const(_resolve(init_tuple.operands[index], by_name)) if init_tuple is not None and \
      init_tuple.opcode == "tuple" and index < len(init_tuple.operands) else None
  if start is None:
    return None
  step = 1
  body = comps.get(_attr(ins.attrs, "body") or "", [])
  body_root = next((i for i in body if i.root), None)
  if body_root is not None and body_root.opcode == "tuple" and index < len(body_root.operands):
    upd = _resolve(body_root.operands[index], by_name)
    if upd is not None and upd.opcode == "add":
      step = next((c for c in (_const(_resolve(o, by_name)) for o in upd.operands) if c), 1)
  d = direction.group(1) if direction else "LT"
  span = {"LT": limit - start, "LE": limit - start + 1, "NE": limit - start, "GT": start - limit,
          "GE": start - limit + 1}.get(d)
  if span is None or step == 0:
    return None
  return max(0, -(-span // abs(step)))


def group_size(attrs: str, num_devices: int) -> int:
  """Chips per replica group: {{0,1,2,3},{...}}, the iota form [groups,size]<=[...], the mesh form
  mesh['axis_0'=8,'axis_1'=4] {'axis_1'} (product of the listed axes; 'a':(k)m is a sub-axis of size m),
  or {} (all devices)."""
  m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", attrs)
  if m:
    sizes = {k: int(v) for k, v in re.findall(r"'([^']+)'=(\d+)", m.group(1))}
    axes = re.findall(r"'([^']+)'(?::\((\d+)\)(\d+))?", m.group(2))
    return math.prod(int(sub) if sub else sizes.get(a, 1) for a, _, sub in axes)
  m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", attrs)
  if m:
    return int(m.group(2))
  m = re.search(r"replica_groups=\{(\{[^}]*\})", attrs)
  if m:
    return len([x for x in m.group(1).strip("{}").split(",") if x.strip()])
  return num_devices


def collective_kind(opcode: str) -> str | None:
  base = opcode[:-len("-start")] if opcode.endswith("-start") else opcode
  return base if base in COLLECTIVES else None


def _collective_buffer(ins: Instr, kind: str, types: dict[str, str]) -> float:
  """The buffer the ring factor applies to: gathered output, full reduce-scatter input, else the output."""
  out = ins.type
  if ins.opcode.endswith("-start") and ins.type.startswith("(") and kind in ("all-gather", "collective-permute"):
    parts = _split_top(ins.type[1:-1])           # (operands..., outputs...[, contexts])
    n_in = len(ins.operands)
    out = ", ".join(parts[n_in:2 * n_in])
  if kind == "reduce-scatter":
    return sum(shape_bytes(types.get(o, "")) for o in ins.operands)
  return shape_bytes(out)


RING_FACTOR = {"all-reduce": lambda n: 2 * (n - 1) / n, "all-gather": lambda n: (n - 1) / n,
               "reduce-scatter": lambda n: (n - 1) / n, "all-to-all": lambda n: (n - 1) / n,
               "collective-permute": lambda n: 1.0}


def _op_flops(ins: Instr, types: dict[str, str]) -> float:
  if ins.opcode == "dot":
    lhs = _dims(types.get(ins.operands[0], ""))
    m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", ins.attrs)
    k = math.prod(lhs[int(i)] for i in m.group(1).split(",") if i) if m and lhs else 1
    return 2.0 * math.prod(_dims(ins.type)) * k
  if ins.opcode == "convolution":
    return _conv_flops(ins, types)
  return 0.0


def _window(attrs: str) -> dict[str, list]:
  m = re.search(r"window=\{([^}]*)\}", attrs)
  out: dict[str, list] = {}
  for part in (m.group(1).split() if m else []):
    key, _, val = part.partition("=")
    out[key] = [tuple(int(x) for x in v.split("_")) if "_" in v else int(v) for v in val.split("x")]
  return out


def _conv_flops(ins: Instr, types: dict[str, str]) -> float:
  """2 x input features per group x output features x batch per group x the valid (input, kernel) position
  pairs of each spatial dimension, counting padding and dilation holes out: TPU HLO writes batched matmuls as
  dilated convolutions whose window spans a batch dimension, so most window positions are holes."""
  lhs, rhs, out = (_dims(types.get(ins.operands[0], "")), _dims(types.get(ins.operands[1], "")), _dims(ins.type))
  m = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", ins.attrs)
  if not (m and lhs and rhs and out):
    return 0.0
  lhs_l, rhs_l, out_l = m.groups()
  win = _window(ins.attrs)
  n_sp = sum(ch.isdigit() for ch in lhs_l)
  valid = 1
  for d in range(n_sp):
    size_in = lhs[lhs_l.index(str(d))]
    size_k, size_o = rhs[rhs_l.index(str(d))], out[out_l.index(str(d))]
    stride = win.get("stride", [1] * n_sp)[d]
    lo = win.get("pad", [(0, 0)] * n_sp)[d][0]
    ld, rd = win.get("lhs_dilate", [1] * n_sp)[d], win.get("rhs_dilate", [1] * n_sp)[d]
    dilated = (size_in - 1) * ld + 1
    valid *= sum(1 for o in range(size_o) for k in range(size_k)
                 if 0 <= o * stride + k * rd - lo < dilated and (o * stride + k * rd - lo) % ld == 0)
  fgc = int(_attr(ins.attrs, "feature_group_count") or 1)
  bgc = int(_attr(ins.attrs, "batch_group_count") or 1)
  in_feat, batch = lhs[lhs_l.index("f")], lhs[lhs_l.index("b")]
  return 2.0 * (in_feat // fgc) * out[out_l.index("f")] * (batch // bgc) * valid


def _param_read(comps, body_name: str, pname: str, full: float) -> float:
  """Bytes a fused computation reads of its parameter `pname`: the slices of dynamic-slice users, nothing
  for an in-place dynamic-update-slice target, followed through bitcasts and nested fusions; any other use
  reads it whole."""
  body = comps.get(body_name, [])
  total = 0.0
  for u in (i for i in body if pname in i.operands):
    if u.opcode == "dynamic-slice" and u.operands[0] == pname:
      total += shape_bytes(u.type)
    elif u.opcode == "dynamic-update-slice" and u.operands[0] == pname:
      continue
    elif u.opcode == "bitcast":
      total += _param_read(comps, body_name, u.name, full)
    elif u.opcode == "fusion":
      inner = _attr(u.attrs, "calls") or ""
      params = {int(i.operands[0]): i.name for i in comps.get(inner, []) if i.opcode == "parameter"}
      total += sum(_param_read(comps, inner, params[k], full) for k, o in enumerate(u.operands)
                   if o == pname and k in params)
    else:
      return full
  return min(total, full)


def _root_write(comps, body_name: str, out_bytes: float, types) -> float:
  """Bytes a fused computation writes: the update of a root dynamic-update-slice (in place), through
  bitcasts, tuples and nested fusions; otherwise its whole output."""
  body = comps.get(body_name, [])
  by = {i.name: i for i in body}
  root = next((i for i in body if i.root), None)
  while root is not None and root.opcode == "bitcast" and root.operands[0] in by:
    root = by[root.operands[0]]
  if root is None:
    return out_bytes
  if root.opcode == "dynamic-update-slice":
    return shape_bytes(types.get(root.operands[1], ""))
  if root.opcode == "fusion":
    return _root_write(comps, _attr(root.attrs, "calls") or "", out_bytes, types)
  if root.opcode == "tuple":
    return sum(_root_write_one(comps, by, o, types) for o in root.operands)
  return out_bytes


def _root_write_one(comps, by, name, types) -> float:
  ins = by.get(name)
  while ins is not None and ins.opcode == "bitcast" and ins.operands[0] in by:
    ins = by[ins.operands[0]]
  if ins is None:
    return 0.0
  if ins.opcode == "dynamic-update-slice":
    return shape_bytes(types.get(ins.operands[1], ""))
  return shape_bytes(ins.type)


def _fusion_bytes(ins: Instr, comps, types) -> float:
  """Operands + result of a fusion, with dynamic-slice reads and in-place dynamic-update-slice writes counted
  by the slice (a scanned layer reads one layer of the stacked weights, not all of them)."""
  name = _attr(ins.attrs, "calls") or ""
  params = {int(i.operands[0]): i.name for i in comps.get(name, []) if i.opcode == "parameter" and i.operands}
  reads = sum(_param_read(comps, name, params[k], shape_bytes(types.get(o, ""))) if k in params
              else shape_bytes(types.get(o, "")) for k, o in enumerate(ins.operands))
  return reads + _root_write(comps, name, shape_bytes(ins.type), types)


def _op_bytes(ins: Instr, comps, types) -> float:
  if ins.opcode in _FREE or ins.opcode.endswith("-done"):
    return 0.0
  if ins.opcode == "fusion":
    return _fusion_bytes(ins, comps, types)
  kind = collective_kind(ins.opcode)
  out = _collective_buffer(ins, kind, types) if kind and kind != "reduce-scatter" else shape_bytes(ins.type)
  if ins.opcode == "dynamic-slice":
    return 2 * out
  if ins.opcode == "copy-start":               # (source, destination, context): one read and one write
    return 2 * sum(shape_bytes(types.get(o, "")) for o in ins.operands)
  if ins.opcode == "dynamic-update-slice":
    return 2 * shape_bytes(types.get(ins.operands[1], ""))
  return out + sum(shape_bytes(types.get(o, "")) for o in ins.operands)


def hlo_totals(text: str, num_devices: int) -> dict:
  """Walks the module from its entry. Returns per collective kind {count, bytes, ici_bytes} with loop trip
  counts applied, `collective_ici_bytes` (ring-factored bytes, summed), `flops` / `bytes` of the walk with
  trip counts, `flops_once` / `bytes_once` with every body once (what XLA's cost_analysis counts: a check
  of the walk), `flops_loop_extra` / `bytes_loop_extra` (the difference, what XLA leaves out), `loops`
  [(trip count, body)] and `unknown_trip_counts` (loops counted once)."""
  comps, entry = parse_hlo(text)
  by_name = {i.name: i for body in comps.values() for i in body}
  types = {name: i.type for name, i in by_name.items()}
  colls = {k: {"count": 0.0, "bytes": 0.0, "ici_bytes": 0.0} for k in COLLECTIVES}
  loops: list[tuple[int, str]] = []
  unknown = [0]

  def walk(name: str, mult: float, once_mult: float, fused: bool, acc: dict, seen: tuple):
    if name in seen:
      return
    for ins in comps.get(name, []):
      kind = collective_kind(ins.opcode)
      if kind:
        buf = _collective_buffer(ins, kind, types)
        n = 2 if kind == "collective-permute" else group_size(ins.attrs, num_devices)
        colls[kind]["count"] += mult
        colls[kind]["bytes"] += mult * buf
        colls[kind]["ici_bytes"] += mult * buf * RING_FACTOR[kind](max(n, 1))
      f = _op_flops(ins, types)
      acc["flops"] += mult * f
      acc["flops_once"] += once_mult * f
      if not fused:
        b = _op_bytes(ins, comps, types)
        acc["bytes"] += mult * b
        acc["bytes_once"] += once_mult * b
      if ins.opcode == "while":
        n = infer_trip_count(ins, comps, by_name)
        if n is None:
          unknown[0] += 1
        loops.append((n or 1, _attr(ins.attrs, "body")))
        for sub in (_attr(ins.attrs, "body"), _attr(ins.attrs, "condition")):
          walk(sub, mult * (n or 1), once_mult, False, acc, seen + (name,))
      elif ins.opcode == "fusion":
        walk(_attr(ins.attrs, "calls"), mult, once_mult, True, acc, seen + (name,))
      elif ins.opcode in ("call", "conditional", "async-start", "call-start"):
        for sub in _called(ins):
          walk(sub, mult, once_mult, fused, acc, seen + (name,))
      # to_apply reducers (all-reduce, reduce, sort) hold scalar ops only: not walked

  acc = {"flops": 0.0, "flops_once": 0.0, "bytes": 0.0, "bytes_once": 0.0}
  walk(entry, 1.0, 1.0, False, acc, ())
  return {"collectives": {k: {"count": int(v["count"]), "bytes": v["bytes"], "ici_bytes": v["ici_bytes"]}
                          for k, v in colls.items()},
          "collective_ici_bytes": sum(v["ici_bytes"] for v in colls.values()),
          "flops": acc["flops"], "bytes": acc["bytes"],
          "flops_once": acc["flops_once"], "bytes_once": acc["bytes_once"],
          "flops_loop_extra": acc["flops"] - acc["flops_once"], "bytes_loop_extra": acc["bytes"] - acc["bytes_once"],
          "loops": loops, "unknown_trip_counts": unknown[0]}


# ---------------------------------------------------------------------------------------------- roofline
def roofline(flops: float, bytes_accessed: float, collective_ici_bytes: float, chip: ChipSpec) -> dict:
  """Per-chip times (seconds) of the three terms, the roofline (their max), the bound and the sum."""
  terms = {"compute": flops / chip.peak_flops, "memory": bytes_accessed / chip.hbm_bw,
           "collective": collective_ici_bytes / chip.ici_bw}
  bound = max(terms, key=terms.get)
  return {"compute_s": terms["compute"], "memory_s": terms["memory"], "collective_s": terms["collective"],
          "time_s": terms[bound], "bound": bound, "sum_s": sum(terms.values())}


def model_flops(kind: str, params: int, tokens: int) -> float:
  """Model FLOPs of a program over the whole slice: 6·N·T train, 2·N·T prefill, 2·N·rows decode (tokens =
  rows for decode), 0 for the optimizer update."""
  return {"train": 6.0, "prefill": 2.0, "decode": 2.0}.get(kind, 0.0) * params * tokens


def mfu(model_flops_per_chip: float, time_s: float, chip: ChipSpec) -> float | None:
  if not model_flops_per_chip or time_s <= 0:
    return None
  return model_flops_per_chip / (time_s * chip.peak_flops)
