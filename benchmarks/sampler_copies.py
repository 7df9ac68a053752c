"""Sampling several rollouts of one prompt: prefilled once and its KV cache copied (`Sampler.generate(copies=)`)
against the prompts written out, in the quickstart's RL shape.

    python -m benchmarks.sampler_copies [--json out.json] [--prompts 8 --copies 4 --prompt-len 165]
        [--new-tokens 24] [--repeats 5]

The model, sampler settings (prefill chunk, batch buckets) and weights are the quickstart's (builtin:tiny-base);
prompts are random token ids; both modes sample the same tokens (tests/models/test_sampler.py), so they do the
same decode work (the mean sampled length is written). A third mode times the copies call with batch buckets
fitted to its rows (`model.sample_batch_size` = rows) instead of the configured ones, which pad 32 rows to 64. One call = `--prompts` prompts x `--copies` rows at temperature 1. Median of --repeats timed calls
after one warm-up each (compilation excluded); the load average before and after and the CPU's float32 FMA peak
are written beside the ratio. Run it alone: a ratio taken while other jobs load the machine is not a result.
"""
from __future__ import annotations

import argparse
import os
import platform

import numpy as np

from benchmarks.pretrain import cpu_fma_peak
from benchmarks.timing import report, time_calls


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--prompts", type=int, default=8, help="distinct prompts per call (tasks)")
    ap.add_argument("--copies", type=int, default=4, help="rows per prompt (rollouts)")
    ap.add_argument("--prompt-len", type=int, default=165, help="tokens per prompt (the quickstart's median)")
    ap.add_argument("--new-tokens", type=int, default=24, help="the quickstart's model.max_new_tokens")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)

    from gui_jax.jobs import load_config
    from gui_jax.rl.agent import Agent
    config = load_config("configs/quickstart.py")
    policy = Agent(config, seed=0).policy
    sampler, vocab = policy.sampler, policy.model_cfg.text.vocab_size
    rng = np.random.default_rng(0)
    prompts = [rng.integers(10, vocab, a.prompt_len).tolist() for _ in range(a.prompts)]
    written = [p for p in prompts for _ in range(a.copies)]
    rows = a.prompts * a.copies
    kw = dict(max_new_tokens=a.new_tokens, temperature=1.0, seed=1)
    load_before = os.getloadavg()
    from gui_jax.rl.jax_policy import policy_batch_buckets
    default_buckets = sampler.batch_buckets

    def with_buckets(buckets, fn):
        def call():
            sampler.batch_buckets = buckets
            try:
                return fn()
            finally:
                sampler.batch_buckets = default_buckets
        return call
    copies = lambda: sampler.generate(prompts, copies=[a.copies] * a.prompts, **kw)  # noqa: E731
    modes = {
        "written_out": lambda: sampler.generate(written, **kw),
        "copies": copies,
        # the same call with model.sample_batch_size = rows: no padding rows (the default's buckets pad 32 to 64)
        "copies_rows_bucket": with_buckets(policy_batch_buckets(rows), copies),
    }
    timings = {name: time_calls(fn, a.repeats, sync=lambda out: out.tokens) for name, fn in modes.items()}
    load_after = os.getloadavg()
    mean_len = float(np.mean(modes["copies"]().lengths))
    out = {
        "benchmark": "sampler_copies", "machine": platform.processor() or platform.machine(),
        "shape": {"prompts": a.prompts, "copies": a.copies, "rows": rows, "prompt_len": a.prompt_len,
                  "new_tokens": a.new_tokens, "mean_sampled_tokens": mean_len, "prefill_chunk": sampler.prefill_chunk},
        "modes": {name: {**t.as_dict(), "rows_per_s": rows / t.median_s} for name, t in timings.items()},
        "speedup_copies_over_written_out": timings["written_out"].median_s / timings["copies"].median_s,
        "batch_buckets": {"default": list(default_buckets), "rows": list(policy_batch_buckets(rows))},
        "speedup_rows_bucket_over_default": timings["copies"].median_s / timings["copies_rows_bucket"].median_s,
        "load_avg_before": load_before, "load_avg_after": load_after, "cpu": cpu_fma_peak(),
    }
    return report(out, a.json)


if __name__ == "__main__":
    main()
