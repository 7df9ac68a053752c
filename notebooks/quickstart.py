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
# # gui_jax quickstart: a tiny GUI agent on PhoneSim
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/gui-jax/gui_jax/blob/main/notebooks/quickstart.ipynb)
#
# Train the embedded tiny Qwen2.5-VL-architecture agent on PhoneSim (the built-in phone simulator):
# expert episodes → SFT → UI-S1 semi-online RL, then look at the learning curves and watch the agent
# work through an episode. Runs on a CPU runtime; on Colab a TPU runtime (Runtime → Change runtime
# type → TPU) is only needed for paper-scale models.

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

# %% [markdown]
# ## PhoneSim's apps
# Twelve apps with real state (settings, alarms, contacts, messages, ...), rendered like a phone.

# %%
from IPython.display import Image, Markdown, display  # noqa: E402

from gui_jax.envs.sim.gallery import gallery  # noqa: E402

display(gallery(width=135, cols=6))

# %% [markdown]
# ## Train the tiny agent
# The quickstart recipe (`configs/quickstart.py`); every field can be changed here as on the command line.

# %%
from gui_jax.jobs import load_config  # noqa: E402
from gui_jax.main import run_job  # noqa: E402

config = load_config(recipe_path("quickstart"))
if SMALL:
    config.data.num_train_episodes, config.data.num_test_episodes, config.data.rl_train_episodes = 12, 4, 0
    config.data.train_seed_range, config.data.test_seed_range = (0, 40), (1000, 1010)   # a split of ~500 tasks
    config.model.checkpoint, config.model.num_hidden_layers = "", 1  # the suite checks every cell runs, not what it learns
    config.sft.num_steps, config.sft.checkpoint_every, config.sft.warmup_steps = 10, 10, 2
    config.rl.iterations, config.rl.checkpoint_every = 2, 2
    config.eval.max_steps = 4
WORKDIR = "runs/notebook_quickstart"
run_job(config, WORKDIR)

# %% [markdown]
# ## Results and learning curves

# %%
display(Markdown(open(os.path.join(WORKDIR, "results.md")).read()))
display(Image(filename=os.path.join(WORKDIR, "training_curves.png")))

# %% [markdown]
# ## Watch the trained agent work through a held-out task

# %%
import numpy as np  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from gui_jax.core.dialects import ActionParseError, parse_response  # noqa: E402
from gui_jax.envs.sim import PhoneSim  # noqa: E402
from gui_jax.jobs.common import prepare  # noqa: E402
from gui_jax.jobs.common import load_stage_params, set_agent_params  # noqa: E402
from gui_jax.rl.agent import Agent  # noqa: E402
from gui_jax.rl.prompting import PromptConfig, build_messages  # noqa: E402


def episode_strip(agent, task, pcfg, resolution, max_steps):
    """Runs one greedy episode and returns (screens side by side, the responses, success)."""
    sim = PhoneSim(render=True, resolution=tuple(resolution), max_steps=max_steps, tree=True)
    obs, history, frames, texts, info = sim.reset(task), [], [], [], {}
    for t in range(max_steps):
        frames.append(np.asarray(obs.screenshot))
        text = agent.policy.generate([build_messages(task.goal, history, obs, pcfg)], temperature=0.0, seed=t)[0].text
        texts.append(text)
        history.append((obs, text))
        try:
            obs, done, info = sim.step(parse_response(text, pcfg.dialect)[1])
        except ActionParseError:
            done = t + 1 >= max_steps
        if done:
            frames.append(np.asarray(obs.screenshot))
            break
    return PILImage.fromarray(np.concatenate(frames, axis=1)), texts, bool(info.get("success", False))


agent = Agent(config, seed=config.seed)
ckpt = os.path.join(WORKDIR, "rl", "checkpoints")
set_agent_params(agent, load_stage_params(ckpt)[0], ckpt)
_, test_tasks, _, _ = prepare(config, WORKDIR)
pcfg = PromptConfig(**config.prompt.to_dict())
strip, texts, success = episode_strip(agent, test_tasks[0], pcfg, config.data.resolution, config.eval.max_steps)
print(f"goal: {test_tasks[0].goal}\nsuccess: {success}")
for i, t in enumerate(texts):
    print(f"step {i}: {t}")
display(strip)
