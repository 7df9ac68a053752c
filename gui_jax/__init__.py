"""gui_jax: JAX/Flax research codebase for training mobile GUI agents with RL.

Importing gui_jax picks JAX's platform before jax initialises its backends: with libtpu installed (the
`tpu-aot` extra) but no TPU attached, jax would try the TPU first and print libtpu's warnings about worker
hostnames on every CPU run, so JAX_PLATFORMS is set to "cpu" then. A JAX_PLATFORMS the user set is kept,
and so is any setup with another accelerator plugin (GPU) installed.
"""
import glob
import importlib.util
import os

__version__ = "0.1.0"

TPU_ENV_VARS = ("COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE")  # set on TPU VMs / Colab TPU runtimes
TPU_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/[0-9]*")                 # TPU chips as the VM sees them


def tpu_present(environ=os.environ) -> bool:
    """Whether this machine has a TPU: a TPU runtime's environment variable or a TPU device file."""
    return any(environ.get(v) for v in TPU_ENV_VARS) or any(glob.glob(g) for g in TPU_DEVICE_GLOBS)


def default_jax_platform(environ=os.environ, has_libtpu: bool | None = None) -> str | None:
    """"cpu" where JAX would otherwise probe an absent TPU through libtpu; None = leave JAX to choose.
    has_libtpu: whether libtpu is installed (None: look it up)."""
    if environ.get("JAX_PLATFORMS") is not None or tpu_present(environ):
        return None
    if has_libtpu is None:
        has_libtpu = importlib.util.find_spec("libtpu") is not None
    if not has_libtpu:
        return None                     # no libtpu: nothing probes a TPU, nothing to quiet
    from importlib.metadata import entry_points
    if importlib.util.find_spec("jax_plugins") is not None or list(entry_points(group="jax_plugins")):
        return None                     # a GPU (or other) plugin: "cpu" would hide it
    return "cpu"


_platform = default_jax_platform()
if _platform is not None:
    os.environ["JAX_PLATFORMS"] = _platform
