"""Train the tiny unified reward model on PhoneSim and record held-out step / outcome F1 by length bucket.

    python experiments/reward_model_phonesim.py WORKDIR [dotted.key=python_literal ...]

Runs the reward_model job (configs/reward_model.py with the overrides) in WORKDIR — resumable: re-running
continues from the RM's last checkpoint — then copies its results to
experiments/results/reward_model_phonesim.{json,md} with the overrides, wall time and load average.
"""
import ast
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    from gui_jax.jobs import load_config
    from gui_jax.jobs.common import open_workdir
    from gui_jax.jobs.reward_model import run
    workdir, overrides = argv[0], dict(kv.split("=", 1) for kv in argv[1:])
    config = load_config(os.path.join(HERE, "..", "configs", "reward_model.py"),
                         **{k: ast.literal_eval(v) for k, v in overrides.items()})
    t0, load0 = time.time(), os.getloadavg()
    open_workdir(config, workdir)
    run(config, workdir)
    with open(os.path.join(workdir, "results.json")) as f:
        res = json.load(f)
    res.update({"overrides": overrides, "wall_seconds": time.time() - t0, "loadavg_start": load0,
                "loadavg_end": os.getloadavg(), "cpu_count": os.cpu_count()})
    out = os.path.join(HERE, "results", "reward_model_phonesim")
    with open(out + ".json", "w") as f:
        json.dump(res, f, indent=1, default=float)
    shutil.copy(os.path.join(workdir, "results.md"), out + ".md")
    print(f"wrote {out}.json / .md")


if __name__ == "__main__":
    main(sys.argv[1:])
