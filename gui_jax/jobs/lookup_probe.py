"""Job `lookup_probe`: train the synthetic look-up probe (gui_jax/train/lookup_probe.py) and log its curve.

config.probe holds the fields of LookupProbeConfig except `seed`, which is config.seed. Writes results.json
({"config", "chance", "curve"}), probe_state.pkl (the resumable snapshot, every
`probe.checkpoint_seconds`; the same command resumes from it), metrics.jsonl + TensorBoard scalars (probe/loss, probe/train_acc,
probe/held_out_acc) and training_curves.png under the workdir.
"""
from __future__ import annotations

import json
import os

from gui_jax.config_check import RunError
from gui_jax.train.logger import MetricsLogger
from gui_jax.train.lookup_probe import LookupProbeConfig, run_probe


def probe_config(config) -> LookupProbeConfig:
    """LookupProbeConfig from config.probe (+ config.seed); a bad field is a one-line RunError."""
    fields = dict(config.probe.to_dict())
    for key in ("train_words", "held_out_words"):
        if key in fields:
            fields[key] = tuple(fields[key])
    fields["seed"] = int(config.seed)
    try:
        return LookupProbeConfig(**fields)
    except (TypeError, ValueError) as e:
        raise RunError(f"config.probe: {e}") from None


def run(config, workdir: str) -> None:
    cfg = probe_config(config)
    os.makedirs(workdir, exist_ok=True)
    logger = MetricsLogger(workdir)

    def write(point: dict) -> None:  # live: TensorBoard and metrics.jsonl follow the run
        keys = ("loss", "train_acc", "held_out_acc", "stage_held_out_acc", "held_out_stop_acc", "lines")
        logger.write(point["step"], {k: point[k] for k in keys if k in point}, prefix="probe")

    # resumable: rerunning the same command continues from the last snapshot (kill -9 included)
    result = run_probe(cfg, on_eval=write, state_path=os.path.join(workdir, "probe_state.pkl"))
    logger.plot()
    logger.close()
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    last = result["curve"][-1]
    print(f"look-up probe: held-out accuracy {last['held_out_acc']:.3f} (chance {result['chance']:.3f}) after "
          f"{last['step']} steps; results in {workdir}")
