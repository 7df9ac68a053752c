"""SFT vs offline RL vs semi-online RL (UI-S1 Table 3 in miniature) on PhoneSim.

Runs the quickstart pipeline with the offline-RL baseline switched on: both RL methods start
from the same SFT weights, use the same rollout budget (N samples per step / per episode) and
iterations, and are evaluated on the same held-out split (SOP, step metrics, online success).
Finished stages in the workdir are reused (e.g. point it at a finished quickstart run).

    python experiments/compare_sft_offline_semi.py [--workdir runs/compare] [--config.rl.iterations=20 ...]
"""
import os
import subprocess
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    if not any(a.startswith("--workdir") for a in args):
        args.append("--workdir=runs/compare_sft_offline_semi")
    cmd = [sys.executable, "-m", "gui_jax.main", "--config", os.path.join(here, "..", "configs", "quickstart.py"),
           "--config.offline_rl_baseline=True", *args]
    sys.exit(subprocess.call(cmd))
