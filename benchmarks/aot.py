"""Ahead-of-time compilation of the real train step and sampler for a TPU topology, on a CPU-only machine.

    pip install -e ".[tpu-aot]"      # = jax[tpu] of the installed jax version: libtpu holds the TPU compiler
    JAX_PLATFORMS=cpu python -m benchmarks.aot --lower-only   # every paper-scale recipe, each of its layouts
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_7b.py --topology v5p:4x4x2 --json out.json
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_7b.py:v5e-256 --topology v5e:16x16
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_32b.py --topology v5p:4x4x4
(JAX_PLATFORMS=cpu keeps this machine's own backend on CPU; the TPU devices are abstract. Two runs at once need
ALLOW_MULTIPLE_LIBTPU_LOAD=1. --lower-only traces and lowers every program in seconds, compiling nothing.)

Without --config: every paper-scale recipe in configs/, i.e. every recipe that declares `layouts` (per-slice
mesh + micro-batch, see configs/ui_s1_7b.py), on the topology of each of its layouts. The RL settings come
from the recipe's `online` block when it has one (online RL: the loss is its registered algorithm's policy
loss), else from `rl` (semi-online UI-S1: PPO-clip + KL); a missing field is an error naming recipe and field.

Naming: a topology string names CHIPS ("v5p:4x4x2" = 32 chips). Google's slice names count TensorCores for v5p
(2 per chip: v5p-64 = 32 chips = v5p:4x4x2, v5p-128 = 64 chips = v5p:4x4x4) and chips for v5e (v5e-256 =
v5e:16x16). The config's optional `:layout` argument picks a per-slice layout (mesh axes, micro-batch rows)
documented in the config file; by default the layout whose chip count matches the topology.

What is compiled (`jax.jit(...).lower(ShapeDtypeStructs with shardings).compile()` on abstract TPU devices):
  accumulate   Updater.accumulate_jit: forward + backward of the RL loss on one micro-batch, bf16 compute,
               float32 gradient accumulation (the function the trainer runs per micro-batch)
  apply        Updater.apply_jit: global-norm clip + AdamW on float32 master weights and moments
  prefill      the sampler's prefill (prompt + screenshots into a fresh KV cache, first token sampled)
  decode       one sampler decode step
Shapes come from the config: micro-batch rows (rl.micro_batch_size), prompt = 3 screenshots at
data.resolution + a text budget + model.max_new_tokens response tokens; sampler rows model.sample_batch_size.

Per-chip memory of a program = arguments + outputs - aliased (donated) + temporaries (memory_analysis), plus
the buffers that stay resident on the chip while it runs but are not its arguments (training state while
sampling, sampler weights while training, the reference policy). Headroom = 1 - peak / HBM.
Roofline (benchmarks/roofline.py): per program and chip, max(flops / peak bf16, bytes / HBM bandwidth,
collective bytes x ring factor / ICI bandwidth), with XLA's cost_analysis flops and bytes corrected for loop
trip counts (XLA counts a scanned layer once) and collective bytes read from the compiled HLO. Estimated MFU =
model FLOPs (6·params·tokens per train micro-batch, 2·params·tokens per prefill, 2·params·rows per decode step,
per chip) / (roofline time x peak): model-FLOPs utilisation, an upper bound from the roofline; `hw_util` =
compiled flops / peak / roofline time is the hardware utilisation, which also counts rematerialisation.
The JSON also records the load average and the topology's chip count and HBM.
"""
from __future__ import annotations

import argparse
import functools
import glob
import json
import math
import os
import re
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from benchmarks import roofline as rf

GIB = 1024 ** 3
HBM_BYTES = {name: chip.hbm_bytes for name, chip in rf.CHIPS.items()}
COLLECTIVES = rf.COLLECTIVES
RECIPES_DIR = "configs"
# the train-step settings this benchmark reads from a recipe's rl / online block
RL_FIELDS = ("learning_rate", "warmup_steps", "weight_decay", "max_grad_norm", "micro_batch_size", "kl_coef",
             "kl_kind", "clip_low", "clip_high", "aggregation")
# chips -> slice shape (a topology string counts chips); 3D tori for v4 / v5p, 2D for v5e / v6e
SLICE_SHAPES = {"v5p": {4: "2x2x1", 8: "2x2x2", 16: "2x2x4", 32: "4x4x2", 64: "4x4x4", 128: "4x4x8", 256: "4x8x8"},
                "v4": {4: "2x2x1", 8: "2x2x2", 16: "2x2x4", 32: "2x4x4", 64: "4x4x4", 128: "4x4x8", 256: "4x8x8"},
                "v5e": {4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8", 128: "8x16", 256: "16x16"},
                "v6e": {4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8", 128: "8x16", 256: "16x16"}}
TEXT_TOKEN_BUDGET = 1024      # system prompt + goal + K history lines + chat template tokens
SCREENSHOTS_PER_PROMPT = 3    # K = 2 history screenshots + the current one
LOWER_ONLY = False            # --lower-only: trace and lower every program, compile nothing (quick check)


# ---------------------------------------------------------------------------------------------- config & mesh
def load_config(spec: str):
  """'path/to/config.py' or 'path/to/config.py:arg' (the arg goes to get_config)."""
  from gui_jax.core.recipe_files import recipe_config
  return recipe_config(spec)


def layout_topology(layout_name: str, chips: int) -> str:
  """'v5p-64' with 32 chips -> 'v5p:4x4x2' (the layout name's prefix is the TPU generation)."""
  family = layout_name.split("-")[0].lower()
  shape = SLICE_SHAPES.get(family, {}).get(chips)
  if shape is None:
    raise ValueError(f"layout {layout_name!r}: no known {family} slice shape for {chips} chips "
                     f"(known: {SLICE_SHAPES.get(family, {})})")
  return f"{family}:{shape}"


def paper_scale_recipes(folder: str = RECIPES_DIR) -> list[tuple[str, list[tuple[str, str]]]]:
  """[(recipe path, [(layout, topology), ...])] of every recipe in `folder` that declares `layouts`."""
  out = []
  for path in sorted(glob.glob(os.path.join(folder, "*.py"))):
    layouts = load_config(path).get("layouts") or {}
    if layouts:
      out.append((path, [(name, layout_topology(name, lay["chips"])) for name, lay in sorted(layouts.items())]))
  return out


def rl_settings(config, recipe: str):
  """(block name, the recipe's RL block, its policy loss): `online` with the registered algorithm's loss,
  else `rl` with the default PPO-clip + KL. ValueError naming the recipe and field when one is missing."""
  from gui_jax.rl.losses import combine_loss
  block = "online" if "online" in config else "rl"
  cfg = config.get(block)
  if cfg is None:
    raise ValueError(f"{recipe}: no `rl` or `online` block (benchmarks.aot builds the RL train step from it)")
  missing = [f for f in RL_FIELDS + (("algorithm",) if block == "online" else ()) if f not in cfg]
  if missing:
    raise ValueError(f"{recipe}: config.{block}.{missing[0]} is missing (benchmarks.aot needs "
                     f"{', '.join(missing)} to build the train step)")
  if block == "rl":
    return block, cfg, combine_loss
  from gui_jax.rl.losses import get_policy_loss
  from gui_jax.train.online.builtin_algorithms import get_algorithm
  return block, cfg, get_policy_loss(get_algorithm(cfg.algorithm).policy_loss)


@functools.lru_cache(maxsize=None)
def topology_devices(name: str):
  """The abstract devices of a topology; one set per name, so recipes run one after another share them."""
  from jax.experimental import topologies
  return topologies.get_topology_desc(topology_name=name, platform="tpu").devices


def chip_family(name: str) -> str:
  return name.split(":")[0].lower()


def build_mesh(sizes: tuple[int, int, int], devices) -> jax.sharding.Mesh:
  """(data, fsdp, tensor) mesh over the topology's devices in ICI order (-1 = fill)."""
  from jax.experimental import mesh_utils

  from gui_jax.models.sharding import MESH_AXES
  sizes = list(sizes)
  if -1 in sizes:
    known = math.prod(s for s in sizes if s != -1)
    sizes[sizes.index(-1)] = len(devices) // known
  if math.prod(sizes) != len(devices):
    raise ValueError(f"mesh {sizes} does not cover the topology's {len(devices)} chips")
  return jax.sharding.Mesh(mesh_utils.create_device_mesh(sizes, devices, allow_split_physical_axes=True),
                           MESH_AXES)


def apply_layout(config, n_chips: int, chosen: str = ""):
  """The config's layout `chosen` (default: config.layout, else the one for this chip count); a layout is
  {'chips', and blocks to copy into the config: 'mesh', 'rl' or 'online', 'model'}."""
  layouts = config.get("layouts") or {}
  chosen = chosen or config.get("layout")
  if chosen and chosen not in layouts:
    raise ValueError(f"unknown layout {chosen!r}; known: {sorted(layouts)}")
  if not chosen:
    matches = [k for k, v in layouts.items() if v["chips"] == n_chips]
    chosen = matches[0] if matches else None
  if chosen:
    lay = layouts[chosen]
    if lay["chips"] != n_chips:
      raise ValueError(f"layout {chosen!r} is for {lay['chips']} chips, the topology has {n_chips}")
    with config.unlocked():
      config.layout = chosen
      for block, values in dict(lay).items():
        if block != "chips":
          for k, v in dict(values).items():
            config[block][k] = v
  return chosen


# ---------------------------------------------------------------------------------------------- abstract inputs
def sds(x, sharding) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x) if not hasattr(x, "dtype") else x.dtype,
                              sharding=sharding)


def sharded_bytes(tree) -> int:
  """Bytes one chip holds of an abstract pytree with shardings (its shard of every leaf)."""
  total = 0
  for x in jax.tree.leaves(tree):
    shape = x.sharding.shard_shape(x.shape) if x.sharding is not None else x.shape
    total += math.prod(shape) * jnp.dtype(x.dtype).itemsize
  return total


def global_bytes(tree) -> int:
  return sum(math.prod(x.shape) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def image_grid(model_cfg, resolution) -> tuple[int, int, int]:
  """(t, h, w) in patches of one screenshot of (width, height) pixels (multiples of patch * merge)."""
  w, h = resolution
  unit = model_cfg.vision.patch_size * model_cfg.vision.spatial_merge_size
  if w % unit or h % unit:
    raise ValueError(f"resolution {resolution} is not a multiple of {unit} px")
  return 1, h // model_cfg.vision.patch_size, w // model_cfg.vision.patch_size


def sequence_length(model_cfg, resolution, new_tokens: int) -> tuple[int, int]:
  """(prompt tokens, prompt + response length rounded up to a multiple of 512)."""
  t, h, w = image_grid(model_cfg, resolution)
  img_tokens = t * h * w // model_cfg.vision.spatial_merge_size ** 2
  prompt = SCREENSHOTS_PER_PROMPT * img_tokens + TEXT_TOKEN_BUDGET
  return prompt, -(-(prompt + new_tokens) // 512) * 512


def layout_sds(model_cfg, rows: int, resolution, mesh):
  """Pixel values + VisionLayout for `rows` prompts of SCREENSHOTS_PER_PROMPT screenshots (abstract; layout
  index arrays computed on the host as the batch builder does). With the model config's vision_per_row (the
  7B / 32B recipes) as `rl.batch.per_row_vision_inputs` builds them: [rows, N, D] and a grouped layout, both
  split over the batch axes; otherwise flat [N, D] patches split over them and the layout replicated."""
  from gui_jax.models.qwen2_5_vl.vision import vision_layout
  grid = np.asarray([image_grid(model_cfg, resolution)] * (rows * SCREENSHOTS_PER_PROMPT), np.int64)
  if getattr(model_cfg, "vision_per_row", False):
    from gui_jax.rl.batch import per_row_vision_inputs
    row_grid = grid[:SCREENSHOTS_PER_PROMPT]
    one = np.zeros((int(np.prod(row_grid, axis=1).sum()), 1), np.float32)  # pixel values: only the shape matters
    pv, layout = per_row_vision_inputs([[one]] * rows, [[row_grid]] * rows, model_cfg.vision)
    shape = (rows, pv.shape[1], model_cfg.vision.patch_dim)
    pixels = jax.ShapeDtypeStruct(shape, jnp.float32,
                                  sharding=NamedSharding(mesh, _spec(mesh, ("batch", None, None), shape)))
    lay = jax.tree.map(lambda a: sds(a, NamedSharding(mesh, _spec(mesh, ("batch",) + (None,) * (a.ndim - 1),
                                                                  a.shape))), layout)
    return pixels, lay, grid
  n = int(np.prod(grid, axis=1).sum())
  layout = vision_layout(grid, model_cfg.vision, pad_patches_to=n)
  rep = NamedSharding(mesh, PartitionSpec())
  pixel_spec = _spec(mesh, ("batch", None), (n, model_cfg.vision.patch_dim))
  pixels = jax.ShapeDtypeStruct((n, model_cfg.vision.patch_dim), jnp.float32, sharding=NamedSharding(mesh, pixel_spec))
  return pixels, jax.tree.map(lambda a: sds(a, rep), layout), grid


def _spec(mesh, axes, shape):
  from gui_jax.models.sharding import logical_to_spec
  return logical_to_spec(axes, mesh=mesh, shape=shape)


def train_batch_sds(model_cfg, rows: int, length: int, resp: int, resolution, mesh) -> dict:
  """The micro-batch `rl.batch.build_batch` emits, as ShapeDtypeStructs placed like `state.place_batch`."""
  def arr(shape, dtype, axes):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, _spec(mesh, axes, shape)))
  bl = ("batch", None)
  batch = {"input_ids": arr((rows, length), jnp.int32, bl), "attention_mask": arr((rows, length), jnp.bool_, bl),
           "loss_mask": arr((rows, length), jnp.float32, bl), "step_ids": arr((rows, length), jnp.int32, bl),
           "target_positions": arr((rows, resp), jnp.int32, bl), "target_valid": arr((rows, resp), jnp.bool_, bl),
           "advantages": arr((rows, length), jnp.float32, bl), "old_logp": arr((rows, length), jnp.float32, bl),
           "ref_logp": arr((rows, length), jnp.float32, bl),
           "position_ids": arr((3, rows, length), jnp.int32, (None, "batch", None))}
  if resolution is not None:
    batch["pixel_values"], batch["vision_layout"], _ = layout_sds(model_cfg, rows, resolution, mesh)
  return batch


# ---------------------------------------------------------------------------------------------- compile + report
class _TracingForTPU:
  """While lowering: `jax.default_backend()` answers 'tpu', so platform-dependent choices made at trace time
  (attention kernel 'auto', Pallas interpret mode) pick what a TPU host would, not this CPU's."""

  def __enter__(self):
    self._saved = jax.default_backend
    jax.default_backend = lambda: "tpu"

  def __exit__(self, *exc):
    jax.default_backend = self._saved


def compile_report(name: str, jitted, args, kwargs=None, resident_other: int = 0, hbm: int = 0,
                   chip: rf.ChipSpec | None = None, n_chips: int = 1, model_flops_per_chip: float = 0.0) -> dict:
  t0 = time.time()
  with _TracingForTPU():
    lowered = jitted.lower(*args, **(kwargs or {}))
  if LOWER_ONLY:
    print(f"  {name:<10} lowered in {time.time() - t0:.0f}s", flush=True)
    return {"lowered_only": True}
  compiled = lowered.compile()
  secs = time.time() - t0
  mem = compiled.memory_analysis()
  arg_b, out_b = int(mem.argument_size_in_bytes), int(mem.output_size_in_bytes)
  tmp_b, alias_b = int(mem.temp_size_in_bytes), int(mem.alias_size_in_bytes)
  program_b = arg_b + out_b - alias_b + tmp_b
  cost = compiled.cost_analysis()
  cost = (cost[0] if isinstance(cost, (list, tuple)) else cost) or {}
  text = compiled.as_text()
  if os.environ.get("GUI_JAX_AOT_HLO_DIR"):   # diagnosis: keep the optimised per-chip HLO of each program
    os.makedirs(os.environ["GUI_JAX_AOT_HLO_DIR"], exist_ok=True)
    with open(os.path.join(os.environ["GUI_JAX_AOT_HLO_DIR"], f"{name}.hlo.txt"), "w") as f:
      f.write(text)
  static = {c: len(re.findall(rf"\b{c}(?:-start)?\(", text)) for c in COLLECTIVES}
  walk = rf.hlo_totals(text, n_chips)
  # XLA counts each while body once: add the iterations it leaves out (scanned layers)
  xla_flops, xla_bytes = float(cost.get("flops", 0.0)), float(cost.get("bytes accessed", 0.0))
  flops, nbytes = xla_flops + walk["flops_loop_extra"], xla_bytes + walk["bytes_loop_extra"]
  peak = program_b + resident_other
  rep = {"compile_s": round(secs, 1), "argument_bytes": arg_b, "output_bytes": out_b, "temp_bytes": tmp_b,
         "alias_bytes": alias_b, "program_bytes": program_b, "resident_other_bytes": int(resident_other),
         "peak_bytes": int(peak), "peak_gib": round(peak / GIB, 2),
         "headroom_pct": round(100 * (1 - peak / hbm), 1) if hbm else None,
         "flops": flops, "bytes_accessed": nbytes, "xla_cost_flops": xla_flops, "xla_cost_bytes": xla_bytes,
         # the HLO walk with each loop body once, as XLA counts: close to xla_cost_* when the walk is right
         "walk_flops_once": walk["flops_once"], "walk_bytes_once": walk["bytes_once"],
         "collectives": static, "collectives_executed": walk["collectives"],
         "collective_ici_bytes": walk["collective_ici_bytes"], "while_loops": walk["loops"],
         "unknown_trip_counts": walk["unknown_trip_counts"], "model_flops_per_chip": model_flops_per_chip}
  if chip is not None:
    roof = rf.roofline(flops, nbytes, walk["collective_ici_bytes"], chip)
    rep["roofline"] = {"chip": chip.name, "compute_ms": 1e3 * roof["compute_s"], "memory_ms": 1e3 * roof["memory_s"],
                       "collective_ms": 1e3 * roof["collective_s"], "time_ms": 1e3 * roof["time_s"],
                       "sum_ms": 1e3 * roof["sum_s"], "bound": roof["bound"]}
    rep["mfu"] = rf.mfu(model_flops_per_chip, roof["time_s"], chip)
    rep["mfu_pessimistic"] = rf.mfu(model_flops_per_chip, roof["sum_s"], chip)
    rep["hw_util"] = flops / (roof["time_s"] * chip.peak_flops) if roof["time_s"] > 0 else None
  r = rep.get("roofline", {})
  print(f"  {name:<10} peak {peak / GIB:7.2f} GiB  (args {arg_b / GIB:.2f} out {out_b / GIB:.2f} alias "
        f"{alias_b / GIB:.2f} temp {tmp_b / GIB:.2f} resident {resident_other / GIB:.2f})  headroom "
        f"{rep['headroom_pct']}%  {flops / 1e12:.1f} TFLOP (XLA {xla_flops / 1e12:.1f})  roofline "
        f"{r.get('time_ms', float('nan')):.1f} ms {r.get('bound', '')}  MFU {_pct(rep.get('mfu'))}  {static}  "
        f"[{secs:.0f}s]", flush=True)
  return rep


def _pct(x) -> str:
  return f"{100 * x:.1f}%" if x is not None else "-"


def run(config_spec: str, topology: str, layers: int | None = None,
        programs=("accumulate", "apply", "prefill", "decode"), text_only: bool = False, layout: str = "") -> dict:
  from gui_jax.models import sharding as shd
  from gui_jax.rl.agent import abstract_model, model_config_from
  from gui_jax.train.rl_common import rl_loss_fn
  from gui_jax.train.state import Updater, make_optimizer, opt_state_shardings

  jax.clear_caches()   # traces of an earlier recipe with the same shapes must not be reused with this mesh
  config = load_config(config_spec)
  rl_block_name, rl, policy_loss = rl_settings(config, config_spec)
  devices = topology_devices(topology)
  n_chips = len(devices)
  family = chip_family(topology)
  chip = rf.CHIPS.get(family)
  hbm = HBM_BYTES.get(family, 0)
  layout_name = apply_layout(config, n_chips, layout)
  mcfg = config.mesh
  rules = shd.rules_by_name(mcfg.rules)
  mesh = build_mesh((mcfg.data, mcfg.fsdp, mcfg.tensor), devices)
  smesh = build_mesh(tuple(getattr(mcfg, f"sampler_{a}") or getattr(mcfg, a) for a in ("data", "fsdp", "tensor"))
                     if any((mcfg.sampler_data, mcfg.sampler_fsdp, mcfg.sampler_tensor))
                     else (mcfg.data, mcfg.fsdp, mcfg.tensor), devices)
  with config.unlocked():
    config.model.attention_impl = "splash"   # the TPU kernel ('auto' would resolve to this CPU's backend)
    if layers:
      config.model.num_hidden_layers = layers
  model_cfg = model_config_from(config.model, dtype=mcfg.compute_dtype, param_dtype=mcfg.param_dtype)
  print(f"{config_spec} on {topology} ({n_chips} chips, layout {layout_name}, config.{rl_block_name}): mesh "
        f"{dict(mesh.shape)}, "
        f"sampler mesh {dict(smesh.shape)}, {model_cfg.text.num_hidden_layers} layers, "
        f"params {model_cfg.param_dtype}, compute {model_cfg.dtype}", flush=True)

  graphdef, params_abs, rest = nnx.split(abstract_model(model_cfg), nnx.Param, ...)
  p_sh = shd.state_shardings(params_abs, mesh, rules)
  params = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), params_abs, p_sh)
  optimizer = make_optimizer(rl.learning_rate, warmup_steps=rl.warmup_steps, weight_decay=rl.weight_decay,
                             max_grad_norm=rl.max_grad_norm)
  o_sh = opt_state_shardings(optimizer, params, p_sh)
  opt_state = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                           jax.eval_shape(optimizer.init, params), o_sh)
  updater = Updater(rl_loss_fn(graphdef, rest, rl, policy_loss), optimizer, compute_dtype=mcfg.compute_dtype, rules=rules)
  updater.build(p_sh, o_sh)

  new_tokens = config.model.max_new_tokens
  prompt_len, length = sequence_length(model_cfg, config.data.resolution, new_tokens)
  rows = rl.micro_batch_size
  from gui_jax.rl.batch import RESPONSE_BUCKETS, bucket
  resp = bucket(new_tokens, RESPONSE_BUCKETS, "response length")
  batch = train_batch_sds(model_cfg, rows, length, resp, None if text_only else config.data.resolution, mesh)
  rng = jax.ShapeDtypeStruct((), jax.random.key(0).dtype, sharding=NamedSharding(mesh, PartitionSpec()))
  updater.metric_names(params, batch, rng)
  acc = jax.eval_shape(updater._zeros, params)
  acc_sh = {"grads": p_sh, "loss": NamedSharding(mesh, PartitionSpec()), "denom": NamedSharding(mesh, PartitionSpec()),
            "metrics": NamedSharding(mesh, PartitionSpec())}
  acc = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), acc,
                     jax.tree.map(lambda s, a: s, _broadcast_prefix(acc_sh, acc), acc))

  # Sampler: weights cast to the sampler dtype, resharded onto the sampler mesh.
  s_dtype = jnp.dtype(mcfg.get("sampler_dtype", mcfg.compute_dtype))
  s_sh = shd.state_shardings(params_abs, smesh, rules)
  s_params = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, s_dtype if jnp.issubdtype(x.dtype, jnp.floating)
                                                            else x.dtype, sharding=s), params_abs, s_sh)
  b_param, b_opt, b_acc = sharded_bytes(params), sharded_bytes(opt_state), sharded_bytes(acc["grads"])
  b_ref = b_param if rl.kl_coef > 0 else 0
  b_sampler = sharded_bytes(s_params)
  res: dict[str, Any] = {
      "config": config_spec, "topology": topology, "chips": n_chips, "layout": layout_name,
      "rl_block": rl_block_name, "algorithm": rl.get("algorithm"),
      "chip_spec": dict(vars(chip)) if chip else None,
      "hbm_bytes_per_chip": hbm, "mesh": dict(mesh.shape), "sampler_mesh": dict(smesh.shape),
      "text_layers": model_cfg.text.num_hidden_layers, "param_dtype": model_cfg.param_dtype,
      "compute_dtype": model_cfg.dtype, "sampler_dtype": str(s_dtype), "attention_impl": model_cfg.attention_impl
      if hasattr(model_cfg, "attention_impl") else None,
      "remat_policy": getattr(model_cfg, "remat_policy", None), "scan_layers": getattr(model_cfg, "scan_layers", None),
      "micro_batch_rows": rows, "sequence_length": length, "prompt_tokens": prompt_len, "response_bucket": resp,
      "screenshots_per_prompt": SCREENSHOTS_PER_PROMPT, "resolution": list(config.data.resolution),
      "image_patches_per_micro_batch": int(math.prod(batch["pixel_values"].shape[:-1])) if "pixel_values" in batch
      else 0, "vision_per_row": bool(getattr(model_cfg, "vision_per_row", False)),
      "num_params": sum(math.prod(x.shape) for x in jax.tree.leaves(params)),
      "param_bytes_total": global_bytes(params), "param_bytes_per_chip": b_param,
      "param_bytes_total_over_chips": global_bytes(params) // n_chips,
      "opt_state_bytes_per_chip": b_opt, "grad_acc_bytes_per_chip": b_acc, "reference_bytes_per_chip": b_ref,
      "sampler_weight_bytes_per_chip": b_sampler, "programs": {}, "loadavg": list(os.getloadavg())}
  print(f"  params {res['num_params'] / 1e9:.2f}B: {b_param / GIB:.2f} GiB/chip (total/chips "
        f"{res['param_bytes_total_over_chips'] / GIB:.2f}); AdamW {b_opt / GIB:.2f}, grad acc {b_acc / GIB:.2f}, "
        f"reference {b_ref / GIB:.2f}, sampler weights {b_sampler / GIB:.2f} GiB/chip; micro-batch {rows} x "
        f"{length} tokens, {res['image_patches_per_micro_batch']} patches", flush=True)

  n_params = res["num_params"]
  per_chip = dict(hbm=hbm, chip=chip, n_chips=n_chips)
  if "accumulate" in programs:
    res["programs"]["accumulate"] = compile_report(
        "accumulate", updater.accumulate_jit, (acc, params, batch, rng), resident_other=b_opt + b_ref + b_sampler,
        model_flops_per_chip=rf.model_flops("train", n_params, rows * length) / n_chips, **per_chip)
  if "apply" in programs:
    res["programs"]["apply"] = compile_report("apply", updater.apply_jit, (params, opt_state, acc),
                                              resident_other=b_ref + b_sampler, **per_chip)
  if "prefill" in programs or "decode" in programs:
    with shd.activation_sharding(smesh, rules):  # what Agent does around the sampler's calls
      sp = _sampler_programs(config, model_cfg, graphdef, rest, s_params, smesh, prompt_len, new_tokens,
                             resident=b_param + b_opt + b_ref, programs=programs, n_params=n_params, **per_chip)
    res["programs"].update(sp.pop("_programs", {}))
    res.update(sp)
  peaks = [p["peak_bytes"] for p in res["programs"].values() if "peak_bytes" in p]
  res["peak_bytes"] = max(peaks) if peaks else None
  res["headroom_pct"] = round(100 * (1 - max(peaks) / hbm), 1) if peaks and hbm else None
  return res


def _broadcast_prefix(prefix, tree):
  """Expands a pytree prefix of shardings to the full structure of `tree`."""
  return jax.tree.map(lambda s, sub: jax.tree.map(lambda _: s, sub), prefix, tree,
                      is_leaf=lambda x: isinstance(x, NamedSharding))


def _sampler_programs(config, model_cfg, graphdef, rest, s_params, smesh, prompt_len, new_tokens, *, resident,
                      hbm, programs, n_params, chip, n_chips) -> dict:
  from gui_jax.models import sampler as smp
  rows = config.model.sample_batch_size
  p = smp._bucket(prompt_len, smp.DEFAULT_PROMPT_BUCKETS, "prompt length")
  t = smp._bucket(new_tokens, smp.DEFAULT_NEW_TOKEN_BUCKETS, "max_new_tokens")
  rep = NamedSharding(smesh, PartitionSpec())

  def arr(shape, dtype, axes):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(smesh, _spec(smesh, axes, shape)))
  ids, mask = arr((rows, p), jnp.int32, ("batch", None)), arr((rows, p), jnp.bool_, ("batch", None))
  pos = arr((3, rows, p), jnp.int32, (None, "batch", None))
  pixels, layout, _ = layout_sds(model_cfg, rows, config.data.resolution, smesh)
  scalar = lambda dt: jax.ShapeDtypeStruct((), dt, sharding=rep)  # noqa: E731
  settings = (scalar(jnp.float32), scalar(jnp.int32), scalar(jnp.float32),
              jax.ShapeDtypeStruct((2,), jnp.int32, sharding=rep))
  stop = jax.ShapeDtypeStruct((4, 4), jnp.int32, sharding=rep)
  eos = jax.ShapeDtypeStruct((2,), jnp.int32, sharding=rep)
  rng = jax.ShapeDtypeStruct((), jax.random.key(0).dtype, sharding=rep)
  # The sampler jits over nnx.split(model) of the whole model (params + the rest).
  full_graphdef, state = nnx.split(nnx.merge(graphdef, s_params, rest))
  cache_len = p + t
  dstate_abs = jax.eval_shape(lambda *a: smp._prefill(full_graphdef, *a, cache_len=cache_len), state, ids, mask,
                              pos, pixels, layout, scalar(jnp.int32), rng, settings, stop, eos)
  dsh = _decode_state_shardings(dstate_abs, smesh)
  dstate = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), dstate_abs, dsh)
  out = {"sampler_rows": rows, "sampler_prompt_bucket": p, "sampler_new_tokens": t,
         "kv_cache_bytes_per_chip": sharded_bytes((dstate.cache.k, dstate.cache.v))}
  if "prefill" in programs:
    fn = jax.jit(smp._prefill, static_argnums=(0,), static_argnames=("cache_len",), out_shardings=dsh)
    out_p = compile_report("prefill", fn, (full_graphdef, state, ids, mask, pos, pixels, layout, scalar(jnp.int32),
                                           rng, settings, stop, eos), {"cache_len": cache_len},
                           resident_other=resident, hbm=hbm, chip=chip, n_chips=n_chips,
                           model_flops_per_chip=rf.model_flops("prefill", n_params, rows * p) / n_chips)
    out.setdefault("_programs", {})["prefill"] = out_p
  if "decode" in programs:
    fn = jax.jit(smp._decode_step, static_argnums=(0,), donate_argnums=(2,), out_shardings=dsh)
    out.setdefault("_programs", {})["decode"] = compile_report(
        "decode", fn, (full_graphdef, state, dstate, settings, stop, eos), resident_other=resident, hbm=hbm,
        chip=chip, n_chips=n_chips, model_flops_per_chip=rf.model_flops("decode", n_params, rows) / n_chips)
  return out


def _decode_state_shardings(dstate, mesh):
  """KV cache [layers, B, KV, S, hd] over batch and kv heads; per-row arrays over batch; scalars replicated."""
  def one(path, x):
    name = jax.tree_util.keystr(path)
    if x.ndim == 5:                                       # k / v
      axes = (None, "batch", "kv_heads", None, None)
    elif x.ndim >= 1 and "index" not in name:
      axes = ("batch",) + (None,) * (x.ndim - 1)
    else:
      axes = (None,) * x.ndim
    return NamedSharding(mesh, _spec(mesh, axes, x.shape))
  return jax.tree_util.tree_map_with_path(one, dstate)


def main(argv=None) -> list[dict]:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--config", help="config file[:arg] (default: every recipe in configs/ that declares layouts, "
                  "on each layout's topology)")
  ap.add_argument("--topology", action="append",
                  help="TPU topology in chips, e.g. v5p:4x4x2 (repeatable; default: the config's layouts')")
  ap.add_argument("--layers", type=int, default=0, help="cut the text depth (quick checks; 0 = the config's)")
  ap.add_argument("--programs", default="accumulate,apply,prefill,decode")
  ap.add_argument("--text-only", action="store_true", help="diagnosis: train batch without screenshots")
  ap.add_argument("--json", help="write results here (rewritten after each recipe x topology)")
  ap.add_argument("--lower-only", action="store_true", help="trace + lower only (checks shapes in seconds)")
  args = ap.parse_args(argv)
  global LOWER_ONLY
  LOWER_ONLY = args.lower_only
  if args.config:
    if args.topology:
      jobs = [(args.config, topo, "") for topo in args.topology]
    else:
      layouts = load_config(args.config).get("layouts") or {}
      if not layouts:
        ap.error(f"{args.config} declares no layouts: pass --topology")
      jobs = [(args.config, layout_topology(n, lay["chips"]), n) for n, lay in sorted(layouts.items())]
  else:
    if args.topology:
      ap.error("--topology needs --config (without it each recipe runs on its layouts' topologies)")
    jobs = [(path, topo, name) for path, lays in paper_scale_recipes() for name, topo in lays]
    print("paper-scale recipes: " + "; ".join(f"{p} on {t} ({n})" for p, t, n in jobs), flush=True)
  results, failed = [], []
  for spec, topo, layout in jobs:
    try:
      results.append(run(spec, topo, layers=args.layers or None, programs=tuple(args.programs.split(",")),
                         text_only=args.text_only, layout=layout))
    except Exception as e:  # noqa: BLE001 - one recipe's failure must not hide the others' results
      if args.config:
        raise
      failed.append((spec, topo, f"{type(e).__name__}: {e}"))
      print(f"FAILED {spec} on {topo}: {type(e).__name__}: {e}", flush=True)
    if args.json:
      with open(args.json, "w") as f:
        json.dump({"results": results, "failed": failed, "loadavg": list(os.getloadavg())}, f, indent=1)
  print(format_table(results))
  for spec, topo, err in failed:
    print(f"FAILED {spec} on {topo}: {err}")
  if failed:
    raise SystemExit(1)
  return results


def format_table(results) -> str:
  lines = [f"{'recipe':<16} {'topology':<11} {'program':<10} {'peak GiB':>9} {'HBM GiB':>8} {'headroom':>9} "
           f"{'TFLOP/chip':>11} {'roof ms':>9} {'bound':<10} {'sum ms':>9} {'MFU':>6} "
           f"{'AR':>5} {'AG':>5} {'RS':>5} {'A2A':>5} {'CP':>5}"]
  for r in results:
    recipe = os.path.basename(r["config"].split(":")[0])[:-3]
    for name, p in r["programs"].items():
      if "collectives" not in p:
        lines.append(f"{recipe:<16} {r['topology']:<11} {name:<10} lowered")
        continue
      roof = p.get("roofline") or {}
      c = {k: v["count"] for k, v in p["collectives_executed"].items()}
      lines.append(f"{recipe:<16} {r['topology']:<11} {name:<10} {p['peak_gib']:>9.2f} "
                   f"{r['hbm_bytes_per_chip'] / GIB:>8.0f} {p['headroom_pct']:>8.1f}% {p['flops'] / 1e12:>11.2f} "
                   f"{roof.get('time_ms', float('nan')):>9.2f} {roof.get('bound', '-'):<10} "
                   f"{roof.get('sum_ms', float('nan')):>9.2f} {_pct(p.get('mfu')):>6} {c['all-reduce']:>5} "
                   f"{c['all-gather']:>5} {c['reduce-scatter']:>5} {c['all-to-all']:>5} {c['collective-permute']:>5}")
    lines.append(f"{recipe:<16} {r['topology']:<11} params/chip {r['param_bytes_per_chip'] / GIB:.3f} GiB vs "
                 f"total/chips {r['param_bytes_total_over_chips'] / GIB:.3f} GiB; resident: AdamW "
                 f"{r['opt_state_bytes_per_chip'] / GIB:.2f}, grad acc {r['grad_acc_bytes_per_chip'] / GIB:.2f}, "
                 f"reference {r['reference_bytes_per_chip'] / GIB:.2f}, sampler weights "
                 f"{r['sampler_weight_bytes_per_chip'] / GIB:.2f} GiB/chip")
  return "\n".join(lines)


if __name__ == "__main__":
  main()
