"""Throughput of the pretraining step (configs/pretrain_tiny.py) against the hardware's limit.

    python -m benchmarks.pretrain --json out.json [--stage 0] [--steps 10 --repeats 3]
    python -m benchmarks.pretrain --json out.json --peak-tflops 989     # a GPU: the dtype's peak (H100 bf16 dense)
    python -m benchmarks.pretrain --json out.json --set pretrain.batch_size=256 --set pretrain.micro_batch_size=128

Times the real update (`Updater.step` on the micro-batches `fit` builds: packing, row length and micro-batch
size of the config) on batches of the chosen curriculum stage, after a compile pass over the same batches, as
the median of `repeats` passes of `steps` updates. Reports:
  tokens/s            real (unpadded) tokens per second of update time
  achieved FLOP/s     model FLOPs of the computed rows (6 · matmul params · row tokens + attention, the
                      usual estimate; padding included, since it is computed) / step time
  data items/s        the stream's generation + tokenisation on one thread (a bound on what the input side feeds)
  host batching       seconds per update of packing the items into micro-batches (the job does it between steps)
  CPU: against the FMA peak (cores × clock × FLOPs per cycle: 32 for AVX2 with two FMA units, 64 for AVX-512)
  and against a measured large float32 matmul (what XLA reaches on this CPU at best). GPU: MFU against
  --peak-tflops. The load average before and after is recorded beside each number: a loaded machine's
  ratio is not a result.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np


def cpu_fma_peak() -> dict:
    """Cores × clock × FLOPs/cycle from /proc/cpuinfo (float32)."""
    info = open("/proc/cpuinfo").read()
    flags = next((line for line in info.splitlines() if line.startswith("flags")), "")
    mhz = [float(line.split(":")[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
    per_cycle = 64 if " avx512f" in flags else 32 if " avx2" in flags and " fma" in flags else 8
    cores = len(os.sched_getaffinity(0))
    ghz = (statistics.median(mhz) if mhz else 0.0) / 1000
    return {"cores": cores, "ghz": round(ghz, 3), "flops_per_cycle": per_cycle,
            "fma_peak_flops": cores * ghz * 1e9 * per_cycle}


def measured_matmul_flops(n: int = 2048, repeats: int = 5) -> float:
    """Best float32 FLOP/s of an n×n matmul under XLA on the default device."""
    import jax
    import jax.numpy as jnp
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = min(_timed(lambda: f(a).block_until_ready()) for _ in range(repeats))
    return 2.0 * n ** 3 / best


def _say(text: str) -> None:
    """A progress line on stderr, flushed: a run cut off by a lease's limit still shows how far it got."""
    import sys
    print(f"[benchmarks.pretrain] {text}", file=sys.stderr, flush=True)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def row_flops(model_cfg, micro_batches) -> float:
    """Training FLOPs of the computed rows (padding included): 6·P·tokens + 12·layers·hidden·L·tokens."""
    from benchmarks.model import train_flops
    return sum(train_flops(model_cfg, *mb["input_ids"].shape) for mb in micro_batches)


def apply_settings(config, settings):
    """config with each 'dotted.field=value' set (value a Python literal where it is one); an unknown field is a
    one-line error naming it."""
    import ast
    for item in settings:
        path, eq, text = item.partition("=")
        *parents, leaf = path.split(".")
        node = config
        for name in parents:
            node = node.get(name) if hasattr(node, "get") else None
        if not eq or node is None or not hasattr(node, "get") or leaf not in node:
            raise SystemExit(f"--set {item!r}: expected FIELD=VALUE with FIELD a field of the recipe "
                             f"(e.g. pretrain.batch_size=256)")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        node[leaf] = value
    return config


def run(args) -> dict:
    import jax

    from gui_jax.core.recipe_files import recipe_config
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.batch import make_micro_batches
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
    from gui_jax.train.sft import sft_loss_fn
    from gui_jax.train.state import Updater, init_train_state, make_optimizer

    from gui_jax.train.pretrain import digit_ids, pointer_layout

    load_before = os.getloadavg()
    config = apply_settings(recipe_config(args.config), args.set)
    cfg = config.pretrain
    agent = Agent(config, seed=0)
    stages = parse_curriculum(cfg.curriculum)
    layout = pointer_layout(cfg, agent.model_config)     # the job's supervised hops (none by default)
    stream = CurriculumStream(agent, PromptConfig(**config.prompt.to_dict()), stages, parse_mix(cfg.mix),
                              batch_size=cfg.batch_size, seed=0, goals_per_screen=int(cfg.goals_per_screen),
                              pointers=bool(layout), read_pointers="read_match" in layout,
                              app_pages=float(cfg.app_pages))
    first_step = sum(s.steps or 0 for s in stages[:args.stage])
    t0 = time.perf_counter()
    batches = [[stream[(first_step + b) * cfg.batch_size + k] for k in range(cfg.batch_size)]
               for b in range(args.steps)]
    data_items_s = args.steps * cfg.batch_size / (time.perf_counter() - t0)
    _say(f"{args.steps * cfg.batch_size} items generated on one thread ({data_items_s:.0f} items/s)")
    t0 = time.perf_counter()
    micro = [make_micro_batches(b, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                micro_batch_size=cfg.micro_batch_size, packing=bool(cfg.packing),
                                row_length=cfg.row_length or None) for b in batches]
    host_batching_s = (time.perf_counter() - t0) / args.steps   # the job does this between device steps
    real_tokens = sum(len(s) for b in batches for s in b)
    flops = sum(row_flops(agent.model_config, m) for m in micro)
    readout = float(cfg.index_readout_weight) if layout else 0.0
    updater = Updater(sft_loss_fn(agent.graphdef, agent.rest, float(cfg.prompt_loss_weight),
                                  int(cfg.prompt_loss_chunk), float(cfg.pointer_weight), layout, readout,
                                  digit_ids(stream.encoder.tokenizer) if readout else ()),
                      make_optimizer(cfg.learning_rate))
    state = init_train_state(agent.copy_params(), updater.optimizer, 0)

    def one_pass():
        nonlocal state
        for m in micro:
            state, metrics = updater.step(state, m)
        jax.block_until_ready(state.params)

    compile_s = _timed(one_pass)            # compiles every shape of these batches
    _say(f"compile pass {compile_s:.1f} s ({len({m['input_ids'].shape for b in micro for m in b})} shapes); "
         f"timing {args.repeats} passes of {args.steps} updates")
    times = [_timed(one_pass) for _ in range(args.repeats)]
    step_s = statistics.median(times) / args.steps
    out = {"config": args.config, "stage": args.stage, "lines": [stages[args.stage].difficulty.min_lines,
                                                                 stages[args.stage].difficulty.max_lines],
           "device": str(jax.devices()[0].device_kind), "backend": jax.default_backend(),
           "batch_items": cfg.batch_size, "steps": args.steps, "repeats": args.repeats,
           "pass_seconds": [round(t, 3) for t in times], "compile_pass_seconds": round(compile_s, 2),
           "step_seconds": round(step_s, 4), "tokens_per_s": round(real_tokens / args.steps / step_s, 1),
           "padding_fraction": round(1 - real_tokens / sum(m["input_ids"].size for b in micro for m in b), 3),
           "achieved_flops": flops / args.steps / step_s, "data_items_per_s_one_thread": round(data_items_s, 1),
           "host_batching_seconds_per_update": round(host_batching_s, 4), "settings": list(args.set)}
    if jax.default_backend() == "cpu":
        peak = cpu_fma_peak()
        out.update(peak)
        out["matmul_flops"] = measured_matmul_flops()
        out["fraction_of_fma_peak"] = out["achieved_flops"] / peak["fma_peak_flops"]
        out["fraction_of_matmul"] = out["achieved_flops"] / out["matmul_flops"]
    if args.peak_tflops:
        out["peak_tflops"] = args.peak_tflops
        out["mfu"] = out["achieved_flops"] / (args.peak_tflops * 1e12)
    out["load_average_before"] = [round(x, 2) for x in load_before]
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/pretrain_tiny.py")
    ap.add_argument("--stage", type=int, default=0, help="curriculum stage whose screens are timed (0-based)")
    ap.add_argument("--steps", type=int, default=8, help="updates per timed pass")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes (the median is reported)")
    ap.add_argument("--peak-tflops", type=float, default=None, help="accelerator peak TFLOP/s for MFU")
    ap.add_argument("--json", default=None, help="write the result here")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a recipe field, e.g. --set pretrain.batch_size=256 (repeatable)")
    args = ap.parse_args(argv)
    out = run(args)
    for k, v in out.items():
        print(f"{k:32s} {v:.4g}" if isinstance(v, float) else f"{k:32s} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
