"""One-call GPU measurement suite: the jobs' train step (MFU), the sampler (prefill, decode against the HBM bound)
and cuDNN attention, each beside PyTorch + transformers at the same shapes, every figure with its inputs.

On a GPU, one device-tool call (carry [".whl"]: the image lacks ml_collections, which reading the recipe needs;
timeout_s 600; the suite itself stops within --budget-s 470):

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .whl/*.whl && export PYTHONPATH=/tmp/site || exit; \
      PYTHONUNBUFFERED=1 python3 -m benchmarks.gpu_suite --json $OUT/gpu_suite.json

Here (a CPU backend picks the tiny --smoke shapes by itself and switches XLA's costly CPU passes off, since
those shapes compile far longer than they run; under 2 minutes on 2 cores):

    JAX_PLATFORMS=cpu python -m benchmarks.gpu_suite --json /tmp/gpu_suite.json [--sections card,attention]

Results: the JSON of a GPU run goes to experiments/results/gpu_<card>.json (card: meta.card, e.g. h100-sxm) and
its headline figures into a performance table in experiments/README.md. Both wait for a GPU run: no figure is written
before one exists.

Sections, in this order (on a GPU each runs in its own process, so JAX's and torch's memory never meet and a
crash or a stall costs one section; each gets its share of --budget-s, time left over passes on). The JSON is
rewritten after each section and each shape; a section (or shape) that raises, runs out of memory or out of
time records its error, and the rest still run. --fail NAME makes a section raise (tests).
  card           device kind; published peak bf16 FLOP/s and HBM bandwidth (benchmarks.roofline.GPUS); HBM
                 bandwidth measured by a device-to-device copy (bytes read + written / median time); versions
  attention      jax.nn.dot_product_attention 'cudnn' against 'xla' (bf16, causal; also packed rows through its
                 mask argument): max |diff| <= 2e-2 and times. On a CPU: "skipped: cudnn needs a GPU".
  train_jax      Updater.step (gui_jax/train/state.py) with the RL loss of configs/ui_s1_7b.py (rl_loss_fn:
                 PPO-clip + KL), fp32 master weights + AdamW, bf16 compute, the recipe's remat policy, scanned
                 layers and per-row images, on a 1.5B-class shape and on the 7B width with as many layers as
                 fit (same hidden size), rows of 4k text tokens and rows with one screenshot at the recipe's size
  train_torch    the same step in transformers: fp32 weights, bf16 autocast, activation checkpointing, AdamW
                 with global-norm clipping, LM head on the response positions; same shapes and token rows
  sampler_jax    gui_jax's Sampler on the 7B (weights in the recipe's sampler dtype, KV cache in its dtype):
                 prefill and decode tokens/s at batch 1, 16, 64, decode against the HBM bound
  sampler_torch  transformers' generate (greedy, bf16) at the same shapes

Figures: each timing is the median of --repeats (>= 5) synchronised calls after the first call (the warm-up:
compilation, reported as first_call_s) and --warmup further untimed ones; the repeats are recorded
(benchmarks.timing).
  MFU = model FLOPs / median step time / peak. Model FLOPs of a step (benchmarks.model.train_flops, corrected):
  6 x decoder matmul params x tokens + 6 x vocab x hidden x LM-head positions (the loss runs the head on the
  response only) + 12 x layers x hidden x seq x tokens (attention, no causal discount), plus for screenshots
  the vision tower's 6 x matmul params x patches (the merger's on patches / 4) + 12 x hidden x sum over blocks
  of (window or image patches)^2, real patches only (JAX pads them to a bucket: computed, not counted). The
  batch is placed on the device once (the input transfer is not timed). `accumulating`: the same
  row as plan micro_batches (k) micro-batches of one optimizer update, the recipes' steady state (the optimizer's
  memory-bound AdamW pass, by bandwidth an estimated ~20 % of a one-row 7B-width step, is paid once per k):
  MFU = k x FLOPs / median / peak. `remat_variants` (JAX, text rows): the one-micro-batch step under other remat
  policies, what the recipe's full recompute costs where memory allows. Profiles (jax.profiler,
  benchmarks/profile_trace.py): one traced step per JAX shape and one traced generate at the largest batch, device
  kernels summed by name and category (matmul, attention, copy, other).
  Decode: each repeat times generate(max_new_tokens=1) (prefill + first token) and generate(max_new_tokens=T);
  decode time = their difference, over T - 1 tokens. Bytes per decode step = sampler weights (decoder + LM
  head) + the whole static KV cache [layers, 2, batch, prompt + T, kv heads, head dim]; bound step = bytes /
  measured HBM bandwidth; fraction_of_bound = bound step / measured step (1 = at the bandwidth limit).
Importable without grain or ml-collections (the recipe is read once, by the parent process).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = "configs/ui_s1_7b.py"
# name and share (seconds of a 470 s budget; leftovers pass to later sections)
SECTIONS = (("card", 15), ("attention", 35), ("train_jax", 170), ("train_torch", 60), ("sampler_jax", 110),
            ("sampler_torch", 80))
RL_FIELDS = ("learning_rate", "warmup_steps", "weight_decay", "max_grad_norm", "kl_coef", "kl_kind", "clip_low",
             "clip_high", "dual_clip", "aggregation")
CUDNN_SKIP = "skipped: cudnn needs a GPU"
ATTENTION_TOLERANCE = 2e-2          # bf16 max |cudnn - xla|
BYTES_PER_PARAM = 24                # fp32 master 4 + Adam moments 8 + accumulated grads 4 + a micro-batch's grads
                                    # 4 + the bf16 copy 2 + its grads 2 (train/state.py Updater)
MEMORY_HEADROOM = 0.8               # of the device's memory for weights + optimizer; the rest: activations, XLA
SMOKE_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
JAX_MEMORY_FRACTION = "0.92"        # each JAX section owns the card (default 0.75 would leave 20 GB unused)


class InjectedFailure(RuntimeError):
  pass


class Fields(dict):
  """A dict read like a ConfigDict (rl_loss_fn reads cfg.kl_coef and cfg.get('dual_clip'))."""
  __getattr__ = dict.__getitem__


class Report(dict):
  """A section's results; `save()` hands them to `on_save` (which writes the JSON) after each piece."""

  def __init__(self, on_save=None):
    super().__init__()
    self.on_save = on_save

  def save(self) -> None:
    if self.on_save is not None:
      self.on_save(self)


def error_text(e: BaseException) -> str:
  return f"{type(e).__name__}: {e}"[:2000]


def is_oom(e: BaseException) -> bool:
  text = f"{type(e).__name__} {e}"
  return any(s in text for s in ("RESOURCE_EXHAUSTED", "out of memory", "Out of memory", "OutOfMemoryError"))


def write_json(path: str, obj) -> None:
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(obj, f, indent=1, default=str)
  os.replace(tmp, path)          # a reader (or a kill) never sees half a file


# ---------------------------------------------------------------------------------------------- recipe & plan
def load_recipe(spec: str = RECIPE) -> dict:
  """The settings of the 7B recipe this suite measures, as plain values (recorded in the JSON)."""
  from gui_jax.core.recipe_files import recipe_config
  c = recipe_config(os.path.join(ROOT, spec))
  m, mesh = c.model, c.mesh
  return {"spec": spec, "preset": m.preset, "remat_policy": m.remat_policy, "scan_layers": bool(m.scan_layers),
          "vision_per_row": bool(m.vision_per_row), "attention_impl": m.get("attention_impl") or "auto",
          "compute_dtype": mesh.compute_dtype, "param_dtype": mesh.param_dtype, "sampler_dtype": mesh.sampler_dtype,
          # '' = the compute dtype (train/config_blocks.py MODEL.kv_cache_dtype)
          "kv_cache_dtype": m.kv_cache_dtype or mesh.compute_dtype,
          "screen_px": list(c.data.resolution), "rl": {k: c.rl[k] for k in RL_FIELDS}}


def make_plan(smoke: bool, recipe: dict, repeats: int, warmup: int) -> dict:
  """Every shape the sections run. Models: a preset ('base') with text / vision overrides."""
  if smoke:
    tiny_vision = {"depth": 2, "fullatt_block_indexes": [1]}
    return {"repeats": repeats, "warmup": warmup, "copy_bytes": 16 << 20,
            "attention": {"batch": 1, "seq": 256, "heads": 4, "kv_heads": 2, "head_dim": 32, "segments": 3},
            "train": {"rows": 1, "seq": 64, "response": 8, "screen_px": [56, 112], "micro_batches": 2,
                      "shapes": ["1.5b_text", "7b_width_screenshot"], "models": {
                "1.5b": {"base": "tiny", "text": {"num_hidden_layers": 2}, "vision": tiny_vision},
                "7b_width": {"base": "tiny", "vision": tiny_vision, "fit_layers": True, "max_layers": 2,
                             "text": {"hidden_size": 192, "intermediate_size": 384, "num_attention_heads": 6}}}},
            "sampler": {"model": {"base": "tiny", "text": {"num_hidden_layers": 2}, "vision": tiny_vision},
                        "prompt": 16, "new_tokens": 16, "batches": [2]}}
  from benchmarks.model import CONFIGS
  q15 = CONFIGS["1b"]    # Qwen2.5-1.5B text shapes; its depth is 28 (CONFIGS cuts it to 24)
  text_15b = {"vocab_size": q15["vocab"], "hidden_size": q15["hidden"], "intermediate_size": q15["inter"],
              "num_hidden_layers": 28, "num_attention_heads": q15["heads"], "num_key_value_heads": q15["kv"]}
  return {"repeats": repeats, "warmup": warmup, "copy_bytes": 2 << 30,
          "attention": {"batch": 1, "seq": 8192, "heads": 28, "kv_heads": 4, "head_dim": 128, "segments": 3},
          "train": {"rows": 1, "seq": 4096, "response": 256, "screen_px": recipe["screen_px"], "micro_batches": 4,
                    "remat_variants": ["dots_with_no_batch_dims_saveable", "none"],
                    "models": {
              "1.5b": {"base": recipe["preset"], "text": text_15b, "tie": q15["tie"]},
              "7b_width": {"base": recipe["preset"], "fit_layers": True, "max_layers": 28}}},
          "sampler": {"model": {"base": recipe["preset"]}, "prompt": 512, "new_tokens": 32, "batches": [1, 16, 64]}}


TRAIN_SHAPES = ("1.5b_text", "7b_width_text", "7b_width_screenshot", "1.5b_screenshot")   # the run's order


def train_shapes(plan: dict) -> list[tuple[str, dict]]:
  """(name, {model, screenshot}) of each train shape the plan runs, in its order (smoke: two of the four)."""
  return [(n, {"model": n.rsplit("_", 1)[0], "screenshot": n.endswith("_screenshot")})
          for n in plan.get("shapes", TRAIN_SHAPES)]


def model_config(spec: dict, recipe: dict, *, layers: int | None = None, dtype: str | None = None,
                 param_dtype: str | None = None):
  """The Qwen25VLConfig of a plan model, with the recipe's runtime options (remat, scan, per-row images)."""
  from gui_jax.models.qwen2_5_vl.config import preset
  base = preset(spec["base"])
  text_kw = dict(spec.get("text", {}), **({"num_hidden_layers": layers} if layers else {}))
  text = dataclasses.replace(base.text, **text_kw)
  vis_kw = dict(spec.get("vision", {}), out_hidden_size=text.hidden_size)
  vis_kw["fullatt_block_indexes"] = tuple(vis_kw.get("fullatt_block_indexes", base.vision.fullatt_block_indexes))
  return base.replace(text=text, vision=dataclasses.replace(base.vision, **vis_kw),
                      tie_word_embeddings=spec.get("tie", base.tie_word_embeddings),
                      dtype=dtype or recipe["compute_dtype"], param_dtype=param_dtype or recipe["param_dtype"],
                      remat_policy=recipe["remat_policy"], scan_layers=recipe["scan_layers"],
                      vision_per_row=recipe["vision_per_row"], attention_impl=recipe["attention_impl"])


# ---------------------------------------------------------------------------------------------- counting
def param_counts(cfg) -> dict:
  """Parameters of the model, by part (the layer code in gui_jax/models/qwen2_5_vl: biases on q, k, v and
  in the vision tower, RMSNorm scales)."""
  t, v = cfg.text, cfg.vision
  h, hd, nh, kv = t.hidden_size, t.head_dim, t.num_attention_heads, t.num_key_value_heads
  layer = h * nh * hd + nh * hd + 2 * (h * kv * hd + kv * hd) + nh * hd * h + 3 * h * t.intermediate_size + 2 * h
  text_fixed = t.vocab_size * h * (1 if cfg.tie_word_embeddings else 2) + h
  vh, vi, d = v.hidden_size, v.intermediate_size, v.hidden_size * v.spatial_merge_size ** 2
  block = 2 * vh + 4 * vh * vh + 4 * vh + 3 * vh * vi + 2 * vi + vh
  vision = v.patch_dim * vh + v.depth * block + vh + d * d + d + d * v.out_hidden_size + v.out_hidden_size
  return {"text_layer": layer, "text_fixed": text_fixed, "vision": vision,
          "total": text_fixed + t.num_hidden_layers * layer + vision}


def screenshot_grid(width: int, height: int, vision) -> tuple[int, int, int]:
  """(t, h, w) patches of one screenshot (sides already multiples of patch x merge, as the recipe's are)."""
  unit = vision.patch_size * vision.spatial_merge_size
  if width % unit or height % unit:
    raise ValueError(f"screenshot {width}x{height} px: sides must be multiples of {unit}")
  return (1, height // vision.patch_size, width // vision.patch_size)


def window_patch_counts(grid, vision) -> list[int]:
  """Patches in each attention window of one frame (windows tile the merged grid; edge windows are partial)."""
  m = vision.spatial_merge_size
  side = vision.window_size // vision.patch_size // m                  # window side in merged units

  def cuts(n):
    return [side] * (n // side) + ([n % side] if n % side else [])
  return [a * b * m * m for a in cuts(grid[1] // m) for b in cuts(grid[2] // m)]


def vision_train_flops(vision, grid) -> float:
  """Forward + backward model FLOPs of the vision tower on one screenshot."""
  t, gh, gw = grid
  n, h, d = t * gh * gw, vision.hidden_size, vision.hidden_size * vision.spatial_merge_size ** 2
  per_patch = vision.patch_dim * h + vision.depth * (4 * h * h + 3 * h * vision.intermediate_size)
  merger = d * d + d * vision.out_hidden_size                         # runs on n / merge^2 merged tokens
  matmul = 6.0 * (per_patch * n + merger * n / vision.spatial_merge_size ** 2)
  n_full = len(vision.fullatt_block_indexes)
  windows = sum(c * c for c in window_patch_counts(grid, vision))
  attention = 12.0 * h * t * ((vision.depth - n_full) * windows + n_full * (gh * gw) ** 2)
  return matmul + attention


def step_flops(cfg, rows: int, seq: int, head_positions: int, grid=None) -> dict:
  """Model FLOPs of one train step: train_flops with the LM head on `head_positions` only, + the vision tower."""
  from benchmarks.model import train_flops
  t = cfg.text
  text = train_flops(cfg, rows, seq) - 6.0 * t.vocab_size * t.hidden_size * (rows * seq - head_positions)
  vision = rows * vision_train_flops(cfg.vision, grid) if grid else 0.0
  return {"text": text, "vision": vision, "total": text + vision, "head_positions": head_positions}


def layers_that_fit(cfg, memory_bytes: float | None, rows: int, seq: int, max_layers: int) -> tuple[int, dict]:
  """Decoder layers whose weights + optimizer state (BYTES_PER_PARAM each) fit in MEMORY_HEADROOM of the
  device beside the embeddings, LM head and vision tower; None memory (a CPU): max_layers."""
  p = param_counts(cfg)
  fixed = (p["text_fixed"] + p["vision"]) * BYTES_PER_PARAM
  per_layer = p["text_layer"] * BYTES_PER_PARAM + rows * seq * cfg.text.hidden_size * 2   # + its saved input
  fit = max_layers if memory_bytes is None else int((MEMORY_HEADROOM * memory_bytes - fixed) // per_layer)
  layers = max(1, min(max_layers, fit))
  return layers, {"memory_bytes": memory_bytes, "headroom": MEMORY_HEADROOM, "bytes_per_param": BYTES_PER_PARAM,
                  "fixed_bytes": fixed, "per_layer_bytes": per_layer, "max_layers": max_layers, "layers": layers}


def token_rows(cfg, rows: int, seq: int, response: int, grid=None, seed: int = 0) -> dict:
  """Random rows of exactly `seq` tokens (prompt, then `response`), with one screenshot in the middle of the
  prompt when `grid` is given; the same arrays feed both frameworks."""
  rng = np.random.default_rng(seed)
  high = cfg.vision_start_token_id - 16                              # ordinary tokens only
  n_patch = int(np.prod(grid)) if grid else 0
  n_image = n_patch // cfg.vision.spatial_merge_size ** 2
  text = seq - response - (n_image + 2 if grid else 0)
  if text < 2:
    raise ValueError(f"a {seq}-token row cannot hold {n_image} image tokens and a {response}-token response")
  prompts, pixels = [], []
  for _ in range(rows):
    ids = rng.integers(1, high, text)
    if grid:
      image = [cfg.vision_start_token_id] + [cfg.image_token_id] * n_image + [cfg.vision_end_token_id]
      ids = np.concatenate([ids[:text // 2], image, ids[text // 2:]])
      pixels.append(rng.standard_normal((n_patch, cfg.vision.patch_dim)).astype(np.float32))
    prompts.append(ids.astype(np.int32))
  return {"prompts": prompts, "responses": [rng.integers(1, high, response).astype(np.int32) for _ in range(rows)],
          "pixels": pixels or None, "grid": list(grid) if grid else None}


def prompt_ids(cfg, batch: int, length: int, seed: int = 0) -> np.ndarray:
  return np.random.default_rng(seed).integers(1, cfg.vision_start_token_id - 16, (batch, length)).astype(np.int32)


# ---------------------------------------------------------------------------------------------- figures
def peak_info(device_kind: str, backend: str) -> dict:
  """Published peak bf16 FLOP/s and HBM bandwidth of the card (a CPU: its float32 FMA peak, no bandwidth)."""
  from benchmarks import roofline
  if backend == "cpu":
    from benchmarks.pretrain import cpu_fma_peak
    cpu = cpu_fma_peak()
    return {"card": "cpu", "peak_flops": cpu["fma_peak_flops"] or None, "hbm_bytes_per_s": None, **cpu,
            "source": "benchmarks.pretrain.cpu_fma_peak: cores x clock x float32 FMA FLOPs per cycle "
                      "(a CPU has no bf16 datasheet peak)"}
  spec = roofline.gpu_spec(device_kind)
  if spec is None:
    return {"card": None, "peak_flops": None, "hbm_bytes_per_s": None,
            "source": f"device kind {device_kind!r} not in benchmarks.roofline.GPUS: no MFU"}
  return {"card": spec.name, "peak_flops": spec.peak_flops, "hbm_bytes_per_s": spec.hbm_bw,
          "source": "benchmarks.roofline.GPUS (NVIDIA datasheet, dense bf16)"}


def step_figures(flops: dict, timing, peak: dict, tokens: int) -> dict:
  median = timing.median_s
  return {"flops": flops, "timing": timing.as_dict(), "peak_flops": peak["peak_flops"],
          "achieved_flops_per_s": flops["total"] / median, "tokens_per_s": tokens / median,
          "mfu": flops["total"] / median / peak["peak_flops"] if peak["peak_flops"] else None}


def decode_figures(cfg, batch: int, prompt: int, new_tokens: int, prefill, generate, bandwidth: float,
                   weight_itemsize: int, kv_itemsize: int) -> dict:
  """Prefill and decode tokens/s from paired timings, and decode against the HBM bandwidth bound."""
  from benchmarks.model import matmul_params
  t = cfg.text
  decode_times = [g - p for g, p in zip(generate.times_s, prefill.times_s)]
  decode_s, steps = statistics.median(decode_times), new_tokens - 1
  weights = matmul_params(cfg) * weight_itemsize
  kv = 2 * t.num_hidden_layers * batch * (prompt + new_tokens) * t.num_key_value_heads * t.head_dim * kv_itemsize
  bound_step_s = (weights + kv) / bandwidth if bandwidth else None
  step_s = decode_s / steps if decode_s > 0 else None                  # None: decode not above timing noise
  return {"batch": batch, "prompt_tokens": prompt, "new_tokens": new_tokens, "prefill": prefill.as_dict(),
          "generate": generate.as_dict(), "decode_times_s": decode_times, "decode_median_s": decode_s,
          "decode_steps": steps, "prefill_tokens_per_s": batch * prompt / prefill.median_s,
          "decode_tokens_per_s": batch * steps / decode_s if step_s else None,
          "bytes_per_decode_step": {"weights": weights, "kv_cache": kv, "total": weights + kv},
          "hbm_bytes_per_s": bandwidth, "measured_step_s": step_s, "bound_step_s": bound_step_s,
          "fraction_of_bound": bound_step_s / step_s if bound_step_s and step_s else None}


def card_bandwidth(ctx: dict) -> tuple[float | None, str]:
  """The card section's measured HBM bandwidth, if it ran."""
  bw = ((ctx["results"].get("card") or {}).get("hbm_copy") or {}).get("measured_bytes_per_s")
  return bw, "card.hbm_copy.measured_bytes_per_s"


# ---------------------------------------------------------------------------------------------- shared by sections
def run_train_shapes(ctx: dict, report: Report, step_fn, memory_bytes: float | None, reuse_layers: dict) -> None:
  """Each train shape: its config (the 7B width cut to the layers that fit, or to `reuse_layers[name]`), FLOPs,
  `step_fn(cfg, inputs) -> (Timing, extras)`, MFU; errors per shape, one retry with fewer layers after an OOM."""
  plan, recipe, peak = ctx["plan"]["train"], ctx["recipe"], report["peak"]
  rows, seq, response = plan["rows"], plan["seq"], plan["response"]
  shapes = report.setdefault("shapes", {})
  for name, shape in train_shapes(plan):
    spec = plan["models"][shape["model"]]
    entry = shapes[name] = {"status": "running"}
    report.save()
    layers = reuse_layers.get(name)
    if layers is not None:
      entry["layers_source"] = "train_jax (same shapes in both frameworks)"
    elif spec.get("fit_layers"):
      layers, entry["layers_fit"] = layers_that_fit(model_config(spec, recipe, layers=1), memory_bytes, rows, seq,
                                                    spec["max_layers"])
    for attempt in range(2):
      cfg = model_config(spec, recipe, layers=layers)
      grid = screenshot_grid(*plan["screen_px"], cfg.vision) if shape["screenshot"] else None
      inputs = dict(token_rows(cfg, rows, seq, response, grid), micro_batches=plan.get("micro_batches", 1))
      flops = step_flops(cfg, rows, seq, rows * response, grid)
      entry.update(layers=cfg.text.num_hidden_layers, hidden=cfg.text.hidden_size, rows=rows, seq=seq,
                   response=response, screenshot_grid=inputs["grid"], params=param_counts(cfg))
      try:
        timing, extras = step_fn(cfg, inputs)
        k, acc_timing = extras.pop("accumulating", (1, None))
        variants = {policy: t if isinstance(t, dict) else step_figures(flops, t, peak, rows * seq)
                    for policy, t in extras.pop("remat_variants", {}).items()}
        entry.update(step_figures(flops, timing, peak, rows * seq), **extras, status="ok")
        if variants:
          entry["remat_variants"] = variants
        if acc_timing is not None:                                   # k micro-batches, one optimizer update
          entry["accumulating"] = dict(step_figures({"total": k * flops["total"]}, acc_timing, peak,
                                                    k * rows * seq), micro_batches=k)
        entry.pop("error", None)                                     # an OOM retry's first error: in oom_retry
        break
      except Exception as e:                                         # noqa: BLE001 (recorded, the rest run)
        entry.update(status="error", error=error_text(e))
        if not (attempt == 0 and is_oom(e) and spec.get("fit_layers") and cfg.text.num_hidden_layers > 1):
          break
        layers = cfg.text.num_hidden_layers - max(1, cfg.text.num_hidden_layers // 3)
        entry["oom_retry"] = {"from_layers": cfg.text.num_hidden_layers, "error": entry["error"]}
      finally:
        gc.collect()
    report.save()


def sampler_model_config(ctx: dict):
  r = ctx["recipe"]
  return model_config(ctx["plan"]["sampler"]["model"], r, dtype=r["compute_dtype"], param_dtype=r["sampler_dtype"])


def section_fn(name: str):
  """run_<name> of the framework's module (imported only when its section runs)."""
  if name.endswith("_torch"):
    from benchmarks import gpu_suite_torch as module
  else:
    from benchmarks import gpu_suite_jax as module
  return getattr(module, f"run_{name}")


# ---------------------------------------------------------------------------------------------- runner
def run_section(name: str, ctx: dict, fail: set[str], on_save=None) -> dict:
  """Runs one section here; its exception becomes the section's error."""
  report, t0 = Report(on_save), time.perf_counter()
  try:
    if name in fail:
      raise InjectedFailure(f"injected failure (--fail {name})")
    section_fn(name)(ctx, report)
    report["status"] = "ok"
  except Exception as e:                                             # noqa: BLE001 (recorded, the rest run)
    report.update(status="error", error=error_text(e), traceback=traceback.format_exc(limit=6)[-3000:])
  report["wall_s"] = time.perf_counter() - t0
  report.save()
  return dict(report)


def run_child(name: str, ctx: dict, fail: set[str], workdir: str, cap_s: float) -> dict:
  """Runs one section in a fresh Python process, killed after `cap_s`; returns what it reported."""
  ctx_path, out = os.path.join(workdir, "context.json"), os.path.join(workdir, f"{name}.json")
  write_json(ctx_path, ctx)
  env = dict(os.environ, PYTHONUNBUFFERED="1")
  if name.endswith("_torch"):
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")         # JAX must not take the card from torch
  else:
    env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", JAX_MEMORY_FRACTION)
  cmd = [sys.executable, "-m", "benchmarks.gpu_suite", "--child", name, "--context", ctx_path, "--child-out", out]
  cmd += [a for f in sorted(fail) for a in ("--fail", f)]
  t0 = time.perf_counter()
  with open(out + ".log", "w") as log:
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
      rc = proc.wait(timeout=cap_s)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()
      rc = None
  try:
    with open(out) as f:
      result = json.load(f)
  except (OSError, ValueError):
    result = {}
  with open(out + ".log") as f:
    tail = f.read()[-1500:]
  if rc is None:
    result.update(status="timeout", error=f"killed after {cap_s:.0f} s (its share of --budget-s)")
  elif rc != 0 or "status" not in result:
    result.update(status="error", error=f"process exit code {rc}: {tail[-600:]}")
  result.update(wall_s=time.perf_counter() - t0, process_cap_s=cap_s, log_tail=tail)
  return result


def detect_backend() -> str:
  """JAX's backend, probed in a child process so this one never holds the card."""
  if {p.strip() for p in os.environ.get("JAX_PLATFORMS", "").split(",") if p.strip()} == {"cpu"}:
    return "cpu"
  env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
  out = subprocess.run([sys.executable, "-c", "import jax; print(jax.default_backend())"], env=env,
                       capture_output=True, text=True, timeout=120)
  lines = out.stdout.strip().splitlines()
  return lines[-1] if out.returncode == 0 and lines else "unknown"   # unknown: full shapes; sections say why


def summary_lines(results: dict) -> list[str]:
  lines = []
  for name, _ in SECTIONS:
    r = results.get(name)
    if r is None:
      continue
    line = f"{name:<14}{r.get('status', '?'):<8}{r.get('wall_s', 0):7.1f} s"
    if r.get("error"):
      line += "  " + r["error"].splitlines()[0][:100]
    if name == "card" and "hbm_copy" in r:
      line += f"  {r.get('device_kind')}  copy {r['hbm_copy']['measured_bytes_per_s'] / 1e9:.0f} GB/s"
    for sub in ("shapes", "batches"):
      for key, e in (r.get(sub) or {}).items():
        figure = e.get("mfu") if sub == "shapes" else e.get("decode_tokens_per_s")
        label = "MFU" if sub == "shapes" else "decode tok/s"
        line += f"\n    {key:<22}{e.get('status', '?'):<8}" + (
            f"{label} {figure:.3g}" if isinstance(figure, float) else e.get("error", "")[:90])
        acc = e.get("accumulating") or {}
        if isinstance(acc.get("mfu"), float):
          line += f" (x{acc['micro_batches']} micro-batches: {acc['mfu']:.3g})"
        prof = e.get("profile") or {}
        if prof.get("busy_fraction_of_wall") is not None:
          line += f"  busy {prof['busy_fraction_of_wall']:.2f} " + json.dumps(
              {k: round(v, 4) for k, v in prof["category_s"].items()})
    for case, e in (r.get("cases") or {}).items():
      line += f"\n    {case:<22}" + json.dumps(e.get("cudnn_vs_xla", e.get("cudnn")))[:100]
    lines.append(line)
  return lines


def main(argv=None) -> dict:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--json", help="write the results here (rewritten after every section)")
  ap.add_argument("--smoke", action="store_true", help="tiny shapes (automatic on a CPU backend)")
  ap.add_argument("--sections", default=",".join(n for n, _ in SECTIONS), help="comma-separated subset")
  ap.add_argument("--fail", action="append", default=[], help="make this section raise (tests)")
  ap.add_argument("--repeats", type=int, default=5, help="timed calls per figure (>= 5; the median is reported)")
  ap.add_argument("--warmup", type=int, default=0, help="untimed calls after the first (compiling) one")
  ap.add_argument("--train-shapes", help=f"comma-separated train shapes, run in this order (of {TRAIN_SHAPES})")
  ap.add_argument("--no-profile", action="store_true",
                  help="skip tracing one train step per shape and the largest batch's generate (jax.profiler)")
  ap.add_argument("--budget-s", type=float, default=470.0, help="the whole suite's time (GPU: sections are killed)")
  ap.add_argument("--isolate", choices=("auto", "process", "none"), default="auto",
                  help="a process per section (auto: on an accelerator)")
  ap.add_argument("--child", help=argparse.SUPPRESS)
  ap.add_argument("--context", help=argparse.SUPPRESS)
  ap.add_argument("--child-out", help=argparse.SUPPRESS)
  args = ap.parse_args(argv)
  fail = set(args.fail)
  if args.child:                                                     # one section, in its own process
    with open(args.context) as f:
      ctx = json.load(f)
    return run_section(args.child, ctx, fail, on_save=lambda r: write_json(args.child_out, r))
  if args.repeats < 5:
    ap.error("--repeats must be >= 5")
  names = [n.strip() for n in args.sections.split(",") if n.strip()]
  unknown = sorted(set(names) - {n for n, _ in SECTIONS})
  if unknown:
    ap.error(f"unknown sections {unknown}")
  picked = [n.strip() for n in (args.train_shapes or "").split(",") if n.strip()]
  if set(picked) - set(TRAIN_SHAPES):
    ap.error(f"unknown train shapes {sorted(set(picked) - set(TRAIN_SHAPES))}; known: {', '.join(TRAIN_SHAPES)}")
  t_start = time.perf_counter()
  backend = detect_backend()
  smoke = args.smoke or backend == "cpu"
  if backend == "cpu":   # smoke shapes compile far longer than they run: spare XLA's costly CPU passes
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SMOKE_XLA_FLAGS).strip()
  isolate = args.isolate if args.isolate != "auto" else ("none" if backend == "cpu" else "process")
  try:
    recipe = load_recipe()
  except Exception as e:                                             # noqa: BLE001 (sections needing it fail)
    recipe = {"spec": RECIPE, "error": error_text(e), "screen_px": [56, 112], "preset": "7b"}
  results = {"meta": {"suite": "benchmarks.gpu_suite", "argv": sys.argv[1:] if argv is None else list(argv),
                      "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      "backend": backend, "mode": "smoke" if smoke else "full", "isolate": isolate,
                      "budget_s": args.budget_s, "recipe": recipe,
                      "load_average_before": [round(x, 2) for x in os.getloadavg()],
                      "plan": make_plan(smoke, recipe, args.repeats, args.warmup)}}
  if picked:
    results["meta"]["plan"]["train"]["shapes"] = picked
  workdir = os.path.join("/tmp", f"gpu_suite_{os.getpid()}")
  os.makedirs(workdir, exist_ok=True)
  ctx = {"plan": results["meta"]["plan"], "recipe": recipe, "results": results, "smoke": smoke,
         "profile_dir": None if args.no_profile else os.path.join(workdir, "profiles")}

  def save(partial=None, name=None):
    if partial is not None:
      results[name] = dict(partial)
    if args.json:
      write_json(args.json, results)
  save()
  shares = {n: s for n, s in SECTIONS if n in names}
  scale = args.budget_s / sum(shares.values())
  for i, name in enumerate(names):
    remaining = args.budget_s - (time.perf_counter() - t_start)
    later = scale * sum(shares[n] for n in names[i + 1:])
    cap = min(remaining, max(scale * shares[name], remaining - later))
    if "error" in recipe and name not in ("card", "attention"):
      results[name] = {"status": "error", "error": f"recipe {RECIPE} not loaded: {recipe['error']}"}
    elif cap < 5:
      results[name] = {"status": "not run", "error": "the suite's --budget-s was spent"}
    elif isolate == "process":
      results[name] = run_child(name, ctx, fail, workdir, cap)
    else:
      results[name] = run_section(name, ctx, fail, on_save=lambda r, n=name: save(r, n))
    print(f"[gpu_suite] {summary_lines({name: results[name]})[0]}", flush=True)
    save()
  results["meta"].update(wall_s=time.perf_counter() - t_start,
                         load_average_after=[round(x, 2) for x in os.getloadavg()],
                         card=(results.get("card") or {}).get("peak", {}).get("card"))
  save()
  print("\n".join(["[gpu_suite] summary"] + summary_lines(results)), flush=True)
  return results


if __name__ == "__main__":
  main()
