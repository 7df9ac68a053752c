"""Shared set-up for the jobs: the workdir snapshot, the task selection and the expert episodes.

Jobs are the only place that composes tasks/, data/, train/ and eval/.

Workdir snapshot (`open_workdir`, called by main before a job runs): `<workdir>/config.json` keeps,
per job, the resolved config, the package version and `git describe`. A training job re-run with a
config that changes what it trained (a field both configs have, with another value; run-control
knobs such as stop_after_steps aside) stops and names the differing fields, unless `overwrite`
(then the outputs the old settings made are discarded) or another workdir.

Episode caches (each `episodes/<side>` folder keyed by the settings that made it): gui_jax/jobs/episode_cache.py,
which builds on this module (imported here inside the functions that use it).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional, Sequence

from gui_jax.config_check import RunError

SNAPSHOT_FILE = "config.json"
CACHE_KEY_FILE = "cache_key.json"
# Leaf names that steer a run without changing its results (stop-and-resume knobs, progress bars).
RUN_CONTROL_FIELDS = ("stop_after_steps", "max_minutes", "progress", "checkpoints_kept", "episode_workers")
# Jobs whose outputs depend on the whole config (checkpoints, results): a changed field stops them.
# Values: the workdir entries the old settings made, discarded by --overwrite.
TRAINING_JOB_OUTPUTS = {
    "quickstart": ("sft", "reasoning", "rl", "offline_rl", "results.json", "results.md", "metrics.jsonl", "logs",
                   "training_curves.png"),
    "reasoning_sft": ("round_*", "init", "reasoning_sft.json", "metrics.jsonl", "logs", "training_curves.png"),
    "self_improve": ("round_*", "init_sft", "results.json", "results.md", "metrics.jsonl", "logs"),
}
# Jobs that may resume with another recipe (a curriculum jump, an annealed branch): the change is kept in
# <workdir>/RECIPE_CHANGES_FILE with the checkpoint it continues from, so the run's card can say what ran when.
RECIPE_LOG_JOBS = ("pretrain",)
RECIPE_CHANGES_FILE = "recipe_changes.jsonl"
# Which episode folders (sides) a job reads through `prepare`.
JOB_EPISODE_SIDES = {"quickstart": ("train", "test"), "evaluate": ("test",), "reasoning_sft": ("train",),
                     "base_eval": ("test",)}


class WorkdirMismatchError(RunError):
    """The workdir (or an episode cache in it) was made with other settings."""


class StaleEpisodesError(RunError):
    """An episode folder does not hold exactly the episodes its settings select."""


# ------------------------------------------------------------------------------------------ snapshot

def _jsonable(v):
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return v


def flatten_config(config) -> dict[str, Any]:
    """Dotted path -> JSON-able leaf value (tuples become lists)."""
    out = {}

    def walk(node, prefix):
        for k in sorted(node.keys()):
            v = node[k]
            if hasattr(v, "keys"):
                walk(v, f"{prefix}{k}.")
            else:
                out[f"{prefix}{k}"] = _jsonable(v)
    walk(config.to_dict() if hasattr(config, "to_dict") else config, "")
    return out


def version_info() -> dict:
    """The package version and, in a git checkout, `git describe --always --dirty`."""
    import gui_jax
    info = {"gui_jax_version": gui_jax.__version__, "git_describe": None}
    try:
        p = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], capture_output=True, text=True,
                           timeout=5, cwd=os.path.dirname(os.path.abspath(gui_jax.__file__)))
        if p.returncode == 0:
            info["git_describe"] = p.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def config_differences(old: dict, new: dict, *, only: Optional[Sequence[str]] = None,
                       both_only: bool = False) -> list[str]:
    """'path: old → new' for each differing leaf (run-control knobs ignored); `only`: path prefixes;
    `both_only`: skip fields one side lacks (added or removed by another package version)."""
    out = []
    for path in sorted((set(old) & set(new)) if both_only else (set(old) | set(new))):
        if path.rsplit(".", 1)[-1] in RUN_CONTROL_FIELDS:
            continue
        if only is not None and not any(path == p or path.startswith(p + ".") for p in only):
            continue
        a, b = old.get(path, "<absent>"), new.get(path, "<absent>")
        if a != b:
            out.append(f"{path}: {a!r} → {b!r}")
    return out


def read_snapshots(workdir: str) -> dict:
    path = os.path.join(workdir, SNAPSHOT_FILE)
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise WorkdirMismatchError(f"{path} is unreadable ({e}); use another --workdir or --overwrite") from None
    return data if isinstance(data, dict) else {}


def write_snapshot(config, workdir: str) -> dict:
    snaps = read_snapshots(workdir)
    snaps[config.job] = {**version_info(), "saved_at": datetime.datetime.now().isoformat(timespec="seconds"),
                         "config": flatten_config(config)}
    tmp = os.path.join(workdir, SNAPSHOT_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump(snaps, f, indent=1)
    os.replace(tmp, os.path.join(workdir, SNAPSHOT_FILE))
    return snaps[config.job]


def log_recipe_change(workdir: str, old: dict, new: dict) -> None:
    """Appends {"saved_at", "from_step", "changes": ['path: old → new'], "fields": {path: [old, new]}} to
    <workdir>/RECIPE_CHANGES_FILE when the flattened configs differ (run control aside); a field the old config
    lacks (added to the code since) is recorded with old value None: the run had the code's behaviour without it.
    from_step: the newest checkpoint the run resumes from (None: none yet)."""
    fields = {path: [old.get(path), new[path]] for path in sorted(new)
              if path.rsplit(".", 1)[-1] not in RUN_CONTROL_FIELDS and (path not in old or old[path] != new[path])}
    if not fields:
        return
    diffs = [f"{path}: {'(absent)' if a is None else repr(a)} → {b!r}"   # config_differences' spelling
             for path, (a, b) in fields.items()]
    ckpt = os.path.join(workdir, "checkpoints")
    steps = [int(d) for d in os.listdir(ckpt) if d.isdigit()] if os.path.isdir(ckpt) else []
    record = {"saved_at": datetime.datetime.now().isoformat(timespec="seconds"),
              "from_step": max(steps) if steps else None, "changes": diffs, "fields": fields}
    with open(os.path.join(workdir, RECIPE_CHANGES_FILE), "a") as f:
        f.write(json.dumps(record) + "\n")


def recipe_changes(workdir: str) -> list[dict]:
    """The records `log_recipe_change` wrote, oldest first."""
    path = os.path.join(workdir, RECIPE_CHANGES_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _short(items: list[str], n: int = 6) -> str:
    return "; ".join(items[:n]) + (f"; ... ({len(items)} fields)" if len(items) > n else "")


def open_workdir(config, workdir: str, *, overwrite: bool = False) -> None:
    """Creates the workdir, checks it against `config` (snapshot + episode caches), writes the snapshot.

    Raises WorkdirMismatchError naming the changed fields unless `overwrite`, which instead
    discards what the old settings made (a training job's outputs, mismatched episode folders).
    """
    os.makedirs(workdir, exist_ok=True)
    job = config.get("job", "")
    old = read_snapshots(workdir).get(job)
    if job in TRAINING_JOB_OUTPUTS and old is not None:
        # Fields only one side has come from a package update, not from this run's settings.
        diffs = config_differences(old.get("config", {}), flatten_config(config), both_only=True)
        if diffs and not overwrite:
            raise WorkdirMismatchError(
                f"{workdir} holds a {job} run made with other settings ({_short(diffs)}); "
                f"use another --workdir, or --overwrite to discard its outputs")
        if diffs:
            for pattern in TRAINING_JOB_OUTPUTS[job]:
                for p in Path(workdir).glob(pattern):
                    _remove(p)
    if job in RECIPE_LOG_JOBS and old is not None:
        log_recipe_change(workdir, old.get("config", {}), flatten_config(config))
    from gui_jax.jobs.episode_cache import check_episode_cache, episode_key, generate_key, generate_out_dir
    for side in JOB_EPISODE_SIDES.get(job, ()):
        check_episode_cache(os.path.join(workdir, "episodes", side), episode_key(config, side),
                            overwrite=overwrite)
    if job == "generate_episodes":
        check_episode_cache(generate_out_dir(config, workdir), generate_key(config), overwrite=overwrite)
    write_snapshot(config, workdir)


# ------------------------------------------------------------------------------------------ tasks

def select_tasks(tasks, dcfg, limit: int):
    """Tasks of the configured difficulties/templates/lengths, in a seeded round-robin over
    templates so every template is represented before any repeats."""
    keep = [t for t in tasks if t.difficulty in tuple(dcfg.difficulties)
            and t.optimal_steps <= dcfg.max_optimal_steps
            and (not dcfg.templates or t.template in tuple(dcfg.templates))]
    by_template = {}
    for t in sorted(keep, key=lambda t: (t.template, t.seed)):
        by_template.setdefault(t.template, []).append(t)
    out, k = [], 0
    while len(out) < limit and any(k < len(v) for v in by_template.values()):
        out += [v[k] for v in by_template.values() if k < len(v)]
        k += 1
    return out[:limit]


def without_held_out(tasks, held_out, what: str = "") -> list:
    """`tasks` less every task of an instance (template, goal, parameters) that one of `held_out` has: tasks drawn
    outside the split (a search's, few-shot demonstrations, env.tasks × env.seeds) must not train on a held-out
    task. A task without PhoneSim's instance fields (MiniWob++, AndroidWorld) is its own instance (its task id).
    With `what` (naming the tasks), a line says how many were left out."""
    from gui_jax.tasks.splits import instance_key

    def key(t):
        return instance_key(t) if hasattr(t, "params") and hasattr(t, "template") else ("task_id", t.task_id)
    keys = {key(t) for t in held_out}
    kept = [t for t in tasks if key(t) not in keys]
    if what and len(kept) < len(tasks):
        print(f"{what}: {len(tasks) - len(kept)} of {len(tasks)} tasks left out (held-out instances)", flush=True)
    return kept


def _no_tasks_message(side: str, tasks, d) -> str:
    have = sorted({t.template for t in tasks})
    wanted = [t for t in d.templates if t not in have]
    extra = (f"; templates not on the {side} side of the {d.split} split: {wanted[:6]}" if wanted else "")
    return (f"no {side} tasks left after filtering (data.difficulties={list(d.difficulties)}, "
            f"data.max_optimal_steps={d.max_optimal_steps}, data.templates={list(d.templates)}){extra}; "
            f"the {side} side has {len(tasks)} tasks from {len(have)} templates")


def episode_pixels(config) -> str:
    """'lazy' when the recipe's prompts never show a screenshot (prompt.observation ui_text or xml): the
    episodes' pixels then stay on disk; 'eager' otherwise."""
    prompt = config.get("prompt")
    return "lazy" if prompt is not None and prompt.get("observation") in ("ui_text", "xml") else "eager"


_SPLITS: dict = {}   # make_split's result per arguments: the quickstart's RL pool selects from the SFT's split


def prepare(config, workdir, sides: Sequence[str] = ("train", "test"), reuse_from: Optional[str] = None):
    """(train_tasks, test_tasks, train_eps, test_eps) of the configured split; a side not in `sides`
    gets its tasks but no episodes (an empty list). Pixels as `episode_pixels(config)`; generated over
    data.episode_workers processes. reuse_from: another workdir whose episodes/<side> caches hold some of the
    same tasks (linked instead of generated again)."""
    from gui_jax.jobs.episode_cache import episode_key, load_or_generate
    from gui_jax.tasks.splits import make_split, screen_variants
    d = config.data
    # An instance split is per template: built over the configured templates only, it selects the same
    # tasks (tests/jobs/test_prepare_split.py) in a fraction of the time (the full registry took ~1 min).
    # Template and app splits depend on every template, so they are built whole.
    only = tuple(d.templates) if d.split == "instance" and d.templates else None
    split_args = (d.split, tuple(d.train_seed_range), tuple(d.test_seed_range), int(config.seed), only)
    if split_args not in _SPLITS:
        _SPLITS.clear()     # one split kept: a job prepares one split, perhaps several times
        _SPLITS[split_args] = make_split(d.split, train_seeds=range(*d.train_seed_range),
                                         test_seeds=range(*d.test_seed_range), seed=config.seed, templates=only)
    split = _SPLITS[split_args]
    print(split.report())
    selected, episodes = {}, {}
    for side, pool, limit in (("train", split.train, d.num_train_episodes),
                              ("test", split.test, d.num_test_episodes)):
        selected[side] = select_tasks(pool, d, limit)
        if side == "train" and d.get("train_screens_per_instance", 1) > 1:
            selected[side] = screen_variants(selected[side], range(*d.train_seed_range),
                                             d.train_screens_per_instance)
        if side in sides and not selected[side]:
            raise RunError(_no_tasks_message(side, pool, d))
        episodes[side] = (load_or_generate(selected[side], os.path.join(workdir, "episodes", side), d.resolution,
                                           key=episode_key(config, side), pixels=episode_pixels(config),
                                           workers=int(d.get("episode_workers", 1)),
                                           reuse=reuse_from and os.path.join(reuse_from, "episodes", side))
                           if side in sides else [])
    return selected["train"], selected["test"], episodes["train"], episodes["test"]


def backend_or_split_tasks(config, split_tasks: Sequence, seeds: Optional[Sequence[int]] = None) -> list:
    """The episode tasks of a job that runs them on `config.env.backend`: the backend's own list (env.tasks ×
    `seeds`, default env.seeds; android, androidworld, miniwob, or phonesim/remote with env.tasks), else the
    split's `split_tasks` (no env block, or phonesim / remote without env.tasks)."""
    from gui_jax.envs.factory import backend_tasks
    env = config.get("env")
    own = backend_tasks(env, seeds) if env is not None else None
    return list(split_tasks) if own is None else own


def backend_name(config) -> str:
    """What the job's episodes run on, for results: 'PhoneSim' or the env backend's name."""
    env = config.get("env")
    backend = env.get("backend", "phonesim") if env is not None else "phonesim"
    return "PhoneSim" if backend == "phonesim" else backend


def check_reachable(config) -> None:
    """Before any work: the env block's devices / servers answer (one-line RunError naming the field)."""
    from gui_jax.envs.factory import check_reachable as reachable
    if config.get("env") is not None:
        reachable(config.env)


# ------------------------------------------------------------------------------------------ stage checkpoints

def load_stage_params(checkpoint_dir: str, *, field: str = "eval.checkpoint_dir", step: Optional[int] = None):
    """(params, step) of the latest checkpoint (or of `step`) in a training stage's checkpoints folder; the
    folder must exist and hold that step (checked first: a read-only path is never created)."""
    from gui_jax.config_check import checkpoint_dir_problem, checkpoint_steps
    problem = checkpoint_dir_problem(checkpoint_dir)
    if problem:
        raise RunError(f"config.{field} = {checkpoint_dir!r}: {problem}")
    import orbax.checkpoint as ocp
    steps = checkpoint_steps(checkpoint_dir)
    if step is not None and step not in steps:
        raise RunError(f"config.{field} = {checkpoint_dir!r}: no step {step} there (it holds {steps})")
    step = steps[-1] if step is None else step
    mgr = ocp.CheckpointManager(os.path.abspath(checkpoint_dir),
                                options=ocp.CheckpointManagerOptions(create=False, read_only=True))
    try:
        tree = mgr.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
    finally:
        mgr.close()
    return tree["state"]["params"], step


def stage_run_snapshots(checkpoint_dir: str) -> tuple[str, dict]:
    """(workdir, its config.json snapshots) of the run that wrote `<workdir>/<stage>/checkpoints`; no
    snapshots when it kept none or the file is unreadable."""
    workdir = os.path.dirname(os.path.dirname(os.path.abspath(checkpoint_dir)))
    try:
        return workdir, read_snapshots(workdir)
    except WorkdirMismatchError:
        return workdir, {}


def recorded_vocabulary(checkpoint_dir: str) -> Optional[str]:
    """The vocabulary the latest step in a stage's checkpoints folder records (train/checkpoint.py
    checkpoint_metadata), or None (older checkpoints, or an agent reading a HF directory's tokenizer)."""
    from gui_jax.config_check import checkpoint_steps
    steps = checkpoint_steps(checkpoint_dir) if os.path.isdir(checkpoint_dir) else []
    if not steps:
        return None
    import orbax.checkpoint as ocp
    mgr = ocp.CheckpointManager(os.path.abspath(checkpoint_dir),
                                options=ocp.CheckpointManagerOptions(create=False, read_only=True))
    try:
        extra = mgr.restore(steps[-1], args=ocp.args.Composite(extra=ocp.args.JsonRestore()))["extra"]
    except (KeyError, FileNotFoundError, ValueError):
        return None  # a step without the side-state item
    finally:
        mgr.close()
    return (extra or {}).get("vocabulary")


def trained_vocabulary(checkpoint_dir: str) -> Optional[str]:
    """The vocabulary the checkpoints in `<workdir>/<stage>/checkpoints` were trained with: as the latest
    step records it, else as the run's config.json configured it; None when unknown (neither says, a
    HF-checkpoint vocabulary, or jobs that disagree)."""
    from gui_jax.rl.agent import vocabulary_name
    recorded = recorded_vocabulary(checkpoint_dir)
    if recorded:
        return recorded
    _, snapshots = stage_run_snapshots(checkpoint_dir)
    names = {vocabulary_name(s["config"].get("model.tokenizer", "auto"), s["config"].get("model.preset", "tiny"),
                             s["config"].get("model.checkpoint", ""))
             for s in snapshots.values() if isinstance(s, dict) and isinstance(s.get("config"), dict)}
    return names.pop() if len(names) == 1 else None


def start_training_overlap(checkpoint_dir: str, test_tasks: Sequence) -> Optional[dict]:
    """How many of `test_tasks` share an instance (template, goal, parameters) with the training side of
    the split of the run that wrote `<workdir>/<stage>/checkpoints`, as its config.json records it: those
    tasks are held out from this job's training but not from the start's. None when no snapshot says."""
    from gui_jax.tasks.splits import instance_key, make_split
    workdir, snapshots = stage_run_snapshots(checkpoint_dir)
    seen, runs = set(), []
    for job, snap in sorted(snapshots.items()):
        cfg = snap.get("config") if isinstance(snap, dict) else None
        if not isinstance(cfg, dict) or "data.train_seed_range" not in cfg or "data.split" not in cfg:
            continue
        templates = cfg.get("data.templates") or None
        split = make_split(cfg["data.split"], train_seeds=range(*cfg["data.train_seed_range"]),
                           test_seeds=range(*cfg["data.test_seed_range"]), seed=int(cfg.get("seed", 0)),
                           templates=tuple(templates) if cfg["data.split"] == "instance" and templates else None)
        seen |= {instance_key(t) for t in split.train}
        runs.append(job)
    if not runs:
        return None
    shared = sorted(t.task_id for t in test_tasks if instance_key(t) in seen)
    return {"start_run": workdir, "jobs": runs, "test_tasks": len(test_tasks), "shared": len(shared),
            "shared_task_ids": shared}


def overlap_line(overlap, what: str = "the start checkpoint") -> str:
    """One sentence on start_training_overlap's answer for `what` (a checkpoint this job did not train)."""
    if overlap is None:
        return (f"{what}'s run recorded no data split (no config.json): whether the held-out tasks "
                "were in its training data is unknown")
    return (f"{overlap['shared']} of {overlap['test_tasks']} held-out tasks share an instance with the training "
            f"split of {what}'s run ({overlap['start_run']})")


def report_checkpoint_overlap(checkpoint_dir: str, test_tasks, what: str = "the start checkpoint") -> Optional[dict]:
    """start_training_overlap, printed (a warning when some held-out tasks were in that run's training split)."""
    overlap = start_training_overlap(checkpoint_dir, test_tasks)
    line = overlap_line(overlap, what)
    print(("warning: " + line + ": they are held out from this job's split, not from that run's training")
          if overlap and overlap["shared"] else line)
    return overlap


def checkpoint_overlaps(test_tasks, **checkpoint_dirs: str) -> dict:
    """{"held_out_vs_<name>": start_training_overlap} for each non-empty checkpoint folder (a policy or RM
    trained by another run, whose split may hold some of these held-out tasks), each reported as it is read."""
    return {f"held_out_vs_{name}": report_checkpoint_overlap(d, test_tasks, f"the {name.replace('_', ' ')} checkpoint")
            for name, d in checkpoint_dirs.items() if d}


def overlap_lines(out: dict) -> str:
    """overlap_line for each "held_out_vs_<name>" entry of a results dict, one per line."""
    return "".join(overlap_line(v, f"the {k.removeprefix('held_out_vs_').replace('_', ' ')} checkpoint") + "\n"
                   for k, v in out.items() if k.startswith("held_out_vs_"))


def starting_point(agent, config, workdir: str, train_eps, pcfg, logger) -> str:
    """`init.checkpoint_dir` (restored; returned) or an SFT on `train_eps` under <workdir>/sft (returns '')."""
    ckpt = config.init.get("checkpoint_dir", "") if config.get("init") else ""
    if ckpt:
        params, _ = load_stage_params(ckpt, field="init.checkpoint_dir")
        set_agent_params(agent, params, ckpt)
        return ckpt
    from gui_jax.train.sft import train_sft
    train_sft(agent, train_eps, pcfg, config.sft, workdir=os.path.join(workdir, "sft"), logger=logger)
    return ""


def set_agent_params(agent, restored, where: str) -> None:
    """Puts restored params into the agent, checking they fit the model (count and shapes) and, where the
    checkpoint's run recorded it, that the agent reads text with the same vocabulary."""
    import jax
    trained, current = trained_vocabulary(where), getattr(agent, "vocabulary", None)
    if trained and current and trained != current:
        raise RunError(f"the checkpoint in {where} was trained with vocabulary {trained!r} but model.tokenizer "
                       f"gives {current!r}: token ids would mean other words; set "
                       f"--config.model.tokenizer={trained} (the checkpoint or its run's config.json records it)")
    leaves, want = jax.tree.leaves(restored), jax.tree.leaves(agent.params)
    if len(leaves) != len(want) or any(a.shape != b.shape for a, b in zip(leaves, want)):
        bad = next((f"{a.shape} vs {b.shape}" for a, b in zip(leaves, want) if a.shape != b.shape), "")
        raise RunError(f"the checkpoint in {where} does not match the configured model "
                       f"({len(leaves)} vs {len(want)} arrays{'; first shape mismatch ' + bad if bad else ''}); "
                       f"set the model.* fields the checkpoint was trained with")
    agent.set_params(jax.tree.unflatten(jax.tree.structure(agent.params),
                                        [jax.numpy.asarray(a).astype(b.dtype) for a, b in zip(leaves, want)]))


def require_weights(config, job: str) -> None:
    """An evaluation job scores trained weights: model.checkpoint (a HF directory) or eval.checkpoint_dir (a
    stage's Orbax checkpoints), unless eval.untrained=True says a random model is meant."""
    if not (config.model.get("checkpoint") or config.eval.get("checkpoint_dir") or config.eval.get("untrained")):
        raise RunError(f"{job} needs model.checkpoint (a Hugging Face directory) or eval.checkpoint_dir (a "
                       "stage's Orbax checkpoints); set eval.untrained=True to score a random model")


def eval_agent(config):
    """(agent, prompt config) of an evaluation job: the configured model, with eval.checkpoint_dir's params."""
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.prompting import PromptConfig
    agent = Agent(config, seed=config.seed)
    if config.eval.get("checkpoint_dir"):
        set_agent_params(agent, load_stage_params(config.eval.checkpoint_dir)[0], config.eval.checkpoint_dir)
    return agent, PromptConfig(**config.prompt.to_dict())
