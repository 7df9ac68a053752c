"""Flax Qwen2.5-VL vs PyTorch transformers: train step and greedy KV-cache decode, same config and weights.

    python -m benchmarks.model --json out.json [--config 50m] [--batch 4 --seq 256] [--new-tokens 64]
    python -m benchmarks.model --mfu --config 1b --dtype bfloat16 --peak-tflops 989 [--batch 8 --seq 2048]

Train step = forward + backward + AdamW update on [batch, seq] random text tokens (next-token CE), float32 CPU
by default, median of --steps timed steps after one warm-up (compilation excluded). Decode = greedy generation of
--new-tokens tokens after a --prompt-len prompt for --batch rows (prefill included; JAX: our Sampler with the
`while_loop` and the `python` decode loops; torch: `generate(do_sample=False)`). Both frameworks get the same
weights (transformers model saved, then loaded with hf_io) and use every core of the machine.
--mfu (Flax only; meant for a GPU): model FLOPs per step = 6 * N * tokens + 12 * layers * hidden * seq * tokens
(N = decoder + LM-head weights; attention term counts QK^T and AV, forward + backward, no causal discount),
MFU = FLOPs / step time / (--peak-tflops * 1e12).
Importable without grain or ml-collections.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time

import numpy as np

from benchmarks.timing import time_calls

CONFIGS = {
    # ~50M parameters: text hidden 512 x 12 layers, vocab 32k (tied); a 1-block vision tower (unused).
    "50m": {"vocab": 32000, "hidden": 512, "inter": 1408, "layers": 12, "heads": 8, "kv": 2,
            "mrope": (8, 12, 12), "tie": True},
    # A smaller smoke config for quick runs.
    "10m": {"vocab": 8192, "hidden": 256, "inter": 704, "layers": 6, "heads": 4, "kv": 2,
            "mrope": (8, 12, 12), "tie": True},
    # Qwen2.5-1.5B text shapes (~1.5B parameters, 1.36B in matmuls) for the MFU mode.
    "1b": {"vocab": 151936, "hidden": 1536, "inter": 8960, "layers": 24, "heads": 12, "kv": 2,
           "mrope": (16, 24, 24), "tie": True},
    # Qwen2.5-VL-7B text shapes (--layers cuts the depth to fit one GPU with float32 masters + AdamW).
    "7b": {"vocab": 152064, "hidden": 3584, "inter": 18944, "layers": 28, "heads": 28, "kv": 4,
           "mrope": (16, 24, 24), "tie": False},
}


def make_config(name: str, dtype: str = "float32"):
  from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig, TextConfig, VisionConfig
  c = CONFIGS[name]
  text = TextConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["inter"],
                    num_hidden_layers=c["layers"], num_attention_heads=c["heads"], num_key_value_heads=c["kv"],
                    rope_theta=10000.0, mrope_section=c["mrope"], max_position_embeddings=32768,
                    bos_token_id=None, eos_token_id=None, pad_token_id=0)
  vision = VisionConfig(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=c["hidden"],
                        fullatt_block_indexes=(0,))
  v = c["vocab"]
  return Qwen25VLConfig(text=text, vision=vision, image_token_id=v - 4, video_token_id=v - 3,
                        vision_start_token_id=v - 2, vision_end_token_id=v - 1, tie_word_embeddings=c["tie"],
                        dtype=dtype, param_dtype=dtype)


def matmul_params(cfg) -> int:
  """Weights that take part in per-token matmuls: decoder layers + LM head (embedding lookup excluded)."""
  t = cfg.text
  hd = t.head_dim
  attn = (t.hidden_size * (t.num_attention_heads + 2 * t.num_key_value_heads) * hd
          + t.num_attention_heads * hd * t.hidden_size)
  mlp = 3 * t.hidden_size * t.intermediate_size
  return t.num_hidden_layers * (attn + mlp) + t.vocab_size * t.hidden_size


def train_flops(cfg, batch: int, seq: int) -> float:
  tokens = batch * seq
  return 6.0 * matmul_params(cfg) * tokens + 12.0 * cfg.text.num_hidden_layers * cfg.text.hidden_size * seq * tokens


def _median_time(fn, steps: int, sync) -> tuple[float, float]:
  """(median wall s, median process-CPU s) of `fn` over `steps` calls (the caller made the first call)."""
  t = time_calls(fn, steps, sync=sync, first_call=False)
  return t.median_s, t.median_cpu_s


# --------------------------------------------------------------------------------------------------- flax
def flax_train_step_time(model, batch_np: dict, steps: int, lr: float = 1e-4) -> dict:
  import functools

  import jax
  import jax.numpy as jnp
  import optax
  from flax import nnx

  graphdef, params = nnx.split(model)
  tx = optax.adamw(lr)
  opt_state = tx.init(params)

  def loss_fn(p, batch):
    m = nnx.merge(graphdef, p)
    logits = m(batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    targets = batch["input_ids"][:, 1:]
    ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), targets)
    return jnp.mean(ce)

  @functools.partial(jax.jit, donate_argnums=(0, 1))
  def step(p, s, batch):
    loss, grads = jax.value_and_grad(loss_fn)(p, batch)
    updates, s = tx.update(grads, s, p)
    return optax.apply_updates(p, updates), s, loss

  batch = {k: jnp.asarray(v) for k, v in batch_np.items()}
  state = {"p": params, "s": opt_state}
  t0 = time.perf_counter()
  state["p"], state["s"], loss = step(state["p"], state["s"], batch)
  first_loss = float(loss)
  compile_s = time.perf_counter() - t0

  def run():
    state["p"], state["s"], l = step(state["p"], state["s"], batch)
    return l

  wall, cpu = _median_time(run, steps, lambda x: x.block_until_ready())
  return {"step_s": wall, "step_cpu_s": cpu, "first_step_s": compile_s, "first_loss": first_loss}


def flax_decode_time(model, prompts: np.ndarray, new_tokens: int, impl: str, repeats: int) -> dict:
  from gui_jax.models.sampler import Sampler
  b, p = prompts.shape
  s = Sampler(model, eos_ids=[-1], pad_id=0, prompt_buckets=(p,), new_token_buckets=(new_tokens,),
              batch_buckets=(b,), decode_impl=impl)
  t0 = time.perf_counter()
  out = s.generate(prompts, max_new_tokens=new_tokens)
  compile_s = time.perf_counter() - t0
  wall, cpu = _median_time(lambda: s.generate(prompts, max_new_tokens=new_tokens), repeats, lambda x: x)
  return {"generate_s": wall, "generate_cpu_s": cpu, "first_call_s": compile_s,
          "tokens_per_s": b * new_tokens / wall, "tokens": out.tokens}


# -------------------------------------------------------------------------------------------------- torch
def torch_train_step_time(hf, batch_np: dict, steps: int, lr: float = 1e-4) -> dict:
  import torch
  hf.train()
  opt = torch.optim.AdamW(hf.parameters(), lr=lr, weight_decay=0.0)
  ids = torch.from_numpy(batch_np["input_ids"].astype(np.int64))
  mask = torch.from_numpy(batch_np["attention_mask"].astype(np.int64))

  def run():
    opt.zero_grad(set_to_none=True)
    loss = hf(input_ids=ids, attention_mask=mask, labels=ids).loss
    loss.backward()
    opt.step()
    return loss

  t0 = time.perf_counter()
  first_loss = float(run().detach())
  first = time.perf_counter() - t0
  wall, cpu = _median_time(run, steps, lambda x: x)
  hf.eval()
  return {"step_s": wall, "step_cpu_s": cpu, "first_step_s": first, "first_loss": first_loss}


def torch_decode_time(hf, prompts: np.ndarray, new_tokens: int, repeats: int) -> dict:
  import torch
  ids = torch.from_numpy(prompts.astype(np.int64))
  kw = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "max_new_tokens": new_tokens,
            "min_new_tokens": new_tokens, "do_sample": False, "pad_token_id": 0, "eos_token_id": None}

  def run():
    with torch.no_grad():
      return hf.generate(**kw)

  out = run()
  wall, cpu = _median_time(run, repeats, lambda x: x)
  b = prompts.shape[0]
  return {"generate_s": wall, "generate_cpu_s": cpu, "tokens_per_s": b * new_tokens / wall,
          "tokens": out[:, prompts.shape[1]:].numpy()}


# ---------------------------------------------------------------------------------------------------- main
def build_pair(cfg_name: str, seed: int = 0):
  """(transformers model, our model, cfg) with identical float32 weights."""
  import torch
  from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

  from gui_jax.models.qwen2_5_vl import hf_io
  cfg = make_config(cfg_name)
  torch.manual_seed(seed)
  hf = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(**cfg.to_hf_dict())).float().eval()
  with tempfile.TemporaryDirectory() as d:
    hf.save_pretrained(d)
    model, cfg = hf_io.load_hf_checkpoint(d)
  return hf, model, cfg


def run_compare(args) -> dict:
  import jax
  import torch
  hf, model, cfg = build_pair(args.config)
  n_params = sum(p.numel() for p in hf.parameters())
  rng = np.random.default_rng(0)
  batch = {"input_ids": rng.integers(1, cfg.text.vocab_size - 8, (args.batch, args.seq)).astype(np.int32),
           "attention_mask": np.ones((args.batch, args.seq), bool)}
  res = {"config": args.config, "params": int(n_params), "batch": args.batch, "seq": args.seq,
         "dtype": "float32", "jax": jax.__version__, "torch": torch.__version__, "devices": str(jax.devices()),
         "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "machine": platform.machine()}

  flax_train = flax_train_step_time(model, batch, args.steps)
  torch_train = torch_train_step_time(hf, batch, args.steps)
  tokens = args.batch * args.seq
  res["train_step"] = {
      "flax_s": flax_train["step_s"], "torch_s": torch_train["step_s"],
      "flax_cpu_s": flax_train["step_cpu_s"], "torch_cpu_s": torch_train["step_cpu_s"],
      "flax_first_step_s": flax_train["first_step_s"],
      "flax_tokens_per_s": tokens / flax_train["step_s"], "torch_tokens_per_s": tokens / torch_train["step_s"],
      "speedup_flax_over_torch": torch_train["step_s"] / flax_train["step_s"],
      "first_loss_flax": flax_train["first_loss"], "first_loss_torch": torch_train["first_loss"],
  }
  # Train steps changed both models' weights differently (different AdamW numerics): rebuild for decode.
  hf, model, cfg = build_pair(args.config)
  prompts = rng.integers(1, cfg.text.vocab_size - 8, (args.batch, args.prompt_len)).astype(np.int32)
  dec = {"prompt_len": args.prompt_len, "new_tokens": args.new_tokens}
  for impl in ("while_loop", "python"):
    f = flax_decode_time(model, prompts, args.new_tokens, impl, args.repeats)
    dec[f"flax_{impl}_s"] = f["generate_s"]
    dec[f"flax_{impl}_tokens_per_s"] = f["tokens_per_s"]
    dec[f"flax_{impl}_first_call_s"] = f["first_call_s"]
    flax_tokens = f["tokens"]
  t = torch_decode_time(hf, prompts, args.new_tokens, args.repeats)
  dec["torch_s"] = t["generate_s"]
  dec["torch_tokens_per_s"] = t["tokens_per_s"]
  best = min(dec["flax_while_loop_s"], dec["flax_python_s"])
  dec["speedup_flax_over_torch"] = t["generate_s"] / best
  dec["greedy_tokens_equal"] = bool(np.array_equal(flax_tokens, t["tokens"]))
  dec["greedy_tokens_match_fraction"] = float(np.mean(flax_tokens == t["tokens"]))
  res["decode"] = dec
  return res


def real_train_step_time(model, batch_np: dict, steps: int, compute_dtype: str, lr: float = 1e-4) -> dict:
  """The trainer's own step (train/state.py Updater): float32 master params + AdamW, `compute_dtype` forward /
  backward, float32 logits and loss (sum / token count), accumulation and update jitted with donation."""
  import jax.numpy as jnp
  import optax
  from flax import nnx

  from gui_jax.train.state import Updater, init_train_state, make_optimizer, split_model
  graphdef, params, rest = split_model(model)

  def loss(p, batch, rng):
    logits = nnx.merge(graphdef, p, rest)(batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    ce = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1].astype(jnp.float32), batch["input_ids"][:, 1:])
    return ce.sum(), jnp.float32(ce.size), {}

  up = Updater(loss, make_optimizer(lr), compute_dtype=compute_dtype)
  state = {"s": init_train_state(params, up.optimizer, 0)}
  t0 = time.perf_counter()
  state["s"], m = up.step(state["s"], [batch_np])
  compile_s = time.perf_counter() - t0

  def run():
    state["s"], metrics = up.step(state["s"], [batch_np])  # returns after the one host sync of the step
    return metrics

  wall, cpu = _median_time(run, steps, lambda x: x)
  return {"step_s": wall, "step_cpu_s": cpu, "first_step_s": compile_s, "first_loss": m["loss"]}


def run_mfu(args) -> dict:
  import jax
  from flax import nnx

  from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
  cfg = make_config(args.config, dtype=args.dtype)
  if args.layers:
    cfg = cfg.replace(text=dataclasses.replace(cfg.text, num_hidden_layers=args.layers))
  if args.real_step:
    cfg = cfg.replace(param_dtype="float32")  # float32 masters; compute in --dtype
  model = Qwen25VLForConditionalGeneration(cfg, rngs=nnx.Rngs(0))
  rng = np.random.default_rng(0)
  batch = {"input_ids": rng.integers(1, cfg.text.vocab_size - 8, (args.batch, args.seq)).astype(np.int32),
           "attention_mask": np.ones((args.batch, args.seq), bool)}
  if args.real_step:
    r = real_train_step_time(model, batch, args.steps, args.dtype)
  else:
    r = flax_train_step_time(model, batch, args.steps)
  flops = train_flops(cfg, args.batch, args.seq)
  out = {"config": args.config, "dtype": args.dtype, "batch": args.batch, "seq": args.seq,
         "layers": cfg.text.num_hidden_layers, "real_step": bool(args.real_step), "param_dtype": cfg.param_dtype,
         "matmul_params": matmul_params(cfg), "devices": str(jax.devices()), "step_s": r["step_s"],
         "first_step_s": r["first_step_s"], "model_tflops_per_step": flops / 1e12,
         "achieved_tflops": flops / r["step_s"] / 1e12, "tokens_per_s": args.batch * args.seq / r["step_s"]}
  if args.peak_tflops:
    out["peak_tflops"] = args.peak_tflops
    out["mfu"] = flops / r["step_s"] / (args.peak_tflops * 1e12)
  return out


def print_table(res: dict) -> None:
  if "train_step" in res:
    tr, de = res["train_step"], res["decode"]
    print(f"config {res['config']} ({res['params'] / 1e6:.1f}M params), batch {res['batch']} x seq {res['seq']}, "
          f"float32, {res['devices']}, torch threads {res['torch_threads']}")
    print(f"{'measure':<34}{'flax':>12}{'torch':>12}{'flax speedup':>14}")
    print(f"{'train step (s)':<34}{tr['flax_s']:>12.3f}{tr['torch_s']:>12.3f}{tr['speedup_flax_over_torch']:>13.2f}x")
    print(f"{'train tokens/s':<34}{tr['flax_tokens_per_s']:>12.0f}{tr['torch_tokens_per_s']:>12.0f}")
    for impl in ("while_loop", "python"):
      print(f"{'decode tokens/s (' + impl + ')':<34}{de[f'flax_{impl}_tokens_per_s']:>12.1f}"
            f"{de['torch_tokens_per_s']:>12.1f}{de['torch_s'] / de[f'flax_{impl}_s']:>13.2f}x")
    print(f"greedy tokens identical: {de['greedy_tokens_equal']} (match {de['greedy_tokens_match_fraction']:.3f})")
  else:
    print(json.dumps(res, indent=1))


def main(argv=None) -> dict:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--json", help="write results here")
  ap.add_argument("--config", default="50m", choices=sorted(CONFIGS))
  ap.add_argument("--batch", type=int, default=4)
  ap.add_argument("--seq", type=int, default=256)
  ap.add_argument("--steps", type=int, default=3, help="timed train steps (median)")
  ap.add_argument("--prompt-len", type=int, default=64)
  ap.add_argument("--new-tokens", type=int, default=64)
  ap.add_argument("--repeats", type=int, default=2, help="timed generate calls (median)")
  ap.add_argument("--mfu", action="store_true", help="Flax-only train-step MFU (use on an accelerator)")
  ap.add_argument("--dtype", default="bfloat16", help="--mfu compute/param dtype")
  ap.add_argument("--peak-tflops", type=float, default=None, help="--mfu: device peak TFLOP/s for the dtype")
  ap.add_argument("--real-step", action="store_true",
                  help="--mfu: time the trainer's Updater step (float32 masters + AdamW, --dtype compute)")
  ap.add_argument("--layers", type=int, default=0, help="--mfu: cut the text depth (0 = the config's)")
  args = ap.parse_args(argv)
  res = run_mfu(args) if args.mfu else run_compare(args)
  print_table(res)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(res, f, indent=1)
  return res


if __name__ == "__main__":
  main()
