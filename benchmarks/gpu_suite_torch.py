"""The PyTorch + transformers sections of benchmarks/gpu_suite.py (its docstring says what is measured): the same
train step and greedy generation at the same shapes and token rows, on transformers' Qwen2.5-VL built from the
same config (random weights, nothing downloaded)."""
from __future__ import annotations

import gc

import numpy as np

from benchmarks import gpu_suite as suite
from benchmarks.timing import time_calls


def _device():
  import torch
  return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _platform(report) -> dict:
  """Versions, device and the card's peak (the same table as the JAX sections)."""
  import torch
  import transformers
  dev = _device()
  kind, backend = (torch.cuda.get_device_name(dev), "gpu") if dev.type == "cuda" else ("cpu", "cpu")
  report.update(torch_version=torch.__version__, transformers_version=transformers.__version__, device_kind=kind,
                backend=backend, peak=suite.peak_info(kind, backend))
  return report["peak"]


def build_hf(cfg, dtype):
  """transformers' Qwen2.5-VL for `cfg`, created directly on the device in `dtype` (random init)."""
  import torch
  from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
  old = torch.get_default_dtype()
  torch.set_default_dtype(dtype)
  try:
    with torch.device(_device()):
      return Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**cfg.to_hf_dict()))
  finally:
    torch.set_default_dtype(old)


def _free() -> None:
  import torch
  gc.collect()
  if torch.cuda.is_available():
    torch.cuda.empty_cache()


def torch_train_step(recipe: dict, repeats: int, warmup: int):
  """step_fn for suite.run_train_shapes: fp32 weights, bf16 autocast, activation checkpointing under a remat
  policy, the LM head on the response positions (logits_to_keep), token-mean NLL, global-norm clip, AdamW."""
  import torch
  rl = recipe["rl"]

  def step_fn(cfg, inputs):
    dev = _device()
    model = build_hf(cfg, torch.float32)
    model.train()
    if recipe["remat_policy"] != "none":
      enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
      enable()
    opt = torch.optim.AdamW(model.parameters(), lr=rl["learning_rate"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=rl["weight_decay"], fused=dev.type == "cuda")
    rows = [np.concatenate([p, r]) for p, r in zip(inputs["prompts"], inputs["responses"])]
    ids = torch.from_numpy(np.stack(rows).astype(np.int64)).to(dev)
    response = len(inputs["responses"][0])
    kw = {}
    if inputs["grid"] is not None:
      kw = {"pixel_values": torch.from_numpy(np.concatenate(inputs["pixels"])).to(dev),
            "image_grid_thw": torch.tensor([inputs["grid"]] * len(rows), device=dev)}
    targets = ids[:, -response:].reshape(-1)

    def step(micro_batches=1):
      opt.zero_grad(set_to_none=True)
      for _ in range(micro_batches):                                 # gradients accumulate, one update
        with torch.autocast(dev.type, dtype=torch.bfloat16):
          logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), logits_to_keep=response + 1,
                         use_cache=False, **kw).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), targets)
        (loss / micro_batches).backward()
      torch.nn.utils.clip_grad_norm_(model.parameters(), rl["max_grad_norm"])
      opt.step()
      return loss
    losses = []
    timing = time_calls(step, repeats, sync=lambda loss: losses.append(loss.item()), warmup=warmup)
    k = inputs["micro_batches"]
    accumulating = (k, time_calls(lambda: step(k), repeats, sync=lambda loss: loss.item(), warmup=warmup)) \
        if k > 1 else (1, None)
    return timing, {"accumulating": accumulating, "loss": losses[-1], "batch_shape": list(ids.shape),
                    "attn_implementation": getattr(model.config, "_attn_implementation", None), "autocast": "bfloat16",
                    "param_dtype": "float32", "activation_checkpointing": recipe["remat_policy"] != "none"}
  return step_fn


def run_train_torch(ctx: dict, report) -> None:
  import torch
  _platform(report)
  jax_shapes = ((ctx["results"].get("train_jax") or {}).get("shapes") or {})
  reuse = {name: e["layers"] for name, e in jax_shapes.items() if e.get("layers")}
  memory = None
  if torch.cuda.is_available():
    memory = torch.cuda.mem_get_info()[1] * float(suite.JAX_MEMORY_FRACTION)   # what JAX's sections get
  suite.run_train_shapes(ctx, report, torch_train_step(ctx["recipe"], ctx["plan"]["repeats"],
                                                       ctx["plan"]["warmup"]), memory, reuse)


def _copy_bandwidth(nbytes: int, repeats: int, warmup: int) -> float:
  """HBM bandwidth from a device-to-device tensor copy (when the card section did not run)."""
  import torch
  dev = _device()
  src = torch.arange(nbytes // 4, dtype=torch.float32, device=dev)
  dst = torch.empty_like(src)
  sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
  t = time_calls(lambda: dst.copy_(src), repeats, sync=lambda _: sync(), warmup=warmup)
  return 2 * src.numel() * 4 / t.median_s


def run_sampler_torch(ctx: dict, report) -> None:
  import torch
  _platform(report)
  plan, p = ctx["plan"], ctx["plan"]["sampler"]
  cfg = suite.sampler_model_config(ctx)
  bandwidth, source = suite.card_bandwidth(ctx)
  if bandwidth is None:
    bandwidth = _copy_bandwidth(plan["copy_bytes"], plan["repeats"], plan["warmup"])
    source = "measured in this section with a torch copy (card did not run)"
  report.update(layers=cfg.text.num_hidden_layers, hidden=cfg.text.hidden_size, weights_dtype="bfloat16",
                kv_cache="transformers default (DynamicCache, bf16)", hbm_bandwidth_source=source,
                bound_bytes="as the JAX sampler's static cache (same formula)", batches={})
  report.save()
  model = build_hf(cfg, torch.bfloat16).eval()
  dev = _device()
  for b in p["batches"]:
    try:
      ids = torch.from_numpy(suite.prompt_ids(cfg, b, p["prompt"]).astype(np.int64)).to(dev)

      def gen(n):
        with torch.inference_mode():
          return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                min_new_tokens=n, do_sample=False, pad_token_id=0, eos_token_id=None).cpu()
      prefill = time_calls(lambda: gen(1), plan["repeats"], warmup=plan["warmup"])
      generate = time_calls(lambda: gen(p["new_tokens"]), plan["repeats"], warmup=plan["warmup"])
      report["batches"][str(b)] = dict(suite.decode_figures(cfg, b, p["prompt"], p["new_tokens"], prefill, generate,
                                                            bandwidth, 2, 2), status="ok")
    except Exception as e:                                           # noqa: BLE001 (recorded, the rest run)
      report["batches"][str(b)] = {"status": "error", "error": suite.error_text(e)}
      _free()
    report.save()
