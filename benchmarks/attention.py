"""Attention kernels on this machine's accelerator: accuracy against the XLA reference and speed ratios.

    python -m benchmarks.attention --json out.json [--seq 8192 --heads 28 --kv-heads 4 --head-dim 128]

    python -m benchmarks.attention --json out.json --batch 4 --seq 1024 --heads 4 --kv-heads 2 --head-dim 32 \
        --dtype float32                 # the tiny recipes' pretraining rows on a CPU

For each kernel path runnable here ('xla' always, and 'xla_whole': the same without causal query blocks; 'cudnn'
on GPU; 'splash' on TPU), with packed rows (3 segments per row + padding), causal, bf16 (or --dtype) inputs:
max |out - reference| (reference = 'xla' on float32 inputs), max |grad - reference grad| (relative), and the
median time of forward and forward+backward over `--iters` runs,
as ratios against 'xla' measured in the same run. Also runs the tiny model with each kernel (bf16) and reports
the max logit difference against 'xla'. The JSON records the device, the load average and the shapes.
"""
from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import time_calls
from gui_jax.models import attention as attn


def _time(fn, *args, iters: int) -> float:
  """Median of `iters` calls after a first (compiling) one."""
  return time_calls(lambda: fn(*args), iters, sync=jax.block_until_ready).median_s


def _inputs(batch, seq, heads, kv_heads, head_dim, seed=0):
  r = np.random.default_rng(seed)
  q, k, v = (r.standard_normal((batch, seq, n, head_dim)).astype(np.float32) for n in (heads, kv_heads, kv_heads))
  seg = np.zeros((batch, seq), np.int32)
  cuts = [0, seq // 3, seq // 2, seq - seq // 8]  # 3 packed segments, then padding
  for i in range(3):
    seg[:, cuts[i]:cuts[i + 1]] = i + 1
  return [jnp.asarray(x) for x in (q, k, v, seg)]


def _model_check(impls) -> dict:
  from flax import nnx

  from gui_jax.models.qwen2_5_vl import Qwen25VLForConditionalGeneration, get_rope_index, preset, vision_layout
  out = {}
  grid = np.array([[1, 8, 8], [1, 4, 8]])
  logits = {}
  for impl in impls:
    cfg = preset("tiny", dtype="bfloat16", attention_impl=impl, scan_layers=True)
    model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
    ids = np.array([[5, cfg.vision_start_token_id] + [cfg.image_token_id] * 16 + [cfg.vision_end_token_id, 7,
                     cfg.vision_start_token_id] + [cfg.image_token_id] * 8 + [cfg.vision_end_token_id] + [9] * 6])
    pixels = np.random.default_rng(0).standard_normal((96, cfg.vision.patch_dim)).astype(np.float32)
    pos, _ = get_rope_index(ids, grid, None, cfg)
    fwd = nnx.jit(lambda m, i, p, lay, pos: m(i, pixel_values=p, vision_layout=lay, position_ids=pos).logits)
    logits[impl] = np.asarray(fwd(model, ids, pixels, vision_layout(grid, cfg.vision), pos), np.float32)
  for impl in impls:
    out[impl] = float(np.abs(logits[impl] - logits["xla"]).max())
  out["max_abs_logit"] = float(np.abs(logits["xla"]).max())
  return out


def main(argv=None):
  ap = argparse.ArgumentParser()
  ap.add_argument("--json", default=None)
  ap.add_argument("--batch", type=int, default=1)
  ap.add_argument("--seq", type=int, default=8192)
  ap.add_argument("--heads", type=int, default=28)
  ap.add_argument("--kv-heads", type=int, default=4)
  ap.add_argument("--head-dim", type=int, default=128)
  ap.add_argument("--iters", type=int, default=10)
  ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"),
                  help="inputs of the timed kernels (float32: what the CPU recipes train in)")
  args = ap.parse_args(argv)
  platform = jax.default_backend()
  # xla_whole: the XLA path with the whole [T, S] score matrix (causal_block=0), against the query blocks 'xla' uses
  impls = ["xla", "xla_whole"] + {"gpu": ["cudnn"], "tpu": ["splash"]}.get(platform, [])
  q, k, v, seg = _inputs(args.batch, args.seq, args.heads, args.kv_heads, args.head_dim)
  scale = args.head_dim ** -0.5
  bf = [x.astype(args.dtype) for x in (q, k, v)]

  def call(impl, q, k, v, s):
    if impl == "xla_whole":
      return attn.attention(q, k, v, s, causal=True, scale=scale, impl="xla", causal_block=0)
    return attn.attention(q, k, v, s, causal=True, scale=scale, impl=impl)

  def fwd(impl):
    return jax.jit(lambda q, k, v, s: call(impl, q, k, v, s))

  def fwd_bwd(impl):
    def loss(q, k, v, s):
      return jnp.sum(call(impl, q, k, v, s).astype(jnp.float32) ** 2)
    return jax.jit(jax.grad(loss, argnums=(0, 1, 2)))

  ref = np.asarray(fwd("xla")(q, k, v, seg))
  ref_g = [np.asarray(g) for g in fwd_bwd("xla")(q, k, v, seg)]
  result = {"device": str(jax.devices()[0].device_kind), "platform": platform, "loadavg": os.getloadavg(),
            "shape": dict(batch=args.batch, seq=args.seq, heads=args.heads, kv_heads=args.kv_heads,
                          head_dim=args.head_dim, segments=3, causal=True, dtype=args.dtype),
            "kernels": {}}
  for impl in impls:
    out = np.asarray(fwd(impl)(*bf, seg), np.float32)
    grads = fwd_bwd(impl)(*bf, seg)
    rel_g = max(float(np.abs(np.asarray(g, np.float32) - r).max() / np.abs(r).max()) for g, r in zip(grads, ref_g))
    result["kernels"][impl] = {
        "max_abs_err_vs_f32_reference": float(np.abs(out - ref).max()),
        "max_rel_grad_err_vs_f32_reference": rel_g,
        "fwd_s": _time(fwd(impl), *bf, seg, iters=args.iters),
        "fwd_bwd_s": _time(fwd_bwd(impl), *bf, seg, iters=args.iters)}
  base = result["kernels"]["xla"]
  for r in result["kernels"].values():
    r["fwd_speedup_vs_xla"] = base["fwd_s"] / r["fwd_s"]
    r["fwd_bwd_speedup_vs_xla"] = base["fwd_bwd_s"] / r["fwd_bwd_s"]
  result["tiny_model_bf16_max_logit_diff_vs_xla"] = _model_check([i for i in impls if i != "xla_whole"])
  print(json.dumps(result, indent=2))
  if args.json:
    with open(args.json, "w") as f:
      json.dump(result, f, indent=2)


if __name__ == "__main__":
  main()
