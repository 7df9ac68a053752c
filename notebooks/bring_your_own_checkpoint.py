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
# # Bring your own checkpoint
#
# Load a Hugging Face Qwen2.5-VL directory (config.json + safetensors + tokenizer), run it as a gui_jax
# agent on PhoneSim, and export it back as a Hugging Face directory. For Qwen2.5-VL-7B choose a TPU
# runtime (Runtime → Change runtime type → TPU) and point CHECKPOINT at your copy of the weights; with
# no checkpoint given, this notebook makes a tiny random one so every cell runs anywhere.

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
from IPython.display import display  # noqa: E402

from gui_jax.jobs import load_config  # noqa: E402
from gui_jax.jobs.export import export_agent  # noqa: E402
from gui_jax.rl.agent import Agent  # noqa: E402

CHECKPOINT = os.environ.get("GUI_JAX_CHECKPOINT", "")  # e.g. /content/Qwen2.5-VL-7B-Instruct
if not CHECKPOINT:
    # stand-in: a tiny random agent exported as a Hugging Face directory
    CHECKPOINT = "runs/notebook_byo/tiny_hf"
    export_agent(Agent(load_config(os.path.join(ROOT, "configs", "quickstart.py")), seed=0), CHECKPOINT)
print(sorted(os.listdir(CHECKPOINT)))

# %% [markdown]
# ## Load it as an agent
# Screenshots + coordinates and the UI-S1 dialect are the paper recipes' prompt; the tiny stand-in
# reads the UI text and acts by element index like the quickstart.

# %%
config = load_config(os.path.join(ROOT, "configs", "evaluate.py"))
config.model.checkpoint = CHECKPOINT
agent = Agent(config, seed=0)
print(f"{agent.num_params() / 1e6:.2f}M params, vocabulary {agent.tokenizer.vocab_size}")

# %% [markdown]
# ## Run it on PhoneSim

# %%
import numpy as np  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from gui_jax.envs.sim import PhoneSim  # noqa: E402
from gui_jax.eval.online_success import evaluate_online  # noqa: E402
from gui_jax.rl.prompting import PromptConfig  # noqa: E402
from gui_jax.tasks import make_task  # noqa: E402

pcfg = PromptConfig(**config.prompt.to_dict())
tasks = [make_task(t, seed) for t in ("settings.wifi_on", "clock.alarm_toggle") for seed in range(2 if SMALL else 10)]
online = evaluate_online(agent.policy, tasks, pcfg, resolution=tuple(config.data.resolution), max_steps=4 if SMALL else 10)
print({k: round(v, 3) for k, v in online.items() if isinstance(v, float)})
sim = PhoneSim(render=True, resolution=tuple(config.data.resolution))
display(PILImage.fromarray(np.concatenate([np.asarray(sim.reset(t).screenshot) for t in tasks[:4]], axis=1)))

# %% [markdown]
# ## Export it back as a Hugging Face directory

# %%
files = export_agent(agent, "runs/notebook_byo/exported")
print(sorted(set(files)))
