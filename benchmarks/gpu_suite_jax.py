"""The JAX sections of benchmarks/gpu_suite.py (its docstring says what is measured and how): the card and its
measured HBM bandwidth, cuDNN attention against XLA, the jobs' train step, and gui_jax's Sampler."""
from __future__ import annotations

import platform
import time

import numpy as np

from benchmarks.gpu_suite import (ATTENTION_TOLERANCE, CUDNN_SKIP, Fields, Report, card_bandwidth, decode_figures,
                                  error_text, peak_info, prompt_ids, run_train_shapes, sampler_model_config)
from benchmarks.profile_trace import profile_call
from benchmarks.timing import time_calls


def measure_copy_bandwidth(nbytes: int, repeats: int, warmup: int) -> dict:
  """HBM bandwidth from a jitted device-to-device copy: bytes read + written / median time."""
  import jax
  import jax.numpy as jnp
  x = jnp.arange(nbytes // 4, dtype=jnp.float32)                  # not zeros: data a copy cannot skip
  copy = jax.jit(jnp.copy)
  t = time_calls(lambda: copy(x), repeats, sync=jax.block_until_ready, warmup=warmup)
  moved = 2 * x.nbytes
  return {"array_bytes": x.nbytes, "bytes_moved_per_call": moved, "timing": t.as_dict(),
          "measured_bytes_per_s": moved / t.median_s}


def jax_platform(report: Report) -> dict:
  import jax
  import jaxlib
  kind = jax.devices()[0].device_kind
  report.update(backend=jax.default_backend(), device_kind=kind, jax_version=jax.__version__,
                jaxlib_version=jaxlib.__version__, peak=peak_info(kind, jax.default_backend()))
  return report["peak"]


def run_card(ctx: dict, report: Report) -> None:
  import jax
  jax_platform(report)
  dev = jax.devices()[0]
  report.update(device_count=jax.device_count(), python=platform.python_version(),
                memory_bytes_limit=(dev.memory_stats() or {}).get("bytes_limit"))
  report.save()
  plan = ctx["plan"]
  copy = measure_copy_bandwidth(plan["copy_bytes"], plan["repeats"], plan["warmup"])
  published = report["peak"]["hbm_bytes_per_s"]
  copy["published_bytes_per_s"] = published
  copy["fraction_of_published"] = copy["measured_bytes_per_s"] / published if published else None
  report["hbm_copy"] = copy


def attention_case(mask, impls: list[str], f32: list, plan: dict) -> dict:
  """One attention case: each implementation's fwd and fwd+bwd timings; cudnn against xla (bf16 inputs)."""
  import jax
  import jax.numpy as jnp

  def attend(impl, q, k, v, m):
    return jax.nn.dot_product_attention(q, k, v, mask=m, is_causal=True, implementation=impl)
  bf = [x.astype(jnp.bfloat16) for x in f32] + [mask]                # the mask is an argument, not a constant
  out, grads, entry = {}, {}, {}
  for impl in impls:
    fwd = jax.jit(lambda q, k, v, m, impl=impl: attend(impl, q, k, v, m))
    bwd = jax.jit(jax.grad(lambda q, k, v, m, impl=impl: jnp.sum(attend(impl, q, k, v, m).astype(jnp.float32) ** 2),
                           argnums=(0, 1, 2)))
    entry[impl] = {name: time_calls(lambda f=f: f(*bf), plan["repeats"], sync=jax.block_until_ready,
                                    warmup=plan["warmup"]).as_dict() for name, f in (("fwd", fwd), ("fwd_bwd", bwd))}
    out[impl] = np.asarray(fwd(*bf), np.float32)
    grads[impl] = [np.asarray(g, np.float32) for g in bwd(*bf)]
  ref = np.asarray(jax.jit(lambda q, k, v, m: attend("xla", q, k, v, m))(*f32, mask))   # float32 inputs
  entry["xla_bf16_vs_f32_max_abs_diff"] = float(np.abs(out["xla"] - ref).max())
  if "cudnn" not in impls:
    return dict(entry, cudnn=CUDNN_SKIP)
  diff = float(np.abs(out["cudnn"] - out["xla"]).max())
  entry["cudnn_vs_xla"] = {
      "max_abs_diff": diff, "within_tolerance": diff <= ATTENTION_TOLERANCE,
      "grad_max_rel_diff": max(float(np.abs(c - x).max() / np.abs(x).max()) for c, x in zip(grads["cudnn"],
                                                                                           grads["xla"])),
      "fwd_speedup": entry["xla"]["fwd"]["median_s"] / entry["cudnn"]["fwd"]["median_s"],
      "fwd_bwd_speedup": entry["xla"]["fwd_bwd"]["median_s"] / entry["cudnn"]["fwd_bwd"]["median_s"]}
  return entry


def run_attention(ctx: dict, report: Report) -> None:
  import jax

  from benchmarks.attention import _inputs
  jax_platform(report)
  p = ctx["plan"]["attention"]
  q, k, v, seg = _inputs(p["batch"], p["seq"], p["heads"], p["kv_heads"], p["head_dim"])   # 3 segments + padding
  packed = (seg[:, :, None] == seg[:, None, :])[:, None]             # [B, 1, T, S]: a segment sees its own keys
  impls = ["xla", "cudnn"] if jax.default_backend() == "gpu" else ["xla"]
  report.update(shape=dict(p, causal=True, dtype="bfloat16"), tolerance=ATTENTION_TOLERANCE,
                cudnn="checked" if "cudnn" in impls else CUDNN_SKIP, cases={})
  for case, mask in (("causal", None), ("packed_causal", packed)):
    try:
      report["cases"][case] = dict(attention_case(mask, impls, [q, k, v], ctx["plan"]), status="ok")
    except Exception as e:                                           # noqa: BLE001 (recorded, the rest run)
      report["cases"][case] = {"status": "error", "error": error_text(e)}
    report.save()


def random_model(cfg):
  """Qwen2.5-VL for `cfg` with random weights drawn on the device by one jitted init (the eager path draws each
  weight on the host: 45 s for the 1.5B shape and 82 s for 12 layers of the 7B width on the H200's host)."""
  import jax
  from flax import nnx

  from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration

  def make():
    return Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  graphdef, _ = nnx.split(nnx.eval_shape(make))
  t0 = time.perf_counter()
  state = jax.block_until_ready(jax.jit(lambda: nnx.split(make())[1])())
  print(f"[gpu_suite] {cfg.text.num_hidden_layers}x{cfg.text.hidden_size}: model built in "
        f"{time.perf_counter() - t0:.1f} s", flush=True)        # the child's log says where a section's time went
  return nnx.merge(graphdef, state)


def jax_train_step(recipe: dict, repeats: int, warmup: int, profile_dir: str | None = None):
  """step_fn for run_train_shapes: the jobs' Updater.step on one micro-batch of the RL loss (one more step traced
  into `profile_dir/<layers>x<hidden>_<text|screenshot>` when given)."""
  def step_fn(cfg, inputs):
    import jax

    from gui_jax.rl.batch import TrainSample, make_micro_batches
    from gui_jax.train.rl_common import rl_loss_fn
    from gui_jax.train.state import Updater, init_train_state, make_optimizer, split_model
    rl = Fields(recipe["rl"])
    graphdef, params, rest = split_model(random_model(cfg))
    updater = Updater(rl_loss_fn(graphdef, rest, rl), make_optimizer(
        rl.learning_rate, warmup_steps=rl.warmup_steps, weight_decay=rl.weight_decay,
        max_grad_norm=rl.max_grad_norm), compute_dtype=recipe["compute_dtype"])
    grid = inputs["grid"]
    samples = [TrainSample(p, r, pixel_values=None if grid is None else inputs["pixels"][i],
                           image_grid_thw=None if grid is None else np.asarray([grid]))
               for i, (p, r) in enumerate(zip(inputs["prompts"], inputs["responses"]))]
    (batch,) = make_micro_batches(samples, cfg, pad_id=0, micro_batch_size=len(samples))
    batch = jax.device_put(batch)
    state = {"s": init_train_state(params, updater.optimizer, 0)}
    del params

    def step():
      state["s"], state["metrics"] = updater.step(state["s"], [batch])   # returns after its one host sync
    timing = time_calls(step, repeats, warmup=warmup)
    extras = {"loss": state["metrics"]["loss"], "batch_shape": list(batch["input_ids"].shape),
              "padded_pixel_shape": None if grid is None else list(batch["pixel_values"].shape)}
    k = inputs["micro_batches"]
    if k > 1:                          # the recipe's steady state: k micro-batches share one optimizer update

      def accumulating_step():
        state["s"], state["metrics"] = updater.step(state["s"], [batch] * k)
      extras["accumulating"] = (k, time_calls(accumulating_step, repeats, warmup=warmup))
    if profile_dir and inputs.get("profile", True):
      shot = "text" if grid is None else "screenshot"
      where = f"{profile_dir}/{cfg.text.num_hidden_layers}x{cfg.text.hidden_size}_{shot}"
      extras["profile"] = traced(step, where, timing.median_s)
    return timing, extras
  return step_fn


def traced(fn, workdir: str, reference_s: float) -> dict:
  """profile_call's summary, or its error: a failed trace must not cost the figure it describes."""
  try:
    return profile_call(fn, workdir, reference_s)
  except Exception as e:                                             # noqa: BLE001 (recorded)
    return {"status": "error", "error": error_text(e)}


def with_remat_variants(step_fn, policies):
  """step_fn that also times each text row's one-micro-batch step under the other remat `policies` (the
  recipe's choice is a memory trade: what the recompute costs on this card), recorded as extras."""
  def fn(cfg, inputs):
    timing, extras = step_fn(cfg, inputs)
    if inputs["grid"] is None:
      for policy in (p for p in policies if p != cfg.remat_policy):
        try:
          extras.setdefault("remat_variants", {})[policy] = step_fn(
              cfg.replace(remat_policy=policy), dict(inputs, micro_batches=1, profile=False))[0]
        except Exception as e:                                       # noqa: BLE001 (recorded, the rest run)
          extras.setdefault("remat_variants", {})[policy] = {"status": "error", "error": error_text(e)}
    return timing, extras
  return fn


def run_train_jax(ctx: dict, report: Report) -> None:
  import jax
  jax_platform(report)
  report["recipe"] = ctx["recipe"]["spec"]
  memory = (jax.devices()[0].memory_stats() or {}).get("bytes_limit")
  step_fn = jax_train_step(ctx["recipe"], ctx["plan"]["repeats"], ctx["plan"]["warmup"], ctx.get("profile_dir"))
  run_train_shapes(ctx, report, with_remat_variants(step_fn, ctx["plan"]["train"].get("remat_variants", [])),
                   memory, reuse_layers={})


def run_sampler_jax(ctx: dict, report: Report) -> None:
  import jax.numpy as jnp

  from gui_jax.models.sampler import Sampler
  jax_platform(report)
  plan, p = ctx["plan"], ctx["plan"]["sampler"]
  cfg = sampler_model_config(ctx)
  bandwidth, source = card_bandwidth(ctx)
  if bandwidth is None:
    bandwidth, source = measure_copy_bandwidth(plan["copy_bytes"], plan["repeats"], plan["warmup"])[
        "measured_bytes_per_s"], "measured in this section (card did not run)"
  kv_dtype = ctx["recipe"]["kv_cache_dtype"]
  report.update(layers=cfg.text.num_hidden_layers, hidden=cfg.text.hidden_size, weights_dtype=cfg.param_dtype,
                kv_cache_dtype=kv_dtype, hbm_bandwidth_source=source, batches={})
  model = random_model(cfg)
  for b in p["batches"]:
    try:
      s = Sampler(model, eos_ids=[-1], pad_id=0, prompt_buckets=(p["prompt"],), new_token_buckets=(p["new_tokens"],),
                  batch_buckets=(b,), cache_dtype=kv_dtype)
      prompts = prompt_ids(cfg, b, p["prompt"])

      def gen(n):
        return s.generate(prompts, max_new_tokens=n)                 # host arrays back: synchronised
      prefill = time_calls(lambda: gen(1), plan["repeats"], warmup=plan["warmup"])
      generate = time_calls(lambda: gen(p["new_tokens"]), plan["repeats"], warmup=plan["warmup"])
      entry = report["batches"][str(b)] = dict(decode_figures(
          cfg, b, p["prompt"], p["new_tokens"], prefill, generate, bandwidth, jnp.dtype(cfg.param_dtype).itemsize,
          jnp.dtype(kv_dtype).itemsize), status="ok")
      if ctx.get("profile_dir") and b == max(p["batches"]):
        entry["profile"] = traced(lambda: gen(p["new_tokens"]), f"{ctx['profile_dir']}/sampler_{b}",
                                  generate.median_s)
    except Exception as e:                                           # noqa: BLE001 (recorded, the rest run)
      report["batches"][str(b)] = {"status": "error", "error": error_text(e)}
    report.save()
