# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # UI-S1 on PhoneSim: SFT vs offline RL vs semi-online RL
#
# A miniature of UI-S1's Table 3: the tiny agent is trained with SFT on expert episodes, then from the
# same SFT weights with (a) offline RL — single-step GRPO with the expert history — and (b) semi-online
# RL — multi-turn rollouts over the expert episodes with the Patch Module and discounted step + episode
# advantages. All three are evaluated on the same held-out tasks: SOP (the offline semi-online metric),
# step metrics with the expert history, and online success in PhoneSim with 95 % Wilson intervals.
# CPU runtime is enough; on Colab choose a TPU runtime only for paper-scale models.

# %%
# Install gui_jax from its repository when it is not installed yet (Colab), and find the configs/.
import importlib.util
import os
import subprocess
import sys

REPO_URL = os.environ.get("GUI_JAX_REPO", "https://github.com/gui-jax/gui_jax.git")
if importlib.util.find_spec("gui_jax") is None:
    subprocess.check_call(["git", "clone", "-q", REPO_URL, "gui_jax_repo"])
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-e", "gui_jax_repo"])
    sys.path.insert(0, os.path.abspath("gui_jax_repo"))
import gui_jax  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(gui_jax.__file__)))
SMALL = os.environ.get("GUI_JAX_SMALL") == "1"  # the test suite runs every notebook at small size
print("gui_jax", gui_jax.__version__, "from", ROOT, "(small settings)" if SMALL else "")

# %%
from IPython.display import Image, Markdown, display  # noqa: E402

from gui_jax.jobs import load_config  # noqa: E402
from gui_jax.main import run_job  # noqa: E402

config = load_config(os.path.join(ROOT, "configs", "quickstart.py"))
config.offline_rl_baseline = True
if SMALL:
    config.data.num_train_episodes, config.data.num_test_episodes = 12, 4
    config.model.num_hidden_layers = 1      # the suite checks that every cell runs, not what it learns
    config.sft.num_steps, config.sft.checkpoint_every = 10, 10
    config.rl.iterations, config.rl.checkpoint_every = 2, 2
    config.eval.max_steps = 4
WORKDIR = "runs/notebook_ui_s1"
run_job(config, WORKDIR)

# %% [markdown]
# ## The table

# %%
display(Markdown(open(os.path.join(WORKDIR, "results.md")).read()))

# %%
import json  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

results = json.load(open(os.path.join(WORKDIR, "results.json")))
stages = [s for s in ("sft", "offline_rl", "semi_online_rl") if s in results]
metrics = ["SOP_Score", "GR", "online_SR"]
fig, ax = plt.subplots(figsize=(7, 3.5))
for i, m in enumerate(metrics):
    ax.bar([j + 0.25 * i for j in range(len(stages))], [results[s].get(m, 0.0) for s in stages], width=0.25, label=m)
ax.set_xticks([j + 0.25 for j in range(len(stages))], stages)
ax.set_ylabel("held-out score")
ax.legend()
ax.set_title("SFT vs offline RL vs semi-online RL (same SFT start, same rollout budget)")
fig.tight_layout()
fig.savefig(os.path.join(WORKDIR, "comparison.png"), dpi=100)
plt.close(fig)
display(Image(filename=os.path.join(WORKDIR, "comparison.png")))
