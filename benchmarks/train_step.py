"""The CPU's matmul form for the model's dense layers: [B*T, in] @ W (`dense` merging the leading axes, the
default on CPU) against the batched [B, T, in] @ W form, on the three training updates the CPU recipes run.

    python -m benchmarks.train_step [--json out.json] [--rounds 2] [--repeats 5]

- sft: the quickstart's SFT update (configs/quickstart.py: builtin:tiny-base, 16 expert steps packed into rows
  of 512, micro-batches of 6 rows) on its train episodes;
- rl: the quickstart's semi-online RL update (benchmarks.rl_update's recipe mode, `drop_cancelled`);
- pretrain: the shipped base's pretraining update (benchmarks.pretrain, last curriculum stage, the card's fields).
Each round times every update in both forms, alternating (batched first), after a compile pass; seconds are
medians of --repeats. The batched form is what XLA:CPU turns into weight gradients that contract two axes and
copy their operands through transposing fusions. Values and gradients are equal (tests/models/test_dense.py).
The load average before and after and the CPU's float32 FMA peak are written beside the ratios: run it alone.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics

from benchmarks.pretrain import cpu_fma_peak
from benchmarks.timing import report, time_calls

# benchmarks.pretrain's settings for the shipped base's last-stage update (its model card's fields)
CARD_FIELDS = ("model.num_hidden_layers=3", "pretrain.pointer_weight=0.1", "pretrain.goals_per_screen=4",
               "pretrain.index_readout_weight=0.1",
               "pretrain.pointer_layout=index_first=0.0,label_bag=0.1,index_last=0.2,goal=0.3,match=1.0,row=1.1,"
               "prev_token=1.2,read_match=2.0",
               "pretrain.curriculum=4-8@0:1500,4-16@0.3:652,12-40@1:413,4-40@1",
               "pretrain.mix=tap:0.35,read:0.25,state:0.1,home:0.15,toggle:0.15,launch:0.3", "pretrain.app_pages=0.5")


def sft_update_seconds(repeats: int, steps: int = 4) -> float:
    """Median seconds of one quickstart SFT update, over `steps` fixed batches per timed pass."""
    import jax

    from benchmarks.sft_packing import quickstart_sft_batches
    from gui_jax.rl.batch import DEFAULT_LENGTH_BUCKETS, make_micro_batches
    from gui_jax.train.sft import sft_loss_fn
    from gui_jax.train.state import Updater, init_train_state, make_optimizer
    agent, config, batches = quickstart_sft_batches(steps, prefix="train_step_bench_")
    s = config.sft
    micro = [make_micro_batches(b, agent.model_config, pad_id=agent.tokenizer.pad_id,
                                micro_batch_size=s.micro_batch_size, packing=s.packing, row_length=s.row_length,
                                length_buckets=DEFAULT_LENGTH_BUCKETS)
             for b in batches]
    updater = Updater(sft_loss_fn(agent.graphdef, agent.rest), make_optimizer(1e-12),
                      compute_dtype=getattr(agent, "compute_dtype", None))
    state = init_train_state(agent.copy_params(), updater.optimizer, 0)

    def one_pass():
        nonlocal state
        for m in micro:
            state, _ = updater.step(state, m)
        return state.params
    return time_calls(one_pass, repeats, sync=jax.block_until_ready).median_s / steps


def measure(form: str, repeats: int) -> dict:
    """Seconds per update of each recipe with `dense` in `form` ('merged' or 'batched')."""
    import jax

    from benchmarks import pretrain, rl_update
    from gui_jax.models.qwen2_5_vl import layers
    layers.MERGED_DENSE_BACKENDS = ("cpu",) if form == "merged" else ()
    jax.clear_caches()   # no program traced in the other form is reused
    rl = rl_update.main(["--repeats", str(repeats)])["modes"]["drop_cancelled"]["median_s"]
    pre = pretrain.run(argparse.Namespace(config="configs/pretrain_tiny.py", stage=3, steps=3, repeats=repeats,
                                          peak_tflops=None, set=list(CARD_FIELDS)))
    return {"sft_s": sft_update_seconds(repeats), "rl_s": rl, "pretrain_s": pre["step_seconds"],
            "pretrain_tokens_per_s": pre["tokens_per_s"], "pretrain_fraction_of_fma_peak": pre.get("fraction_of_fma_peak")}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--rounds", type=int, default=2, help="times each form is measured, alternating")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    load_before = os.getloadavg()
    rounds = [{form: measure(form, a.repeats) for form in ("batched", "merged")} for _ in range(a.rounds)]
    speedups = {k: [r["batched"][k] / r["merged"][k] for r in rounds] for k in ("sft_s", "rl_s", "pretrain_s")}
    out = {"benchmark": "train_step", "machine": platform.processor() or platform.machine(), "rounds": rounds,
           "speedup_merged_over_batched": speedups,
           "speedup_median": {k: statistics.median(v) for k, v in speedups.items()},
           "load_avg_before": load_before, "load_avg_after": os.getloadavg(), "cpu": cpu_fma_peak()}
    return report(out, a.json)


if __name__ == "__main__":
    main()
