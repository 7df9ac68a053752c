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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gui-jax/gui_jax/blob/main/notebooks/bring_your_own_checkpoint.ipynb)
#
# Load a Hugging Face Qwen2.5-VL directory (config.json + safetensors + tokenizer), run it as a gui_jax
# agent on PhoneSim, and export it back as a Hugging Face directory. For Qwen2.5-VL-7B choose a TPU
# runtime (Runtime → Change runtime type → TPU) and point CHECKPOINT at your copy of the weights; with
# no checkpoint given, this notebook makes a tiny random one so every cell runs anywhere.

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
from IPython.display import display  # noqa: E402

from gui_jax.jobs import load_config  # noqa: E402
from gui_jax.jobs.export import export_agent  # noqa: E402
from gui_jax.rl.agent import Agent  # noqa: E402

CHECKPOINT = os.environ.get("GUI_JAX_CHECKPOINT", "")  # e.g. /content/Qwen2.5-VL-7B-Instruct
if not CHECKPOINT:
    # stand-in: a tiny random agent exported as a Hugging Face directory
    CHECKPOINT = "runs/notebook_byo/tiny_hf"
    export_agent(Agent(load_config(recipe_path("quickstart")), seed=0), CHECKPOINT)
print(sorted(os.listdir(CHECKPOINT)))

# %% [markdown]
# ## Load it as an agent
# Screenshots + coordinates and the UI-S1 dialect are the paper recipes' prompt; the tiny stand-in
# reads the UI text and acts by element index like the quickstart.

# %%
config = load_config(recipe_path("evaluate"))
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
