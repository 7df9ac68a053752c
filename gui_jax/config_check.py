"""Validation of a job's config before any work starts, and the field meanings `--help` / `--print_config` show.

`check_config(config)` raises `ConfigError` with one line naming the field, the value and what is
accepted (with close-match suggestions for names). It imports nothing heavy (no jax or flax; numpy
and ml_collections only, which main loads anyway): template names are read from the task registry
only when a config names templates.

The blocks with default builders (`model`, `prompt`, `sft`, `rl`, `mesh`, `rm.data` in
gui_jax/train/config_blocks.py; `online`, `env` in gui_jax/train/online/config.py) are declared there
field by field (gui_jax/core/config_schema.py): their checks and docs are taken from those declarations.
The blocks below (`data`, `eval`, `reasoning`, `export`, the top level, generate_episodes) have no
default builder and keep their `Rule`s here. Name lists come from the import-light modules that own
them (gui_jax/rl/names.py, gui_jax/rewards/names.py, gui_jax/core/dialects.py, config_blocks);
SPLITS, DIFFICULTIES and PRESETS are copies that tests/test_cli_errors.py compares with their sources.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from gui_jax.core import config_schema as schema
from gui_jax.core.config_schema import Block, suggest, unknown  # noqa: F401 - suggest, unknown: used by main, jobs
from gui_jax.core.config_schema import ConfigError, RunError  # noqa: F401 - defined below config_check's layer
# stage checkpoint folders: defined below config_check's layer (config blocks check them too); used by jobs
from gui_jax.core.config_schema import checkpoint_dir_problem, checkpoint_steps, find_checkpoint_dirs  # noqa: F401
from gui_jax.train.config_blocks import BLOCKS as DEFAULT_BLOCKS
from gui_jax.train.config_blocks import hf_dir
from gui_jax.train.online.config import ENV, ONLINE, env_problem
# The name lists the checks use, re-exported under the names this module always had (one definition each).
from gui_jax.core.dialects import DIALECTS  # noqa: F401
from gui_jax.rewards.names import REWARD_PRESETS  # noqa: F401
from gui_jax.rl.names import (AGGREGATIONS, BATCH_BUCKETINGS, KL_KINDS, PATCH_STRATEGIES,  # noqa: F401
                              SEED_THOUGHTS, TARGETS, TOKENIZERS, OBSERVATION_MODES as OBSERVATIONS)
from gui_jax.train.config_blocks import DTYPES, PRESETS, SCHEDULES  # noqa: F401

SPLITS = ("instance", "template", "app")                           # gui_jax.tasks.splits.make_split
SIDES = ("train", "test")
DIFFICULTIES = ("easy", "medium", "hard")                          # envs/sim/templates/base.py


def template_names() -> list[str]:
    from gui_jax.tasks.registry import list_templates  # ~1 s (the simulator's apps); only when needed
    return list_templates()


# ---------------------------------------------------------------------------------------------
# Rules: each returns None (fine) or the problem text ("expected ...").

@dataclass(frozen=True)
class Rule:
    check: Callable[[Any], Optional[str]]
    doc: str
    costly: bool = False   # checked after the cheap rules (e.g. imports the task registry)


def _is_int(v) -> bool:
    return schema.is_int(v)


def from_field(f: schema.Field) -> Rule:
    return Rule(f.check, f.doc, f.costly)


def rules_of(block: Block) -> dict[str, Rule]:
    """field -> Rule of a declared block (every declared field, in the block or added by recipes)."""
    return {f.name: from_field(f) for f in block}


def integer(doc: str, lo: Optional[int] = None, hi: Optional[int] = None, optional: bool = False) -> Rule:
    return Rule(schema.integer(lo, hi, optional), doc)


def number(doc: str, lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False,
           hi_open: bool = False, optional: bool = False) -> Rule:
    return Rule(schema.number(lo, hi, lo_open=lo_open, hi_open=hi_open, optional=optional), doc)


def boolean(doc: str, optional: bool = False) -> Rule:
    return Rule(schema.boolean(optional), doc)


def text(doc: str) -> Rule:
    return Rule(schema.text(), doc)


def choice(doc: str, names: Sequence[str] | Callable[[], Sequence[str]]) -> Rule:
    return Rule(schema.choice(names), doc)


def name_list(doc: str, names: Sequence[str] | Callable[[], Sequence[str]], *, nonempty: bool = False,
              costly: bool = False) -> Rule:
    return Rule(schema.name_list(names, nonempty=nonempty), doc, costly)


def resolution(doc: str) -> Rule:
    def check(v):
        if (isinstance(v, (tuple, list)) and len(v) == 2 and all(_is_int(x) and x > 0 and x % 28 == 0 for x in v)):
            return None
        return "expected (width, height), two positive multiples of 28, e.g. (112, 252) or (1092, 2436)"
    return Rule(check, doc)


def seed_range(doc: str) -> Rule:
    def check(v):
        if isinstance(v, (tuple, list)) and len(v) == 2 and all(_is_int(x) for x in v) and v[0] < v[1]:
            return None
        return "expected (first, end) with first < end, e.g. (0, 40)"
    return Rule(check, doc)


def int_list(doc: str) -> Rule:
    def check(v):
        if isinstance(v, (tuple, list)) and v and all(_is_int(x) for x in v) and len(set(v)) == len(v):
            return None
        return "expected a non-empty tuple of distinct integers, e.g. (1, 2, 3)"
    return Rule(check, doc)


def hf_dir_rule(doc: str) -> Rule:
    return Rule(hf_dir, doc)


def checkpoint_rule(doc: str) -> Rule:
    return Rule(lambda v: None if v == "" else ("expected a path" if not isinstance(v, str)
                                                else checkpoint_dir_problem(v)), doc)


# ---------------------------------------------------------------------------------------------
# The schema: block name -> {field: Rule}. Fields not listed are not checked (blocks may grow).

DATA = {
    "split": choice("CMDP split regime: unseen instances, templates or apps", SPLITS),
    "train_seed_range": seed_range("instance seeds of the train side: range(first, end)"),
    "test_seed_range": seed_range("instance seeds of the held-out side: range(first, end)"),
    "difficulties": name_list("task difficulties kept", DIFFICULTIES, nonempty=True),
    "max_optimal_steps": integer("longest oracle solution kept (steps)", 1),
    "templates": name_list("templates kept; () = every template passing the filters", template_names,
                           costly=True),
    "num_train_episodes": integer("expert episodes for training", 1),
    "rl_train_episodes": integer("quickstart: train-split tasks RL draws from (0 = the SFT's episodes; more = "
                                 "those plus tasks SFT never saw)", 0),
    "rl_unseen_only": boolean("quickstart: RL draws only the pool's tasks SFT never saw (needs rl_train_episodes "
                              "above num_train_episodes)"),
    "train_screens_per_instance": integer("train episodes per instance, each with its own seed's screen", 1),
    "num_test_episodes": integer("held-out episodes (SOP) = online evaluation tasks", 1),
    "resolution": resolution("screenshot (width, height) in pixels"),
    "episode_workers": integer("processes generating expert episodes (default 1; the episodes are the same "
                               "whatever the count)", 1),
}
SAVE_TRAJECTORIES = 50  # eval.save_trajectories where a recipe does not set it (gui_jax/jobs/trajectories.py)
EVAL = {
    "step_metrics": boolean("step metrics (TM, GR, SR) with the expert history"),
    "online_trials": integer("online trials per task (> 1 adds pass@k)", 1),
    "online_temperature": number("temperature of the sampled online trials", 0.0),
    "max_steps": integer("online episode step limit", 1),
    "sample_batch_buckets": choice("sampler batch padding while evaluating ('' = model.sample_batch_buckets; full: "
                                   "one compiled program per prompt length for its length-sorted, mostly full "
                                   "calls)", ("",) + BATCH_BUCKETINGS),
    "checkpoint_dir": checkpoint_rule("a stage's checkpoints folder to evaluate, e.g. runs/quickstart/rl/checkpoints"),
    "untrained": boolean("evaluate without trained weights (random init or model.checkpoint as is)"),
    "save_trajectories": integer(f"evaluated episodes saved under <workdir>/trajectories for python -m gui_jax.view "
                                 f"(env_eval, online_rl; 0 = none; default {SAVE_TRAJECTORIES})", 0),
    "before_training": boolean("quickstart: evaluate the untrained model first (a table row of zeros for "
                               "the tiny default, ~3 min on 2 cores)"),
}
REASONING = {
    "rounds": integer("sample → verify → fine-tune rounds", 1),
    "samples_per_step": integer("thought samples per expert step and round", 1),
    "temperature": number("sampling temperature", 0.0),
    "seed": integer("sampling seed"),
    "seed_thoughts": choice("round 0's thoughts: '' = sampled from the policy; describe = PhoneSim's description "
                            "of each expert action (for a model that writes none yet)", SEED_THOUGHTS),
    "init_checkpoint": checkpoint_rule("the reasoning_sft job's start: a stage's checkpoints folder (e.g. "
                                       "runs/quickstart/sft/checkpoints; the weights replace model.checkpoint's)"),
}
TOP = {
    "job": choice("the job to run (see --help)", lambda: sorted(_jobs())),
    "seed": integer("model-init and split seed (stage seeds, e.g. sft.seed and rl.seed, are their own fields)"),
    "offline_rl_baseline": boolean("also train the offline-RL baseline from the SFT weights"),
    "semi_online_rl": boolean("train semi-online RL after SFT (False: only the offline-RL baseline, if on; "
                                "neither: SFT alone)"),
    "reasoning_sft": boolean("quickstart: MobileRL's reasoning SFT (the `reasoning` block) after SFT, before RL"),
}
GENERATE = {
    "split": DATA["split"],
    "side": choice("which side of the split", SIDES),
    "train_seeds": int_list("instance seeds of the train side"),
    "test_seeds": int_list("instance seeds of the test side"),
    "seed": integer("template-split search seed"),
    "num_episodes": integer("episodes to write (0 = every task of that side)", 0),
    "resolution": resolution("screenshot (width, height) in pixels"),
    "out_dir": text("output folder ('' = <workdir>/episodes/<split>_<side>)"),
    "progress": boolean("show a progress bar"),
    "episode_workers": DATA["episode_workers"],
}
EXPORT = {
    "checkpoint_dir": checkpoint_rule("a stage's checkpoints folder to export, e.g. runs/quickstart/rl/checkpoints"),
    "out_dir": text("output folder ('' = <workdir>/hf)"),
    "dtype": choice("storage dtype ('' = the params' own)", ("",) + DTYPES),
    "overwrite": boolean("replace an existing output folder"),
}
def _gates(v):
    if isinstance(v, (tuple, list)) and all(not schema.number(0.0, 1.0, lo_open=True)(x) for x in v) \
            and len(set(v)) == len(v):
        return None
    return "expected a tuple of distinct numbers in (0, 1], e.g. (1.0, 0.1, 0.01), or ()"


RM_EVAL = {
    "checkpoint_dir": checkpoint_rule("the reward model's checkpoints folder, e.g. runs/reward_model/rm/checkpoints "
                                      "('' = model.checkpoint as is)"),
    "history_gates": Rule(_gates, "with rm.model.history_min: the metrics at each of these history gates too, from "
                                  "one scoring pass (history_gates.md); () = none"),
}
RM_MODEL = {
    "scorer": choice("verdict: P(yes) of one label token after a judge prompt; policy_likelihood: the model as a "
                     "policy, P(candidate | the agent's prompt) (gui_jax/rewards/likelihood.py)",
                     ("verdict", "policy_likelihood")),
    "history_min": boolean("policy_likelihood: a record scores the lowest of its own P(candidate) and every earlier "
                           "step's P(step | its history): a step after a wrong one scores as low as that step (scoring only; the "
                           "training loss stays per record)"),
    "history_gate": number("history_min: an earlier step lowers a record's score only when its P(step | history) is "
                           "below this (1.0 = every earlier step; e.g. 0.01 = only confidently wrong steps)", 0.0, 1.0,
                           lo_open=True),
}
# The declared blocks by config path: field order, defaults, checks and docs from one declaration each.
DECLARED: dict[str, Block] = {**DEFAULT_BLOCKS, "reasoning.sft": DEFAULT_BLOCKS["sft"], "online": ONLINE, "env": ENV}
MODEL, PROMPT, SFT, RL, MESH = (rules_of(DEFAULT_BLOCKS[n]) for n in ("model", "prompt", "sft", "rl", "mesh"))
BLOCKS = {"export": EXPORT, "mesh": MESH, "data": DATA, "model": MODEL, "prompt": PROMPT, "sft": SFT, "rl": RL,
          "eval": EVAL, "rm_eval": RM_EVAL, "rm.model": RM_MODEL, "reasoning": REASONING, "reasoning.sft": SFT,
          "online": rules_of(ONLINE), "env": rules_of(ENV), "rm.data": rules_of(DEFAULT_BLOCKS["rm.data"]),
          "init": rules_of(DEFAULT_BLOCKS["init"])}


# The job names `job` may take; main fills it from the jobs registry before validating (this module sits
# below gui_jax.jobs, which imports its errors and checkpoint helpers, so it cannot import the registry).
JOB_NAMES: list[str] = []


def _jobs():
    return JOB_NAMES


def rules_for(config) -> dict[str, Rule]:
    """Dotted field path -> Rule for the fields of `config` that the schema knows."""
    top = GENERATE if config.get("job") == "generate_episodes" else TOP
    # `job` is checked against the registry main fills in; used on its own, main's unknown-job error applies
    out = {k: r for k, r in top.items() if k in config and (k != "job" or JOB_NAMES)}
    for block, rules in BLOCKS.items():
        node = config
        for part in block.split("."):
            node = node.get(part) if hasattr(node, "get") else None
            if node is None:
                break
        if node is None or not hasattr(node, "keys"):
            continue
        out.update({f"{block}.{k}": r for k, r in rules.items() if k in node})
    return out


def _get(config, path: str):
    node = config
    for part in path.split("."):
        node = node[part]
    return node


def _fail(path: str, value, problem: str):
    raise ConfigError(f"config.{path} = {value!r}: {problem}")


def check_config(config) -> None:
    """Raises ConfigError (one line) for the first bad field; cross-field checks after per-field ones."""
    if "job" not in config:
        raise ConfigError(f"config has no 'job' field; known jobs: {', '.join(sorted(_jobs()))}")
    rules = rules_for(config)
    for path, rule in sorted(rules.items(), key=lambda kv: kv[1].costly):
        value = _get(config, path)
        problem = rule.check(value)
        if problem:
            _fail(path, value, problem)
    _cross_checks(config)


def _cross_checks(config) -> None:
    d = config.get("data")
    if d is not None and "train_seed_range" in d and "test_seed_range" in d:
        (a, b), (c, e) = d.train_seed_range, d.test_seed_range
        if max(a, c) < min(b, e):
            _fail("data.test_seed_range", tuple(d.test_seed_range),
                  f"overlaps data.train_seed_range {tuple(d.train_seed_range)}; held-out seeds must be unseen")
    m = config.get("model")
    if m is not None and "min_pixels" in m and "max_pixels" in m and m.min_pixels > m.max_pixels:
        _fail("model.max_pixels", m.max_pixels, f"expected ≥ model.min_pixels ({m.min_pixels})")
    if m is not None and m.get("checkpoint"):
        _shape_overrides_match_checkpoint(m)
    p = config.get("prompt")
    if p is not None:
        _prompt_formats_match(config, m, p)
    if (p is not None and p.get("target") == "element" and p.get("observation") == "screenshot"
            and not p.get("set_of_mark", False)):
        _fail("prompt.target", p.target, "'element' needs the UI tree in the prompt: set prompt.observation "
              "to ui_text, xml or both, prompt.set_of_mark=True, or prompt.target to coordinate")
    rm = config.get("rm")
    rmm = rm.get("model") if rm is not None else None
    if rmm is not None and rmm.get("history_min", False) and rmm.get("scorer") != "policy_likelihood":
        _fail("rm.model.history_min", True, "scores earlier steps by the policy's likelihood: it needs "
              "rm.model.scorer=policy_likelihood")
    if rmm is not None and rmm.get("history_gate", 1.0) < 1.0 and not rmm.get("history_min", False):
        _fail("rm.model.history_gate", rmm.history_gate, "gates the prefix minimum: it needs rm.model.history_min=True")
    rme = config.get("rm_eval")
    if rme is not None and rme.get("history_gates") and not (rmm is not None and rmm.get("history_min", False)):
        _fail("rm_eval.history_gates", tuple(rme.history_gates), "sweeps the gate of the prefix minimum: it needs "
              "rm.model.scorer=policy_likelihood and rm.model.history_min=True")
    e = config.get("eval")
    if config.get("job") == "evaluate" and e is not None:
        has_ckpt = bool(e.get("checkpoint_dir")) or bool(m is not None and m.get("checkpoint"))
        if not has_ckpt and not e.get("untrained", False):
            raise ConfigError("config.eval.checkpoint_dir = '': evaluate needs trained weights: set "
                              "eval.checkpoint_dir (e.g. runs/quickstart/rl/checkpoints) or model.checkpoint, "
                              "or pass --config.eval.untrained=True to score the untrained model")
        if e.get("checkpoint_dir") and e.get("untrained", False):
            raise ConfigError("config.eval.untrained = True: contradicts eval.checkpoint_dir "
                              f"{e.checkpoint_dir!r}; set one of them")
    sft = config.get("sft")
    if (sft is not None and sft.get("schedule") == "cosine" and sft.get("num_steps", 0) > 0
            and sft.get("warmup_steps", 0) >= sft.num_steps):
        _fail("sft.warmup_steps", sft.warmup_steps, f"a cosine schedule decays after the warm-up: needs fewer "
              f"warm-up steps than sft.num_steps ({sft.num_steps})")
    r = config.get("rl")
    if r is not None and r.get("template_sampling") == "learnability" and r.get("revisit_uniform", 1.0) < 1.0:
        _fail("rl.template_sampling", r.template_sampling, f"and rl.revisit_uniform = {r.revisit_uniform} both "
              "choose the rollout tasks: use one of them")
    for block in ("sft", "rl", "reasoning"):
        b = config.get(block)
        if b is None or not b.get("packing", False):
            continue
        if not b.get("row_length"):
            _fail(f"{block}.row_length", b.get("row_length"), f"{block}.packing = True needs the tokens per "
                  "packed row (e.g. 512: at least the longest trained step)")
        if b.get("aggregation") == "seq_mean_token_mean":
            # a packed row holds several steps, so a per-row mean would weight steps by their packing
            _fail(f"{block}.aggregation", b.aggregation, f"seq_mean_token_mean is a mean per row and "
                  f"{block}.packing puts several steps in a row: use token_mean or step_token_mean")
    rl = config.get("rl")
    if rl is not None and rl.get("patch_strategy") == "off_policy" and not rl.get("patch_aux_checkpoint"):
        # otherwise the run fails at the RL stage, after SFT
        _fail("rl.patch_aux_checkpoint", rl.get("patch_aux_checkpoint"), "rl.patch_strategy = 'off_policy' takes "
              "its patch thoughts from an auxiliary model: set it to a Hugging Face Qwen2.5-VL folder")
    env = config.get("env")
    if env is not None and "backend" in env:
        bad = env_problem(env)
        if bad:
            _fail(f"env.{bad[0]}", env.get(bad[0]), bad[1])
    d = config.get("data")
    if d is not None and d.get("rl_unseen_only") and d.get("rl_train_episodes", 0) <= d.get("num_train_episodes", 0):
        # otherwise the run fails at the RL stage, after SFT
        _fail("data.rl_unseen_only", True, f"RL would draw no task: set data.rl_train_episodes above "
              f"data.num_train_episodes ({d.get('num_train_episodes')})")
    r = config.get("reasoning")
    if config.get("reasoning_sft") and r is not None:
        if r.get("init_checkpoint"):
            _fail("reasoning.init_checkpoint", r.init_checkpoint, "starts the reasoning_sft job; the quickstart's "
                  "reasoning stage starts from its SFT (or init.checkpoint_dir)")
        if m is not None and m.get("max_new_tokens", 0) < 48:
            _fail("model.max_new_tokens", m.max_new_tokens, "reasoning_sft = True writes a thought before each "
                  "action (responses up to ~40 tokens on PhoneSim's templates): set at least 48")


# model field -> where a checkpoint's config.json holds it (any of these paths, first found): what a checkpoint
# fixes and a preset override would change
_CHECKPOINT_FIXES = {"num_hidden_layers": (("text_config", "num_hidden_layers"),),
                     "intermediate_size": (("text_config", "intermediate_size"),),
                     "vision_depth": (("vision_config", "depth"),),
                     # transformers 5 layout first, then the older ones (as Qwen25VLConfig.from_hf_dict reads it)
                     "rope_theta": (("text_config", "rope_parameters", "rope_theta"), ("text_config", "rope_theta"),
                                    ("rope_theta",))}


def _json_at(d: dict, paths):
    for path in paths:
        v = d
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None:
            return v
    return None


def _shape_overrides_match_checkpoint(m) -> None:
    """A checkpoint fixes the model's shape and RoPE base: an override of the preset's depth, width or base that
    differs from it would be ignored, so it is an error (a matching one, as continued-pretraining commands carry,
    is fine). Reads config.json directly: validation runs before jax is imported."""
    import json
    import os

    from gui_jax.models.builtin import resolve_checkpoint
    path = os.path.join(resolve_checkpoint(m.checkpoint), "config.json")
    if not os.path.isfile(path):
        return  # hf_dir reports a folder without config.json
    with open(path) as f:
        hf = json.load(f)
    for field, paths in _CHECKPOINT_FIXES.items():
        want, have = m.get(field, 0), _json_at(hf, paths)
        if want and have is not None and want != have:
            _fail(f"model.{field}", want, f"model.checkpoint {m.checkpoint!r} has {paths[0][-1]} = {have:g}, and a "
                  f"checkpoint fixes the model's shape and RoPE base: drop the override, or set model.checkpoint='' "
                  f"for a random-init {m.get('preset', 'tiny')} preset with it")


def _prompt_formats_match(config, m, p) -> None:
    """Weights trained with another prompt format would have to unlearn how they write answers: a model.checkpoint
    (its gui_jax_export.json) or a stage's Orbax checkpoints a job starts from or scores (init / eval
    .checkpoint_dir: its run's config snapshot) in another format is an error naming the field to set."""
    from gui_jax.models.builtin import resolve_checkpoint
    from gui_jax.models.export_record import RECORD, exported_prompt_format, trained_prompt_format
    sources = []
    if m is not None and m.get("checkpoint"):
        sources.append((f"model.checkpoint {m.checkpoint!r}", RECORD,
                        exported_prompt_format(resolve_checkpoint(m.checkpoint))))
    for block in ("init", "eval"):
        folder = (config.get(block) or {}).get("checkpoint_dir", "")
        if folder:
            sources.append((f"{block}.checkpoint_dir {folder!r}", "its run's config.json",
                            trained_prompt_format(folder)))
    for what, where, recorded in sources:
        for field, want in recorded.items():
            if field in p and p[field] != want:
                _fail(f"prompt.{field}", p[field], f"{what} was trained with prompt.{field} = {want} ({where}): "
                      f"set --config.prompt.{field}={want}")


def field_docs(config) -> dict[str, str]:
    return {path: rule.doc for path, rule in rules_for(config).items()}


def format_config(config) -> str:
    """Every leaf as `path = value  # meaning` (meaning from the schema where known)."""
    docs = field_docs(config)
    lines = []

    def walk(node, prefix):
        for k in sorted(node.keys()):
            v = node[k]
            path = f"{prefix}{k}"
            if hasattr(v, "keys"):
                walk(v, path + ".")
            else:
                doc = docs.get(path, "")
                lines.append((f"{path} = {v!r}", doc))
    walk(config, "")
    width = min(max((len(a) for a, _ in lines), default=0), 56)
    return "\n".join(f"{a:<{width}}  # {b}" if b else a for a, b in lines)


def _leaves_in_order(node, path: str) -> tuple[list[str], list[str]]:
    """(leaf names, sub-block names) of `node`: a declared block's fields in declaration order, then
    any the recipe added (sorted); other blocks sorted."""
    keys = sorted(node.keys())
    if path in DECLARED:
        declared = DECLARED[path].names()
        keys = [k for k in declared if k in node] + [k for k in keys if k not in declared]
    leaves = [k for k in keys if not hasattr(node[k], "keys")]
    return leaves, [k for k in keys if hasattr(node[k], "keys")]


def format_fields(config) -> str:
    """The `--help` listing of a recipe: block by block, `path = value  # meaning` for every field (the
    meaning from the field's declaration or rule; none for fields nothing declares)."""
    docs = field_docs(config)
    sections: list[tuple[str, list[tuple[str, str]]]] = []

    def walk(node, path: str, title: str):
        leaves, subs = _leaves_in_order(node, path)
        prefix = f"{path}." if path else ""
        rows = [(f"{prefix}{k} = {node[k]!r}", docs.get(prefix + k, "")) for k in leaves]
        if rows:
            sections.append((title, rows))
        for k in subs:
            walk(node[k], prefix + k, prefix + k)
    walk(config, "", "top level")
    width = min(max((len(a) for _, rows in sections for a, _ in rows), default=0), 56)
    out = []
    for title, rows in sections:
        out.append(f"\n{title}:")
        out += [f"  {a:<{width}}  # {b}" if b else f"  {a}" for a, b in rows]
    return "\n".join(out).lstrip("\n")
