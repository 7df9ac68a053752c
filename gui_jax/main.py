"""Command-line entry point: `python -m gui_jax.main --config configs/<recipe>.py [--config.x=y]`.

Dispatches on `config.job` through a lazy registry (job name → "module:function"), so a job's
heavy imports load only when that job runs. Job functions have the signature `run(config, workdir)`.
"""
from __future__ import annotations

import importlib
import os
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from gui_jax.jobs import JOBS

_CONFIG = config_flags.DEFINE_config_file("config", None, "Path to an ml-collections config file.",
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder (default: runs/<job>).")


class UnknownJobError(KeyError):
    pass


class JobNotBuiltError(RuntimeError):
    """The job is registered but its module is not part of this build yet."""


def resolve_job(name: str):
    """Returns the job function for `name`, with a clear error for unknown or unbuilt jobs."""
    if name not in JOBS:
        raise UnknownJobError(f"unknown job {name!r}; known jobs: {', '.join(sorted(JOBS))}")
    target = JOBS[name].target if hasattr(JOBS[name], "target") else JOBS[name]
    module_name, fn_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise JobNotBuiltError(f"job {name!r} is registered ({target}) but not built yet") from None
        raise
    return getattr(module, fn_name)


def run_job(config, workdir: str | None = None) -> None:
    if "job" not in config:
        raise UnknownJobError(f"config has no 'job' field; known jobs: {', '.join(sorted(JOBS))}")
    fn = resolve_job(config.job)
    workdir = workdir or os.path.join("runs", config.job)
    os.makedirs(workdir, exist_ok=True)
    logging.info("running job %s in %s", config.job, workdir)
    fn(config, workdir)


def main(argv):
    del argv
    if not flags.FLAGS["verbosity"].present:
        # Library INFO logs (checkpoint managers, XLA backends) drown the progress bars.
        logging.set_verbosity(logging.WARNING)
    config = _CONFIG.value
    if config is None:
        raise app.UsageError("--config is required, e.g. --config configs/quickstart.py")
    try:
        run_job(config, _WORKDIR.value)
    except UnknownJobError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        sys.exit(2)
    except JobNotBuiltError as e:
        print(f"note: {e}", file=sys.stderr)


if __name__ == "__main__":
    app.run(main)
