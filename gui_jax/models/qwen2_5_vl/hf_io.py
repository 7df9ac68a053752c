"""Hugging Face checkpoint I/O for Qwen2.5-VL: HF directory <-> Flax NNX model, tensor by tensor.

  model, cfg = load_hf_checkpoint(path, dtype=None, param_dtype=None, shardings=None, strict=True, remat=None,
                                  scan_layers=None, attention_impl=None, remat_policy=None)
  save_hf_checkpoint(model, path, max_shard_size=5 * 2**30, dtype=None)
  param_mapping(cfg) -> list[TensorMapping]   # the declarative HF name <-> param path table

A HF directory holds `config.json` and either `model.safetensors` or shards listed in
`model.safetensors.index.json`. Names follow `Qwen2_5_VLForConditionalGeneration.save_pretrained`
(transformers 5 writes the original Qwen layout: `model.embed_tokens`, `model.layers.N.*`, `model.norm`,
`visual.*`, `lm_head.weight`); on load the in-memory transformers 5 names (`model.language_model.*`,
`model.visual.*`) are accepted too. With tied embeddings `lm_head.weight` is not written and ignored on load.

`shardings(path: str, logical_axes: tuple, shape: tuple) -> jax.sharding.Sharding | None` places each tensor as it
is read (e.g. NamedSharding from logical axis rules), so a large model never sits whole on one device.

With cfg.scan_layers the per-layer tensors `model.layers.{i}.*` / `visual.blocks.{i}.*` map to ONE stacked param
(leading 'layers' axis, slice i = layer i): load stacks them (placing the stacked array with its sharding), save
unstacks them; the files are the same either way.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
from gui_jax.models.qwen2_5_vl.safetensors_io import SafetensorsFile, write_safetensors

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


@dataclasses.dataclass(frozen=True)
class TensorMapping:
  """hf_name <-> param path ('.'-joined nnx path); transform: 'identity' | 'linear' (W.T) | 'patch'
  (Conv3d weight [D, C, T, P, P] <-> kernel [C*T*P*P, D]); layer: index into the param's leading stacked axis
  (scan_layers), None when the param is this tensor alone."""
  hf_name: str
  path: str
  transform: str
  layer: int | None = None


_VISION_BLOCK = [
    ("norm1.weight", "norm1.scale", "identity"), ("norm2.weight", "norm2.scale", "identity"),
    ("attn.qkv.weight", "attn.qkv.kernel", "linear"), ("attn.qkv.bias", "attn.qkv.bias", "identity"),
    ("attn.proj.weight", "attn.proj.kernel", "linear"), ("attn.proj.bias", "attn.proj.bias", "identity"),
] + [(f"mlp.{p}.{w}", f"mlp.{p}.{k}", t) for p in ("gate_proj", "up_proj", "down_proj")
     for w, k, t in (("weight", "kernel", "linear"), ("bias", "bias", "identity"))]

_TEXT_LAYER = [
    ("input_layernorm.weight", "input_layernorm.scale", "identity"),
    ("post_attention_layernorm.weight", "post_attention_layernorm.scale", "identity"),
    ("self_attn.o_proj.weight", "self_attn.o_proj.kernel", "linear"),
] + [(f"self_attn.{p}.{w}", f"self_attn.{p}.{k}", t) for p in ("q_proj", "k_proj", "v_proj")
     for w, k, t in (("weight", "kernel", "linear"), ("bias", "bias", "identity"))
] + [(f"mlp.{p}.weight", f"mlp.{p}.kernel", "linear") for p in ("gate_proj", "up_proj", "down_proj")]


def param_mapping(cfg: Qwen25VLConfig) -> list[TensorMapping]:
  """Every checkpoint tensor of `cfg` with its Flax param path and transform."""
  def layer_path(prefix, i):  # stacked: one param for all layers, slice i
    return (prefix, i) if cfg.scan_layers else (f"{prefix}.{i}", None)

  out = [TensorMapping("visual.patch_embed.proj.weight", "visual.patch_embed.kernel", "patch")]
  for i in range(cfg.vision.depth):
    pre, layer = layer_path("visual.blocks", i)
    out += [TensorMapping(f"visual.blocks.{i}.{h}", f"{pre}.{p}", t, layer) for h, p, t in _VISION_BLOCK]
  out += [TensorMapping("visual.merger.ln_q.weight", "visual.merger.ln_q.scale", "identity"),
          TensorMapping("visual.merger.mlp.0.weight", "visual.merger.mlp_in.kernel", "linear"),
          TensorMapping("visual.merger.mlp.0.bias", "visual.merger.mlp_in.bias", "identity"),
          TensorMapping("visual.merger.mlp.2.weight", "visual.merger.mlp_out.kernel", "linear"),
          TensorMapping("visual.merger.mlp.2.bias", "visual.merger.mlp_out.bias", "identity"),
          TensorMapping("model.embed_tokens.weight", "language_model.embed_tokens", "identity")]
  for i in range(cfg.text.num_hidden_layers):
    pre, layer = layer_path("language_model.layers", i)
    out += [TensorMapping(f"model.layers.{i}.{h}", f"{pre}.{p}", t, layer) for h, p, t in _TEXT_LAYER]
  out.append(TensorMapping("model.norm.weight", "language_model.norm.scale", "identity"))
  if not cfg.tie_word_embeddings:
    out.append(TensorMapping("lm_head.weight", "lm_head", "linear"))
  return out


def canonical_hf_name(name: str) -> str:
  """Maps the transformers 5 in-memory names onto the saved (original Qwen) names."""
  for prefix, repl in (("model.language_model.", "model."), ("model.visual.", "visual."),
                       ("language_model.model.", "model."), ("language_model.lm_head.", "lm_head.")):
    if name.startswith(prefix):
      return repl + name[len(prefix):]
  return name


def to_flax(arr: np.ndarray, transform: str) -> np.ndarray:
  if transform == "identity":
    return arr
  if transform == "linear":
    return arr.T
  if transform == "patch":
    return arr.reshape(arr.shape[0], -1).T
  raise ValueError(f"unknown transform {transform!r}")


def to_hf(arr: np.ndarray, transform: str, hf_shape: tuple[int, ...]) -> np.ndarray:
  if transform == "identity":
    return arr
  if transform == "linear":
    return arr.T
  if transform == "patch":
    return arr.T.reshape(hf_shape)
  raise ValueError(f"unknown transform {transform!r}")


def hf_shape(flax_shape: tuple[int, ...], transform: str, cfg: Qwen25VLConfig) -> tuple[int, ...]:
  if transform == "identity":
    return tuple(flax_shape)
  if transform == "linear":
    return tuple(reversed(flax_shape))
  v = cfg.vision
  return (v.hidden_size, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size)


def _path_str(path) -> str:
  return ".".join(str(p) for p in path)


def read_config(path: str) -> dict:
  cfg_file = os.path.join(path, "config.json")
  if not os.path.isfile(cfg_file):
    raise FileNotFoundError(f"{path}: no config.json (expected a Hugging Face checkpoint directory)")
  with open(cfg_file) as f:
    return json.load(f)


def open_checkpoint_files(path: str) -> dict[str, SafetensorsFile]:
  """Canonical tensor name -> open SafetensorsFile, from the index or from the *.safetensors files."""
  index = os.path.join(path, INDEX_FILE)
  if os.path.isfile(index):
    with open(index) as f:
      weight_map = json.load(f)["weight_map"]
    files = {fn: SafetensorsFile(os.path.join(path, fn)) for fn in sorted(set(weight_map.values()))}
    names = {}
    for name, fn in weight_map.items():
      if name not in files[fn].keys():
        raise ValueError(f"{index}: tensor {name!r} listed in {fn} but absent from that file")
      names[canonical_hf_name(name)] = (files[fn], name)
    return names
  shards = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
  if not shards:
    raise FileNotFoundError(f"{path}: no {SINGLE_FILE}, {INDEX_FILE} or *.safetensors files")
  names = {}
  for fn in shards:
    st = SafetensorsFile(os.path.join(path, fn))
    for name in st.keys():
      names[canonical_hf_name(name)] = (st, name)
  return names


def load_hf_checkpoint(path: str, dtype: str | None = None, param_dtype: str | None = None,
                       shardings: Callable | None = None, strict: bool = True,
                       config: Qwen25VLConfig | None = None, remat: bool | str | None = None,
                       scan_layers: bool | None = None, attention_impl: str | None = None,
                       remat_policy: str | None = None, vision_per_row: bool | None = None):
  """Loads a HF Qwen2.5-VL directory into a new model. Returns (model, cfg).

  dtype / param_dtype override the compute / storage dtypes (default: float32 compute, checkpoint storage
  dtype). strict: unexpected tensors raise (missing or mis-shaped tensors always raise). config: use this
  config instead of config.json. remat: see Qwen25VLForConditionalGeneration. scan_layers / attention_impl /
  remat_policy / vision_per_row: config runtime options (None = the config's / defaults).
  """
  runtime = dict(scan_layers=scan_layers, attention_impl=attention_impl, remat_policy=remat_policy,
                 vision_per_row=vision_per_row)
  if config is not None:
    cfg = config.replace(**{k: v for k, v in runtime.items() if v is not None})
  else:
    cfg = Qwen25VLConfig.from_hf_dict(read_config(path), dtype=dtype, param_dtype=param_dtype, **runtime)
  abstract = nnx.eval_shape(lambda: Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0), remat=remat))
  graphdef, state = nnx.split(abstract)
  flat = nnx.to_flat_state(state)
  by_path = {_path_str(p): (p, v) for p, v in flat}
  mapping = param_mapping(cfg)
  available = open_checkpoint_files(path)

  expected_hf = {m.hf_name for m in mapping}
  missing = sorted(expected_hf - set(available))
  if missing:
    raise ValueError(f"{path}: checkpoint is missing {len(missing)} tensor(s): {missing[:10]}"
                     + (" ..." if len(missing) > 10 else ""))
  ignorable = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
  unexpected = sorted(set(available) - expected_hf - ignorable)
  if unexpected and strict:
    raise ValueError(f"{path}: unexpected tensor(s) not used by the model: {unexpected[:10]}"
                     + (" ..." if len(unexpected) > 10 else ""))
  mapped_paths = {m.path for m in mapping}
  unmapped = sorted(set(by_path) - mapped_paths)
  if unmapped:
    raise AssertionError(f"model params with no checkpoint mapping: {unmapped}")

  pdtype = jnp.dtype(cfg.param_dtype)
  new_flat = []
  values = {}
  stacked: dict[str, np.ndarray] = {}  # path -> host buffer [layers, ...] being filled
  left: dict[str, int] = {}            # path -> layers still to read
  for m in mapping:
    left[m.path] = left.get(m.path, 0) + 1
  # Param by param (all layers of a stacked param together): the host holds one (stacked) param at a time.
  for m in sorted(mapping, key=lambda m: (m.path, m.layer or 0)):
    p, var = by_path[m.path]
    st, name = available[m.hf_name]
    one_shape = var.shape if m.layer is None else var.shape[1:]
    want = hf_shape(one_shape, m.transform, cfg)
    if st.shape(name) != want:
      raise ValueError(f"{st.path}: tensor {name!r} has shape {st.shape(name)}, expected {want} "
                       f"for param {m.path}" + (f" (layer {m.layer})" if m.layer is not None else ""))
    arr = to_flax(st.get(name), m.transform).astype(pdtype)
    if m.layer is not None:
      buf = stacked.setdefault(m.path, np.empty(var.shape, pdtype))
      buf[m.layer] = arr
      left[m.path] -= 1
      if left[m.path]:
        continue
      arr = stacked.pop(m.path)
    axes = var.get_metadata().get("out_sharding")
    sharding = shardings(m.path, axes, arr.shape) if shardings is not None else None
    values[m.path] = jax.device_put(arr, sharding) if sharding is not None else jnp.asarray(arr)
  for p, var in flat:
    new_flat.append((p, var.replace(values[_path_str(p)])))
  model = nnx.merge(graphdef, nnx.from_flat_state(new_flat))
  return model, cfg


def _parse_size(size) -> int:
  if isinstance(size, int):
    return size
  s = str(size).strip().upper()
  for unit, mult in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
    if s.endswith(unit):
      return int(float(s[:-len(unit)]) * mult)
  return int(s)


def save_hf_checkpoint(model: Qwen25VLForConditionalGeneration, path: str, max_shard_size="5GB",
                       dtype: str | None = None) -> list[str]:
  """Writes config.json + safetensors (sharded with an index when over max_shard_size). Returns file names.

  dtype: storage dtype of the tensors (default: the params' own dtype). Arrays must be fully addressable from
  this process (gather first on multi-host)."""
  cfg = model.cfg
  os.makedirs(path, exist_ok=True)
  flat = {_path_str(p): v for p, v in nnx.to_flat_state(nnx.state(model, nnx.Param))}
  out_dtype = jnp.dtype(dtype) if dtype else None
  plan = []  # (mapping, hf shape, nbytes)
  for m in param_mapping(cfg):
    if m.path not in flat:
      raise AssertionError(f"model has no param {m.path} (for {m.hf_name})")
    var = flat[m.path]
    dt = out_dtype or var[...].dtype
    one_shape = var.shape if m.layer is None else var.shape[1:]
    plan.append((m, hf_shape(one_shape, m.transform, cfg), int(np.prod(one_shape)) * jnp.dtype(dt).itemsize))
  limit = _parse_size(max_shard_size)
  shards, cur, cur_size = [], [], 0
  for item in plan:
    if cur and cur_size + item[2] > limit:
      shards.append(cur)
      cur, cur_size = [], 0
    cur.append(item)
    cur_size += item[2]
  shards.append(cur)
  names = ([SINGLE_FILE] if len(shards) == 1 else
           [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
  for old in os.listdir(path):  # stale weights from an earlier save would be picked up on load
    if old.endswith(".safetensors") and old not in names:
      os.remove(os.path.join(path, old))
  weight_map = {}
  host: dict[str, np.ndarray] = {}  # stacked params fetched once
  for fn, shard in zip(names, shards):
    tensors = {}
    for m, shape, _ in shard:
      if m.layer is None:
        arr = np.asarray(jax.device_get(flat[m.path][...]))
      else:
        if m.path not in host:
          host[m.path] = np.asarray(jax.device_get(flat[m.path][...]))
        arr = host[m.path][m.layer]
      if out_dtype is not None:
        arr = arr.astype(out_dtype)
      tensors[m.hf_name] = np.ascontiguousarray(to_hf(arr, m.transform, shape))
      weight_map[m.hf_name] = fn
    write_safetensors(os.path.join(path, fn), tensors, metadata={"format": "pt"})
  if len(shards) > 1:
    with open(os.path.join(path, INDEX_FILE), "w") as f:
      json.dump({"metadata": {"total_size": sum(s for _, _, s in plan)},
                 "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
  elif os.path.exists(os.path.join(path, INDEX_FILE)):
    os.remove(os.path.join(path, INDEX_FILE))
  hf_cfg = cfg.to_hf_dict()
  if dtype:
    hf_cfg["dtype"] = str(jnp.dtype(dtype))
  with open(os.path.join(path, "config.json"), "w") as f:
    json.dump(hf_cfg, f, indent=2)
  return names + ([INDEX_FILE] if len(shards) > 1 else [])
