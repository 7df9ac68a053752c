"""Command-line entry point: `python -m gui_jax.main --config configs/<recipe>.py [--config.x=y]`.

Dispatches on `config.job` through a lazy registry (job name → "module:function"), so a job's
heavy imports load only when that job runs. Job functions have the signature `run(config, workdir)`.
Before any work: the flags and the config are validated (gui_jax/config_check.py; a bad value is
one line on stderr and exit code 2, without importing jax), and the workdir's config snapshot is
compared with this run's config (gui_jax/jobs/common.py `open_workdir`).

Help: `--help` lists the jobs, recipes and flags; `--config configs/<recipe>.py --help` adds every field
of that recipe, block by block, as `block.field = value  # meaning` (overrides applied; the meanings of
the declared blocks come from their declarations, gui_jax/train/config_blocks.py and
gui_jax/train/online/config.py). `--print_config` prints the same fields sorted, one a line, and exits.
(absl's own `--helpfull` still lists absl's flags.)
"""
from __future__ import annotations

import ast
import difflib
import importlib
import os
import sys
from pathlib import Path

from absl import app, flags, logging
from ml_collections import config_flags

from gui_jax import config_check
from gui_jax.config_check import (ConfigError, RunError, check_config, format_config, format_fields, rules_for,
                                  suggest)
from gui_jax.core.recipe_files import load_python_file
from gui_jax.host_malloc import configure_host_malloc
from gui_jax.jobs import JOBS

config_check.JOB_NAMES[:] = sorted(JOBS)  # what `job` may name (config_check sits below the registry)

_CONFIG = config_flags.DEFINE_config_file("config", None, "Path to an ml-collections config file (a recipe).",
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Output folder (default: runs/<job>).")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "When the workdir was made with other settings, discard "
                               "the outputs they invalidate (episodes, checkpoints, results) instead of stopping.")
_PRINT_CONFIG = flags.DEFINE_bool("print_config", False, "Print the resolved config, one field a line with its "
                                  "meaning, and exit.")
_MAIN_FLAGS = ("config", "workdir", "overwrite", "print_config")
_HELP_ARGS = ("--help", "-h", "--helpshort", "-help")
_FIELD_HELP = {"requested": False}  # --help with --config: main lists the recipe's fields after the usage


class UnknownJobError(KeyError):
    pass


class JobNotBuiltError(RuntimeError):
    """The job is registered but its module is not part of this build yet."""


# ------------------------------------------------------------------------------------------------ help

def installed_recipe_dir() -> Path | None:
    """configs/ as a wheel installs it (pyproject's data-files: <prefix or --target>/share/gui_jax/configs)."""
    from importlib import metadata
    try:
        files = metadata.distribution("gui_jax").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).replace("\\", "/").endswith("share/gui_jax/configs/quickstart.py"):
            return Path(f.locate()).resolve().parent
    return None


def recipe_dirs() -> list[Path]:
    """Where recipes are found: ./configs, the repository's configs/ (a checkout or an editable install),
    then the copy a wheel installs."""
    dirs = [Path.cwd() / "configs", Path(__file__).resolve().parents[1] / "configs", installed_recipe_dir()]
    out = []
    for d in dirs:
        if d is not None and d.is_dir() and d.resolve() not in [o.resolve() for o in out]:
            out.append(d)
    return out


def recipe_path(name: str) -> str:
    """The path of recipe `name` (configs/<name>.py) from the first of `recipe_dirs()` that has it."""
    for d in recipe_dirs():
        if (d / f"{name}.py").is_file():
            return str(d / f"{name}.py")
    where = ", ".join(map(str, recipe_dirs())) or "configs/"
    raise FileNotFoundError(f"no recipe {name!r}: no {name}.py in {where}")


def recipes() -> list[tuple[str, str]]:
    """(path, first docstring line) of every recipe in configs/ (read without running it)."""
    out = []
    for d in recipe_dirs():
        for p in sorted(d.glob("*.py")):
            if p.name.startswith("_"):
                continue
            try:
                doc = ast.get_docstring(ast.parse(p.read_text())) or ""
            except (OSError, SyntaxError):
                doc = ""
            rel = os.path.relpath(p) if not os.path.relpath(p).startswith("..") else str(p)
            out.append((rel, doc.strip().splitlines()[0] if doc.strip() else ""))
    return out


def usage_text() -> str:
    jobs = "\n".join(f"  {name:<18} {getattr(e, 'description', '')}" for name, e in sorted(JOBS.items()))
    recs = "\n".join(f"  {p:<28} {doc}" for p, doc in recipes()) or "  (no configs/ folder found)"
    return (f"usage: python -m gui_jax.main --config configs/<recipe>.py [--config.<field>=<value> ...] "
            f"[--workdir DIR] [--overwrite] [--print_config]\n\n"
            f"jobs (a recipe's `job` field picks one):\n{jobs}\n\nrecipes:\n{recs}\n\n"
            f"fields: `python -m gui_jax.main --config configs/quickstart.py --help` lists a recipe's "
            f"fields block by block, their values and meaning (--print_config: the same, sorted); override any "
            f"with --config.<field>=<value>, e.g. --config.sft.num_steps=50.\n")


def print_help() -> None:
    print(usage_text())
    print("flags:")
    for name in _MAIN_FLAGS:
        fl = flags.FLAGS[name]
        print(f"  --{name}: {fl.help}" + (f" (default: {fl.default!r})" if fl.default not in (None, False) else ""))


# ------------------------------------------------------------------------------------------------ errors

def _exit_error(message: str) -> None:
    line = " ".join(str(message).split())  # always one line
    print(f"error: {line}", file=sys.stderr)
    sys.exit(2)


def _config_arg(argv) -> str | None:
    for i, a in enumerate(argv):
        if a.startswith("--config="):
            return a.split("=", 1)[1]
        if a == "--config" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _overrides(argv) -> list[tuple[str, str]]:
    """(dotted path, raw value) of each --config.<path>[=value] argument."""
    out = []
    for i, a in enumerate(argv):
        if a.startswith("--config."):
            body = a[len("--config."):]
            if "=" in body:
                path, value = body.split("=", 1)
            else:
                path, value = body, (argv[i + 1] if i + 1 < len(argv) else "")
            out.append((path, value))
    return out


def stage_seeds_left(config, given: set[str]) -> list[tuple[str, int]]:
    """With `--config.seed=S` given: the nested `seed` fields (sft.seed, rl.seed, ...) not given on the command
    line whose value differs from S. They keep their values (recorded runs and experiment points pass the seed
    fields they vary), so main names them: a replicate of the whole run sets them too."""
    if "seed" not in given or "seed" not in config:
        return []
    from gui_jax.jobs.common import flatten_config
    return [(path, value) for path, value in flatten_config(config).items()
            if path.endswith(".seed") and path not in given and value != config.seed]


def _load_recipe(arg: str):
    path, *args = arg.split(":")
    return load_python_file(path).get_config(*args)


def _bad_override(argv) -> str | None:
    """The first --config.<path> that names no field, as a one-line message."""
    arg = _config_arg(argv)
    try:
        config = _load_recipe(arg)
    except Exception:  # noqa: BLE001 - the parse error itself is reported instead
        return None
    for path, _ in _overrides(argv):
        node, walked = config, []
        for part in path.split("."):
            if not hasattr(node, "keys"):
                return (f"--config.{path}: config.{'.'.join(walked)} is a value, not a block, so it has no "
                        f"field {part!r}")
            if part not in node:
                where = "config" + "".join(f".{w}" for w in walked)
                fields = sorted(node.keys())
                return (f"--config.{path}: {where} has no field {part!r}{suggest(part, fields) or ';'} "
                        f"fields: {', '.join(fields)}")
            node = node[part]
            walked.append(part)
    return None


def _bad_value(argv, flag_text: str) -> str:
    """`--config.a.b=v` with a value of the wrong type → what the field accepts."""
    arg = _config_arg(argv)
    path = flag_text.split("=", 1)[0].removeprefix("flag ").removeprefix("--config.").strip()
    raw = flag_text.split("=", 1)[1].split(":", 1)[0] if "=" in flag_text else ""
    try:
        config = _load_recipe(arg)
        rule = rules_for(config).get(path)
        node = config
        for part in path.split("."):
            node = node[part]
    except Exception:  # noqa: BLE001
        return flag_text
    expected = rule.check(object()) if rule is not None else None
    if expected is None:
        expected = {bool: "expected True or False", int: "expected an integer",
                    float: "expected a number", str: "expected a string"}.get(type(node), f"expected a "
                                                                                 f"{type(node).__name__}")
    return f"--config.{path}={raw}: {expected} (recipe value {node!r})"


def parse_flags(argv):
    """absl flag parsing with one-line errors (exit 2) and a --help that lists jobs and recipes."""
    arg = _config_arg(argv)
    if any(a in _HELP_ARGS for a in argv[1:]):
        if arg is None:
            print_help()
            sys.exit(0)
        _FIELD_HELP["requested"] = True  # load the recipe (and overrides) as usual; main prints its fields
        argv = [argv[0]] + [a for a in argv[1:] if a not in _HELP_ARGS]
    if arg is not None and not os.path.isfile(arg.split(":")[0]):
        _exit_error(f"--config={arg}: no such recipe file; recipes: {', '.join(p for p, _ in recipes())}")
    try:
        return flags.FLAGS(argv)
    except flags.UnrecognizedFlagError as e:
        name = getattr(e, "flagname", None) or str(e)
        _exit_error(f"unknown flag --{name}{suggest(name, _MAIN_FLAGS, '--') or ';'} flags: "
                    + ", ".join(f"--{f}" for f in _MAIN_FLAGS) + ", --config.<field>=<value>")
    except flags.IllegalFlagValueError as e:
        msg = str(e)
        if msg.startswith("flag --config=") or msg.startswith("flag --config "):
            arg = _config_arg(argv) or ""
            if not os.path.exists(arg.split(":")[0]):
                recs = ", ".join(p for p, _ in recipes())
                _exit_error(f"--config={arg}: no such recipe file; recipes: {recs}")
            last = [ln for ln in msg.strip().splitlines() if ln.strip()][-1]
            _exit_error(f"--config={arg}: could not load the recipe: {last.strip()}")
        if msg.startswith("flag --config."):
            _exit_error(_bad_value(argv, msg))
        _exit_error(msg)
    except flags.Error as e:
        _exit_error(str(e))
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        bad = _bad_override(argv)
        _exit_error(bad or f"could not apply the --config overrides: {type(e).__name__}: {e}")


# ------------------------------------------------------------------------------------------------ jobs

def resolve_job(name: str):
    """Returns the job function for `name`, with a clear error for unknown or unbuilt jobs."""
    if name not in JOBS:
        raise UnknownJobError(f"unknown job {name!r}{suggest(name, sorted(JOBS)) or ';'} known jobs: "
                              f"{', '.join(sorted(JOBS))}")
    target = JOBS[name].target if hasattr(JOBS[name], "target") else JOBS[name]
    module_name, fn_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise JobNotBuiltError(f"job {name!r} is registered ({target}) but not built yet") from None
        raise
    return getattr(module, fn_name)


XLA_CACHE_MAX_BYTES = 4 << 30


def default_compilation_cache() -> str | None:
    """Turns on JAX's persistent compilation cache at ~/.cache/gui_jax/xla ($XDG_CACHE_HOME honoured) unless
    JAX_COMPILATION_CACHE_DIR is already set (an empty value keeps it off). A resumed or repeated run loads its
    compiled programs instead of compiling them again: the quickstart's SFT evaluation, run twice beside other
    jobs, compiled 71 s, then 15 s (the programs under JAX's 1 s threshold are not kept); a pretraining restart
    compiles ~16 programs of 6-17 s on 2 CPU cores. Set in the environment, so jobs this one launches share it; returns the directory in use."""
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(base, "gui_jax", "xla")
        os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(XLA_CACHE_MAX_BYTES))  # LRU beyond it
    path = os.environ["JAX_COMPILATION_CACHE_DIR"] or None
    if "jax" in sys.modules:  # imported already (a recipe or a caller did): the variables were read at import
        import jax
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_compilation_cache_max_size", int(os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE",
                                                                                -1)))
    return path


def run_job(config, workdir: str | None = None, *, overwrite: bool = False) -> None:
    """Checks the workdir against the config (snapshot; stale outputs), turns on the compilation cache
    (`default_compilation_cache`) and the host allocator policy (gui_jax/host_malloc.py), then runs the job."""
    if "job" not in config:
        raise UnknownJobError(f"config has no 'job' field; known jobs: {', '.join(sorted(JOBS))}")
    if config.job not in JOBS:
        resolve_job(config.job)  # raises the unknown-job error before the workdir is touched
    workdir = workdir or os.path.join("runs", config.job)
    from gui_jax.jobs.common import open_workdir
    open_workdir(config, workdir, overwrite=overwrite)
    default_compilation_cache()
    configure_host_malloc()
    fn = resolve_job(config.job)
    logging.info("running job %s in %s", config.job, workdir)
    if "mesh" in config:  # multi-host: join the cluster before any JAX use (no-op for one process)
        from gui_jax.models.sharding import maybe_init_distributed
        maybe_init_distributed(config.mesh.get("distributed", "auto"))
    fn(config, workdir)


def main(argv):
    try:
        configure_host_malloc()   # before anything starts XLA's threads
    except ValueError as e:
        _exit_error(str(e))
    if len(argv) > 1:
        _exit_error(f"unexpected argument(s) {' '.join(argv[1:])!r}; fields are set with "
                    f"--config.<field>=<value> (no spaces around '=')")
    if not flags.FLAGS["verbosity"].present:
        # Library INFO logs (checkpoint managers, XLA backends) drown the progress bars.
        logging.set_verbosity(logging.WARNING)
    try:
        config = _CONFIG.value
        if config is not None:
            "job" in config  # noqa: B015 - a recipe that failed to load raises here
    except Exception as e:  # noqa: BLE001 - the recipe's own error, as one line
        last = [ln for ln in str(e).strip().splitlines() if ln.strip()] or [type(e).__name__]
        _exit_error(f"--config={_config_arg(sys.argv)}: could not load the recipe: {last[-1].strip()}")
    if config is None:
        _exit_error("--config is required, e.g. --config configs/quickstart.py; recipes: "
                    + ", ".join(p for p, _ in recipes()))
    if _FIELD_HELP["requested"]:
        print_help()
        print(f"\nfields of {_config_arg(sys.argv)} (set any with --config.<block>.<field>=<value>):")
        print(format_fields(config))
        return
    try:
        if "job" in config and config.job not in JOBS:
            raise UnknownJobError(f"unknown job {config.job!r}{suggest(config.job, sorted(JOBS)) or ';'} known jobs: "
                                  f"{', '.join(sorted(JOBS))}")
        left = stage_seeds_left(config, {path for path, _ in _overrides(sys.argv)})
        if left:
            print(f"note: --config.seed={config.seed} seeds the model and the split; "
                  + ", ".join(f"{p}={v}" for p, v in left) + " keep their values (a replicate of the whole run: "
                  + " ".join(f"--config.{p}={config.seed}" for p, _ in left) + ")", file=sys.stderr)
        if _PRINT_CONFIG.value:
            print(format_config(config))
            try:
                check_config(config)
            except ConfigError as e:
                print(f"note: as it stands this config would stop with: {e}", file=sys.stderr)
            return
        check_config(config)
        run_job(config, _WORKDIR.value, overwrite=_OVERWRITE.value)
    except UnknownJobError as e:
        _exit_error(e.args[0])
    except RunError as e:
        _exit_error(str(e))
    except JobNotBuiltError as e:
        print(f"note: {e}", file=sys.stderr)


if __name__ == "__main__":
    app.run(main, flags_parser=parse_flags)
