"""Ahead-of-time compilation of the real train step and sampler for a TPU topology, on a CPU-only machine.

    pip install -e ".[tpu-aot]"      # = jax[tpu] of the installed jax version: libtpu holds the TPU compiler
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_7b.py --topology v5p:4x4x2 --json out.json
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_7b.py:v5e-256 --topology v5e:16x16
    JAX_PLATFORMS=cpu python -m benchmarks.aot --config configs/ui_s1_32b.py --topology v5p:4x4x4
(JAX_PLATFORMS=cpu keeps this machine's own backend on CPU; the TPU devices are abstract. Two runs at once need
ALLOW_MULTIPLE_LIBTPU_LOAD=1. --lower-only traces and lowers every program in seconds, compiling nothing.)

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
FLOPs are the compiled per-chip program's (cost_analysis); collectives are counted in the compiled HLO text.
The JSON also records the load average and the topology's chip count and HBM.
"""
from __future__ import annotations

import argparse
import dataclasses
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

GIB = 1024 ** 3
HBM_BYTES = {"v5p": 95 * GIB, "v5e": 16 * GIB, "v5litepod": 16 * GIB, "v4": 32 * GIB, "v6e": 32 * GIB}
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
TEXT_TOKEN_BUDGET = 1024      # system prompt + goal + K history lines + chat template tokens
SCREENSHOTS_PER_PROMPT = 3    # K = 2 history screenshots + the current one
LOWER_ONLY = False            # --lower-only: trace and lower every program, compile nothing (quick check)


# ---------------------------------------------------------------------------------------------- config & mesh
def load_config(spec: str):
  """'path/to/config.py' or 'path/to/config.py:arg' (the arg goes to get_config)."""
  from gui_jax.core.recipe_files import recipe_config
  return recipe_config(spec)


def topology_devices(name: str):
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


def apply_layout(config, n_chips: int):
  """The config's layout for this chip count (config.layouts[name] = {'chips', 'mesh': {...}, 'rl': {...}})."""
  layouts = config.get("layouts") or {}
  chosen = config.get("layout")
  if not chosen:
    matches = [k for k, v in layouts.items() if v["chips"] == n_chips]
    chosen = matches[0] if matches else None
  if chosen:
    lay = layouts[chosen]
    if lay["chips"] != n_chips:
      raise ValueError(f"layout {chosen!r} is for {lay['chips']} chips, the topology has {n_chips}")
    with config.unlocked():
      for block in ("mesh", "rl", "model"):
        for k, v in dict(lay.get(block, {})).items():
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


def compile_report(name: str, jitted, args, kwargs=None, resident_other: int = 0, hbm: int = 0) -> dict:
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
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  text = compiled.as_text()
  if os.environ.get("GUI_JAX_AOT_HLO_DIR"):   # diagnosis: keep the optimised per-chip HLO of each program
    os.makedirs(os.environ["GUI_JAX_AOT_HLO_DIR"], exist_ok=True)
    with open(os.path.join(os.environ["GUI_JAX_AOT_HLO_DIR"], f"{name}.hlo.txt"), "w") as f:
      f.write(text)
  counts = {c: len(re.findall(rf"\b{c}(?:-start)?\(", text)) for c in COLLECTIVES}
  peak = program_b + resident_other
  rep = {"compile_s": round(secs, 1), "argument_bytes": arg_b, "output_bytes": out_b, "temp_bytes": tmp_b,
         "alias_bytes": alias_b, "program_bytes": program_b, "resident_other_bytes": int(resident_other),
         "peak_bytes": int(peak), "peak_gib": round(peak / GIB, 2),
         "headroom_pct": round(100 * (1 - peak / hbm), 1) if hbm else None,
         "flops": float(cost.get("flops", -1.0)) if cost else None, "collectives": counts}
  print(f"  {name:<10} peak {peak / GIB:7.2f} GiB  (args {arg_b / GIB:.2f} out {out_b / GIB:.2f} alias "
        f"{alias_b / GIB:.2f} temp {tmp_b / GIB:.2f} resident {resident_other / GIB:.2f})  headroom "
        f"{rep['headroom_pct']}%  {rep['flops'] / 1e12:.1f} TFLOP  {counts}  [{secs:.0f}s]", flush=True)
  return rep


def run(config_spec: str, topology: str, layers: int | None = None,
        programs=("accumulate", "apply", "prefill", "decode"), text_only: bool = False) -> dict:
  from gui_jax.models import sharding as shd
  from gui_jax.rl.agent import abstract_model, model_config_from
  from gui_jax.train.rl_common import rl_loss_fn
  from gui_jax.train.state import Updater, make_optimizer, opt_state_shardings

  config = load_config(config_spec)
  devices = topology_devices(topology)
  n_chips = len(devices)
  family = chip_family(topology)
  hbm = HBM_BYTES.get(family, 0)
  layout_name = apply_layout(config, n_chips)
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
  print(f"{config_spec} on {topology} ({n_chips} chips, layout {layout_name}): mesh {dict(mesh.shape)}, "
        f"sampler mesh {dict(smesh.shape)}, {model_cfg.text.num_hidden_layers} layers, "
        f"params {model_cfg.param_dtype}, compute {model_cfg.dtype}", flush=True)

  graphdef, params_abs, rest = nnx.split(abstract_model(model_cfg), nnx.Param, ...)
  p_sh = shd.state_shardings(params_abs, mesh, rules)
  params = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), params_abs, p_sh)
  rl = config.rl
  optimizer = make_optimizer(rl.learning_rate, warmup_steps=rl.warmup_steps, weight_decay=rl.weight_decay,
                             max_grad_norm=rl.max_grad_norm)
  o_sh = opt_state_shardings(optimizer, params, p_sh)
  opt_state = jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s),
                           jax.eval_shape(optimizer.init, params), o_sh)
  updater = Updater(rl_loss_fn(graphdef, rest, rl), optimizer, compute_dtype=mcfg.compute_dtype, rules=rules)
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

  if "accumulate" in programs:
    res["programs"]["accumulate"] = compile_report(
        "accumulate", updater.accumulate_jit, (acc, params, batch, rng), resident_other=b_opt + b_ref + b_sampler,
        hbm=hbm)
  if "apply" in programs:
    res["programs"]["apply"] = compile_report("apply", updater.apply_jit, (params, opt_state, acc),
                                              resident_other=b_ref + b_sampler, hbm=hbm)
  if "prefill" in programs or "decode" in programs:
    with shd.activation_sharding(smesh, rules):  # what Agent does around the sampler's calls
      sp = _sampler_programs(config, model_cfg, graphdef, rest, s_params, smesh, prompt_len, new_tokens,
                             resident=b_param + b_opt + b_ref, hbm=hbm, programs=programs)
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
                      hbm, programs) -> dict:
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
                           resident_other=resident, hbm=hbm)
    out.setdefault("_programs", {})["prefill"] = out_p
  if "decode" in programs:
    fn = jax.jit(smp._decode_step, static_argnums=(0,), donate_argnums=(2,), out_shardings=dsh)
    out.setdefault("_programs", {})["decode"] = compile_report(
        "decode", fn, (full_graphdef, state, dstate, settings, stop, eos), resident_other=resident, hbm=hbm)
  return out


def _decode_state_shardings(dstate, mesh):
  """KV cache [layers, B, S, KV, hd] over batch and kv heads; per-row arrays over batch; scalars replicated."""
  def one(path, x):
    name = jax.tree_util.keystr(path)
    if x.ndim == 5:                                       # k / v
      axes = (None, "batch", None, "kv_heads", None)
    elif x.ndim >= 1 and "index" not in name:
      axes = ("batch",) + (None,) * (x.ndim - 1)
    else:
      axes = (None,) * x.ndim
    return NamedSharding(mesh, _spec(mesh, axes, x.shape))
  return jax.tree_util.tree_map_with_path(one, dstate)


def main(argv=None) -> list[dict]:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--config", required=True, help="config file[:layout]")
  ap.add_argument("--topology", required=True, action="append",
                  help="TPU topology in chips, e.g. v5p:4x4x2 (repeatable)")
  ap.add_argument("--layers", type=int, default=0, help="cut the text depth (quick checks; 0 = the config's)")
  ap.add_argument("--programs", default="accumulate,apply,prefill,decode")
  ap.add_argument("--text-only", action="store_true", help="diagnosis: train batch without screenshots")
  ap.add_argument("--json", help="write results here")
  ap.add_argument("--lower-only", action="store_true", help="trace + lower only (checks shapes in seconds)")
  args = ap.parse_args(argv)
  global LOWER_ONLY
  LOWER_ONLY = args.lower_only
  results = []
  for topo in args.topology:
    r = run(args.config, topo, layers=args.layers or None, programs=tuple(args.programs.split(",")),
            text_only=args.text_only)
    results.append(r)
  print(format_table(results))
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"results": results, "loadavg": list(os.getloadavg())}, f, indent=1)
  return results


def format_table(results) -> str:
  lines = [f"{'topology':<11} {'program':<10} {'peak GiB':>9} {'HBM GiB':>8} {'headroom':>9} {'TFLOP/chip':>11} "
           f"{'AR':>4} {'AG':>4} {'RS':>4} {'A2A':>4} {'CP':>4}"]
  for r in results:
    for name, p in r["programs"].items():
      if "collectives" not in p:
        continue
      c = p["collectives"]
      lines.append(f"{r['topology']:<11} {name:<10} {p['peak_gib']:>9.2f} {r['hbm_bytes_per_chip'] / GIB:>8.0f} "
                   f"{p['headroom_pct']:>8.1f}% {p['flops'] / 1e12:>11.2f} {c['all-reduce']:>4} {c['all-gather']:>4} "
                   f"{c['reduce-scatter']:>4} {c['all-to-all']:>4} {c['collective-permute']:>4}")
    lines.append(f"{r['topology']:<11} params/chip {r['param_bytes_per_chip'] / GIB:.3f} GiB vs total/chips "
                 f"{r['param_bytes_total_over_chips'] / GIB:.3f} GiB")
  return "\n".join(lines)


if __name__ == "__main__":
  main()
