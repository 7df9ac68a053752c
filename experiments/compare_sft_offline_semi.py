"""SFT vs offline RL vs semi-online RL (UI-S1 Table 3 in miniature) on PhoneSim.

Runs the quickstart pipeline with the offline-RL baseline switched on: both RL methods start
from the same SFT weights, use the same rollout budget (N samples per step / per episode) and
iterations, and are evaluated on the same held-out split (SOP, step metrics, online success).

    python experiments/compare_sft_offline_semi.py [--workdir runs/compare] [--config.rl.iterations=20 ...]
"""
import os
import sys

from absl import app, flags

from gui_jax import main as gmain

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    config_path = os.path.join(here, "..", "configs", "quickstart.py")
    argv = [sys.argv[0], f"--config={config_path}", "--config.offline_rl_baseline=True"]
    if not any(a.startswith("--workdir") for a in sys.argv[1:]):
        argv.append("--workdir=runs/compare_sft_offline_semi")
    app.run(gmain.main, argv=argv + sys.argv[1:])
