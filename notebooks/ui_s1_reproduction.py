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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gui-jax/gui_jax/blob/main/notebooks/ui_s1_reproduction.ipynb)
#
# A miniature of UI-S1's Table 3: the tiny agent is trained with SFT on expert episodes, then from the
# same SFT weights with (a) offline RL — single-step GRPO with the expert history — and (b) semi-online
# RL — multi-turn rollouts over the expert episodes with the Patch Module and discounted step + episode
# advantages. All three are evaluated on the same held-out tasks: SOP (the offline semi-online metric),
# step metrics with the expert history, and online success in PhoneSim with 95 % Wilson intervals.
# CPU runtime is enough; on Colab choose a TPU runtime only for paper-scale models.

# %%
# Install gui_jax when it is not installed yet (Colab). GUI_JAX_SOURCE is either a wheel built from the
# repository (`pip wheel . -w dist --no-deps`, then upload dist/gui_jax-*.whl to the runtime's files; an
# uploaded wheel is found without setting anything) or a git URL (https://github.com/<owner>/gui_jax.git).
# On a TPU runtime (Runtime → Change runtime type → TPU) jax is installed as jax[tpu].
import glob
import importlib.util
import os
import pathlib
import subprocess
import sys

GUI_JAX_SOURCE = os.environ.get("GUI_JAX_SOURCE", "")  # @param {type:"string"}


def on_tpu() -> bool:
    """A TPU runtime: its environment variables or the TPU chips' device files."""
    return (any(os.environ.get(v) for v in ("COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE"))
            or bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*")))


def gui_jax_requirement(source: str, tpu: bool) -> str:
    """The pip requirement for gui_jax from a wheel or a git URL (with the tpu-aot extra, jax[tpu], on a TPU)."""
    if not source:
        wheels = sorted(glob.glob("gui_jax-*.whl") + glob.glob("dist/gui_jax-*.whl"))
        if not wheels:
            raise RuntimeError("gui_jax is not installed: upload a wheel built from the repository (`pip wheel . "
                               "-w dist --no-deps`) next to this notebook, or set GUI_JAX_SOURCE to a git URL")
        source = wheels[-1]
    if source.endswith(".whl"):
        url = pathlib.Path(source).resolve().as_uri()
    else:
        url = source if source.startswith("git+") else "git+" + source
    return f"gui_jax{'[tpu-aot]' if tpu else ''} @ {url}"


if importlib.util.find_spec("gui_jax") is None:
    requirement = gui_jax_requirement(GUI_JAX_SOURCE, on_tpu())
    print("installing", requirement)
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", requirement])
    importlib.invalidate_caches()
import gui_jax  # noqa: E402

# %%
from gui_jax.main import recipe_path  # noqa: E402

SMALL = os.environ.get("GUI_JAX_SMALL") == "1"  # the test suite runs every notebook at small size
print("gui_jax", gui_jax.__version__, "from", os.path.dirname(gui_jax.__file__), "(small settings)" if SMALL else "")

# %%
from IPython.display import Image, Markdown, display  # noqa: E402

from gui_jax.jobs import load_config  # noqa: E402
from gui_jax.main import run_job  # noqa: E402

config = load_config(recipe_path("quickstart"))
config.offline_rl_baseline = True
if SMALL:
    config.data.num_train_episodes, config.data.num_test_episodes, config.data.rl_train_episodes = 12, 4, 0
    config.data.train_seed_range, config.data.test_seed_range = (0, 40), (1000, 1010)   # a split of ~500 tasks
    config.model.checkpoint, config.model.num_hidden_layers = "", 1  # the suite checks every cell runs, not what it learns
    config.sft.num_steps, config.sft.checkpoint_every, config.sft.warmup_steps = 10, 10, 2
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
