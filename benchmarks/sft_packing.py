"""The quickstart's SFT update under two packings of the same batches into rows of 512: fixed micro-batches of 6
rows (`sft.micro_rows=fixed`, the earlier default) and near-equal ones with the rows over 512 apart (`even`).

    python -m benchmarks.sft_packing [--json out.json] [--batches 40] [--rounds 2]

The same `--batches` logical batches of 16 expert steps (configs/quickstart.py, builtin:tiny-base) are packed
each way; every variant first runs once over them (`first_pass_s`: its compilations included, the first
variant's also the optimizer step's; `shapes`: distinct micro-batch shapes, one XLA program each), then
`--rounds` timed passes, alternating variants. Reported per variant: seconds an update (median of rounds), token
slots computed and the share of them that are real tokens. The load average before and after and the CPU's
float32 FMA peak are written beside the ratios: run it alone.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np

from benchmarks.pretrain import cpu_fma_peak
from benchmarks.timing import report

VARIANTS = {"512_fixed": (512, "fixed"), "512_even": (512, "even")}


def quickstart_sft_batches(n_batches: int, prefix: str = "sft_packing_"):
    """(agent, config, [n_batches lists of 16 TrainSamples]): the quickstart's SFT batches (builtin:tiny-base),
    drawn with a fixed seed from its train episodes."""
    from gui_jax.jobs import load_config
    from gui_jax.jobs.common import prepare
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    from gui_jax.train.sft import SFTSource
    config = load_config("configs/quickstart.py")
    episodes = prepare(config, os.path.join(tempfile.mkdtemp(prefix=prefix), "episodes"), sides=("train",))[2]
    agent = Agent(config, seed=0)
    source = SFTSource(agent, episodes, PromptConfig(**config.prompt.to_dict()), None, False)
    rng = np.random.default_rng(0)
    return agent, config, [[source[int(i)] for i in rng.choice(len(source), config.sft.batch_size, replace=False)]
                           for _ in range(n_batches)]


def packed_variants(n_batches: int):
    """(agent, real tokens, {variant: [micro-batches of each batch]}) for `n_batches` quickstart SFT batches."""
    from gui_jax.rl.batch import DEFAULT_LENGTH_BUCKETS, make_micro_batches
    agent, config, batches = quickstart_sft_batches(n_batches)
    micro = {name: [make_micro_batches(b, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                       micro_batch_size=config.sft.micro_batch_size, packing=True, row_length=row,
                                       length_buckets=DEFAULT_LENGTH_BUCKETS, micro_rows=rows) for b in batches]
             for name, (row, rows) in VARIANTS.items()}
    return agent, sum(len(x) for b in batches for x in b), micro


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    import jax

    from gui_jax.rl.batch import shape_key
    from gui_jax.train.sft import sft_loss_fn
    from gui_jax.train.state import Updater, init_train_state, make_optimizer
    load_before = os.getloadavg()
    agent, real, micro = packed_variants(a.batches)
    updater = Updater(sft_loss_fn(agent.graphdef, agent.rest), make_optimizer(1e-12),
                      compute_dtype=getattr(agent, "compute_dtype", None))
    state = init_train_state(agent.copy_params(), updater.optimizer, 0)

    def one_pass(name):
        nonlocal state
        t = time.perf_counter()
        for mb in micro[name]:
            state, _ = updater.step(state, mb)
        jax.block_until_ready(state.params)
        return time.perf_counter() - t
    out = {name: {"row_length": row, "micro_rows": rows,
                  "shapes": len({shape_key(mb) for m in micro[name] for mb in m}),
                  "token_slots": int(sum(mb["input_ids"].size for m in micro[name] for mb in m)),
                  "first_pass_s": one_pass(name), "pass_s": []}
           for name, (row, rows) in VARIANTS.items()}
    for _ in range(a.rounds):
        for name in VARIANTS:
            out[name]["pass_s"].append(one_pass(name))
    for v in out.values():
        v["update_s"] = statistics.median(v["pass_s"]) / a.batches
        v["real_token_share"] = real / v["token_slots"]
    ref = out["512_fixed"]["update_s"]
    result = {"benchmark": "sft_packing", "machine": platform.processor() or platform.machine(),
              "batches": a.batches, "real_tokens": real, "variants": out,
              "speedup_over_512_fixed": {k: ref / v["update_s"] for k, v in out.items()},
              "load_avg_before": load_before, "load_avg_after": os.getloadavg(), "cpu": cpu_fma_peak()}
    return report(result, a.json)


if __name__ == "__main__":
    main()
