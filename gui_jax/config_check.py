"""Validation of a job's config before any work starts, and the field meanings `--print_config` shows.

`check_config(config)` raises `ConfigError` with one line naming the field, the value and what is
accepted (with close-match suggestions for names). It imports nothing heavy (no jax, flax or
numpy): template names are read from the task registry only when a config names templates.

The name lists below mirror constants that live in modules too heavy to import here (they pull in
jax); tests/test_cli_errors.py checks that each list equals its source.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from gui_jax.models.builtin import is_builtin, resolve_checkpoint

SPLITS = ("instance", "template", "app")                           # gui_jax.tasks.splits.make_split
SIDES = ("train", "test")
DIFFICULTIES = ("easy", "medium", "hard")                          # envs/sim/templates/base.py
PRESETS = ("tiny", "3b", "7b", "32b", "72b")                       # models/qwen2_5_vl/config.py
DIALECTS = ("ui_s1", "uitars", "mobilerl", "ui_genie")             # core/dialects.py
TOKENIZERS = ("auto", "tiny", "tiny_phonesim", "tiny_phonesim_num", "qwen25")  # rl/agent.py load_tokenizer (or a path)
OBSERVATIONS = ("screenshot", "ui_text", "both")                   # rl/prompting.py OBSERVATION_MODES
TARGETS = ("coordinate", "element", "text")                          # rl/prompting.py PromptConfig.target
PATCH_STRATEGIES = ("thought_free", "off_policy", "on_policy")     # rl/semi_online.py
AGGREGATIONS = ("token_mean", "step_token_mean", "seq_mean_token_mean")  # rl/losses.py
KL_KINDS = ("kl", "mse", "low_var_kl")                             # rl/losses.py
REWARD_PRESETS = ("paper", "code")                                 # rewards/rules.py
SCHEDULES = ("constant", "cosine")                                 # train/state.py make_optimizer


class RunError(ValueError):
    """A run that cannot go on as configured (zero samples, a workdir made with other settings);
    main prints the message as one line and exits with code 2."""


class ConfigError(RunError):
    """A bad config value; one line naming the field, the value and what is accepted."""


def template_names() -> list[str]:
    from gui_jax.tasks.registry import list_templates  # ~1 s (the simulator's apps); only when needed
    return list_templates()


def suggest(value: str, names: Sequence[str], prefix: str = "") -> str:
    """"; did you mean 'x'?" for the close matches of `value` among `names` ("" if none)."""
    close = difflib.get_close_matches(str(value), list(names), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(prefix + c) for c in close)}?" if close else ""


def unknown(kind: str, value, names: Sequence[str]) -> str:
    hint = suggest(value, names) if isinstance(value, str) else ""
    return f"unknown {kind}{hint or ';'} accepted: {_accepted(names)}"


def _accepted(names: Sequence[str], limit: int = 12) -> str:
    names = list(names)
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# ---------------------------------------------------------------------------------------------
# Rules: each returns None (fine) or the problem text ("expected ...").

@dataclass(frozen=True)
class Rule:
    check: Callable[[Any], Optional[str]]
    doc: str
    costly: bool = False   # checked after the cheap rules (e.g. imports the task registry)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def integer(doc: str, lo: Optional[int] = None, hi: Optional[int] = None, optional: bool = False) -> Rule:
    def check(v):
        if v is None and optional:
            return None
        if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = (f" ≥ {lo}" if hi is None else f" in [{lo}, {hi}]") if lo is not None else \
                  (f" ≤ {hi}" if hi is not None else "")
            return f"expected an integer{rng}" + (" or None" if optional else "")
        return None
    return Rule(check, doc)


def number(doc: str, lo: Optional[float] = None, hi: Optional[float] = None, *, lo_open: bool = False,
           hi_open: bool = False, optional: bool = False) -> Rule:
    def check(v):
        if v is None and optional:
            return None
        bad = not isinstance(v, (int, float)) or isinstance(v, bool) or v != v
        if not bad and lo is not None:
            bad = v <= lo if lo_open else v < lo
        if not bad and hi is not None:
            bad = v >= hi if hi_open else v > hi
        if bad:
            parts = []
            if lo is not None:
                parts.append(f"{'>' if lo_open else '≥'} {lo:g}")
            if hi is not None:
                parts.append(f"{'<' if hi_open else '≤'} {hi:g}")
            return "expected a number" + (f" {' and '.join(parts)}" if parts else "") + \
                (" or None" if optional else "")
        return None
    return Rule(check, doc)


def boolean(doc: str, optional: bool = False) -> Rule:
    if optional:
        return Rule(lambda v: None if v is None or isinstance(v, bool) else "expected True, False or None", doc)
    return Rule(lambda v: None if isinstance(v, bool) else "expected True or False", doc)


def text(doc: str) -> Rule:
    return Rule(lambda v: None if isinstance(v, str) else "expected a string", doc)


def choice(doc: str, names: Sequence[str] | Callable[[], Sequence[str]]) -> Rule:
    def check(v):
        known = names() if callable(names) else names
        if isinstance(v, str) and v in known:
            return None
        return unknown("name", v, known)
    return Rule(check, doc)


def name_list(doc: str, names: Sequence[str] | Callable[[], Sequence[str]], *, nonempty: bool = False,
              costly: bool = False) -> Rule:
    def check(v):
        if isinstance(v, str) or not isinstance(v, (tuple, list)):
            return f"expected a tuple of names, e.g. ('{(names() if callable(names) else names)[0]}',)"
        if nonempty and not v:
            return "expected at least one name"
        if not v:
            return None
        known = names() if callable(names) else names
        for item in v:
            if item not in known:
                return unknown(f"name {item!r}", item, known)
        if len(set(v)) != len(v):
            return "expected each name once"
        return None
    return Rule(check, doc, costly)


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


def tokenizer_rule(doc: str) -> Rule:
    def check(v):
        if isinstance(v, str) and (v in TOKENIZERS or os.path.isfile(v)):
            return None
        return unknown("tokenizer", v, TOKENIZERS) + " or a tokenizer.json / SentencePiece .model path"
    return Rule(check, doc)


def hf_dir_rule(doc: str) -> Rule:
    def check(v):
        if v == "":
            return None
        if not isinstance(v, str):
            return "expected a directory path or ''"
        if is_builtin(v):
            try:
                resolve_checkpoint(v)
            except ValueError as e:
                return str(e).split(": ", 1)[1]
            return None
        if not os.path.isdir(v):
            return "no such directory; expected a Hugging Face model folder (config.json + *.safetensors) or ''"
        if not os.path.isfile(os.path.join(v, "config.json")):
            return "not a Hugging Face model folder (no config.json)"
        return None
    return Rule(check, doc)


# ---------------------------------------------------------------------------------------------
# Stage checkpoint folders (an Orbax CheckpointManager directory holds one integer-named folder per step).

def checkpoint_steps(directory: str) -> list[int]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit() and os.path.isdir(os.path.join(directory, n)))


def find_checkpoint_dirs(root: str, depth: int = 3) -> list[str]:
    """Folders under `root` (itself included, up to `depth` levels) that hold checkpoint steps."""
    out = []
    if checkpoint_steps(root):
        out.append(root)
    if depth > 0 and os.path.isdir(root):
        for name in sorted(os.listdir(root)):
            sub = os.path.join(root, name)
            if os.path.isdir(sub) and not name.isdigit() and not name.startswith("."):
                out += find_checkpoint_dirs(sub, depth - 1)
    return out


def checkpoint_dir_problem(path: str) -> Optional[str]:
    """None if `path` is a stage's checkpoints folder holding at least one step; else what is wrong,
    with a "did you mean" when checkpoint folders sit below it. Never creates anything."""
    if not os.path.exists(path):
        parent = os.path.dirname(os.path.abspath(path))
        return f"no such directory (parent {'exists' if os.path.isdir(parent) else 'does not exist either'})"
    if not os.path.isdir(path):
        return "not a directory"
    if checkpoint_steps(path):
        return None
    below = [d for d in find_checkpoint_dirs(path) if d != path]
    if below:
        best = sorted(below, key=lambda d: (d.count(os.sep), "rl" not in d, d))[0]
        listing = ", ".join(below)
        return f"holds no checkpoints; did you mean {best}? (checkpoint folders below it: {listing})"
    return "holds no checkpoints (expected a folder of numbered step folders, e.g. runs/quickstart/rl/checkpoints)"


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
    "train_screens_per_instance": integer("train episodes per instance, each with its own seed's screen", 1),
    "num_test_episodes": integer("held-out episodes (SOP) = online evaluation tasks", 1),
    "resolution": resolution("screenshot (width, height) in pixels"),
}
MODEL = {
    "preset": Rule(lambda v: None if isinstance(v, str) and v.lower().removeprefix("qwen2.5-vl-") in PRESETS
                   else unknown("preset", v, PRESETS), "model size when no checkpoint is given"),
    "checkpoint": hf_dir_rule("Hugging Face Qwen2.5-VL folder to start from ('' = preset, random init)"),
    "num_hidden_layers": integer("> 0 overrides the preset's text depth", 0),
    "intermediate_size": integer("> 0 overrides the preset's text MLP width", 0),
    "vision_depth": integer("> 0 overrides the preset's vision depth", 0),
    "tokenizer": tokenizer_rule("tokenizer: auto | tiny | tiny_phonesim | tiny_phonesim_num | qwen25 | "
                                "tokenizer.json or .model path"),
    "min_pixels": integer("image processor: fewest pixels per screenshot", 1),
    "max_pixels": integer("image processor: most pixels per screenshot", 1),
    "max_new_tokens": integer("longest sampled response (tokens)", 1),
    "max_prompt_tokens": integer("longest prompt the sampler accepts (tokens)", 1),
    "sample_batch_size": integer("prompts per sampler call", 1),
}
PROMPT = {
    "dialect": choice("action dialect of responses", DIALECTS),
    "observation": choice("what the prompt shows of the screen", OBSERVATIONS),
    "target": choice("how point actions are given", TARGETS),
    "history_turns": integer("K: screens in the prompt, the current one included", 0),
    "history_mode": choice("earlier steps: full (responses as written) | compact (one line each)",
                           ("full", "compact")),
    "max_history_lines": integer("earlier steps kept (0 = all)", 0),
    "image_max_pixels": integer("current screenshot resized under this area (0 = as rendered)", 0),
    "history_image_max_pixels": integer("history screenshots resized under this area (0 = like current)", 0),
    "image_min_pixels": integer("fewest pixels of a resized screenshot", 1),
    "ui_text_bounds": boolean("UI text lists element bounds"),
    "ui_text_class": boolean("UI text lists element classes"),
    "word_tokens": boolean("goal and UI labels written so each word starts after a space"),
    "ui_text_skip_unlabeled": boolean("UI text leaves out elements with no text or description"),
    "ui_text_index_last": boolean("UI text writes each element index after its label"),
    "max_ui_lines": integer("most UI elements listed", 1),
    "system_prompt": boolean("include the system prompt"),
    "goal_last": boolean("goal after the observation instead of before"),
}
SFT = {
    "seed": integer("data order and dropout seed"),
    "num_steps": integer("optimizer steps", 0),
    "batch_size": integer("expert steps per optimizer step", 1),
    "micro_batch_size": integer("rows per forward/backward (gradient accumulation)", 1),
    "learning_rate": number("peak learning rate", 0.0, lo_open=True),
    "warmup_steps": integer("linear warm-up steps", 0),
    "weight_decay": number("AdamW weight decay", 0.0),
    "max_grad_norm": number("global gradient-norm clip", 0.0, lo_open=True),
    "schedule": choice("learning-rate schedule after warm-up", SCHEDULES),
    "checkpoint_every": integer("steps between checkpoints (0 = only the last)", 0),
    "stop_after_steps": integer("stop (checkpointed) after this many steps this run; None = run on", 1,
                                optional=True),
    "grounding_fraction": number("share of SFT items that are grounding items (Tap on a label)", 0.0, 1.0,
                                 hi_open=True),
    "grounding_instruction": text("grounding item instruction, with {label}"),
    "group_by_length": boolean("batches of similar prompt length (less padding; LengthGroupedSource)"),
}
RL = {
    "seed": integer("rollout and data-order seed"),
    "iterations": integer("RL iterations (a batch of episodes each)", 0),
    "episodes_per_iteration": integer("expert episodes rolled out per iteration", 1),
    "num_rollouts": integer("N: rollouts per episode (GRPO group size)", 1),
    "patch_strategy": choice("Patch Module: how a mismatched step continues", PATCH_STRATEGIES),
    "patch_threshold": integer("ε: patches allowed per rollout (-1 = unlimited)", -1),
    "temperature": number("sampling temperature", 0.0),
    "gamma": number("γ: discount of future step rewards", 0.0, 1.0),
    "omega": number("ω: weight of the episode-level advantage", 0.0),
    "cut_at_mismatch": boolean("returns stop at the first mismatch"),
    "reward_preset": choice("step-reward weights", REWARD_PRESETS),
    "require_thought": boolean("responses without a thought get no format reward (None = as the dialect)",
                               optional=True),
    "bbox_scale": number("matcher: expert bbox enlargement about its centre", 0.0, lo_open=True),
    "dist_threshold": number("matcher: normalised distance to the expert point", 0.0),
    "episode_level": choice("episode-level advantage: paper (Eq. 11) | code (per-step rewards)", ("paper", "code")),
    "patch_aux_checkpoint": text("off_policy patches: the auxiliary thought model's Hugging Face folder"),
    "dynamic_sampling_short": choice("fewer groups than the batch after the tries", ("log", "raise")),
    "recompute_old_logprobs": boolean("π_old from the training forward instead of the sampler"),
    "dynamic_sampling": boolean("drop groups whose returns barely vary"),
    "dynamic_sampling_eta": number("η: least return spread a group needs", 0.0, 1.0),
    "dynamic_sampling_max_tries": integer("rollout batches drawn to fill an iteration", 1),
    "clip_low": number("PPO clip ε_low", 0.0, 1.0, hi_open=True),
    "clip_high": number("PPO clip ε_high", 0.0),
    "dual_clip": number("dual-clip c (> 1) for negative advantages; None = off", 1.0, lo_open=True,
                        optional=True),
    "kl_coef": number("β: KL penalty to the reference policy", 0.0),
    "kl_kind": choice("KL estimator", KL_KINDS),
    "aggregation": choice("loss aggregation over tokens", AGGREGATIONS),
    "learning_rate": number("learning rate", 0.0, lo_open=True),
    "warmup_steps": integer("linear warm-up steps", 0),
    "weight_decay": number("AdamW weight decay", 0.0),
    "max_grad_norm": number("global gradient-norm clip", 0.0, lo_open=True),
    "micro_batch_size": integer("rows per forward/backward", 1),
    "num_mini_batches": integer("optimizer steps per iteration", 1),
    "checkpoint_every": integer("iterations between checkpoints (0 = only the last)", 0),
    "stop_after_steps": integer("stop (checkpointed) after this many iterations this run; None = run on", 1,
                                optional=True),
}
EVAL = {
    "step_metrics": boolean("step metrics (TM, GR, SR) with the expert history"),
    "online_trials": integer("online trials per task (> 1 adds pass@k)", 1),
    "online_temperature": number("temperature of the sampled online trials", 0.0),
    "max_steps": integer("online episode step limit", 1),
    "checkpoint_dir": checkpoint_rule("a stage's checkpoints folder to evaluate, e.g. runs/quickstart/rl/checkpoints"),
    "untrained": boolean("evaluate without trained weights (random init or model.checkpoint as is)"),
    "before_training": boolean("quickstart: evaluate the untrained model first (a table row of zeros for "
                               "the tiny default, ~3 min on 2 cores)"),
}
REASONING = {
    "rounds": integer("sample → verify → fine-tune rounds", 1),
    "samples_per_step": integer("thought samples per expert step and round", 1),
    "temperature": number("sampling temperature", 0.0),
    "seed": integer("sampling seed"),
    "init_checkpoint": checkpoint_rule("a stage's checkpoints folder to start from (e.g. runs/quickstart/sft/checkpoints)"),
}
TOP = {
    "job": choice("the job to run (see --help)", lambda: sorted(_jobs())),
    "seed": integer("model-init and split seed"),
    "offline_rl_baseline": boolean("also train the offline-RL baseline from the SFT weights"),
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
}
DTYPES = ("float32", "bfloat16", "float16")
MESH = {
    "data": integer("data-parallel axis size (-1 = what the device count leaves)", -1),
    "fsdp": integer("FSDP axis size (-1 = what the device count leaves)", -1),
    "tensor": integer("tensor-parallel axis size", -1),
    "rules": choice("logical-axis rule table", ("default", "fsdp")),
    "param_dtype": choice("master weights and optimizer state dtype", DTYPES),
    "compute_dtype": choice("forward/backward matmul dtype", DTYPES),
    "sampler_data": integer("sampler data axis (0 = the training mesh's)", 0),
    "sampler_fsdp": integer("sampler FSDP axis (0 = the training mesh's)", 0),
    "sampler_tensor": integer("sampler tensor axis (0 = the training mesh's)", 0),
    "sampler_dtype": choice("weights dtype the sampler holds", DTYPES),
    "reference": choice("where the KL reference params live", ("sharded", "host")),
    "remat": boolean("rematerialise layers in the backward pass"),
    "distributed": choice("jax.distributed initialisation", ("auto", "on", "off")),
}
EXPORT = {
    "checkpoint_dir": checkpoint_rule("a stage's checkpoints folder to export, e.g. runs/quickstart/rl/checkpoints"),
    "out_dir": text("output folder ('' = <workdir>/hf)"),
    "dtype": choice("storage dtype ('' = the params' own)", ("",) + DTYPES),
    "overwrite": boolean("replace an existing output folder"),
}
BLOCKS = {"export": EXPORT, "mesh": MESH, "data": DATA, "model": MODEL, "prompt": PROMPT, "sft": SFT, "rl": RL, "eval": EVAL,
          "reasoning": REASONING, "reasoning.sft": SFT}


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
    p = config.get("prompt")
    if p is not None and p.get("target") == "element" and p.get("observation") == "screenshot":
        _fail("prompt.target", p.target, "'element' needs the UI tree in the prompt: set prompt.observation "
              "to ui_text or both, or prompt.target to coordinate")
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
    r = config.get("reasoning")
    if r is not None and r.get("init_checkpoint") and m is not None and m.get("checkpoint"):
        raise ConfigError("config.reasoning.init_checkpoint: set either it (an Orbax stage folder) or "
                          "model.checkpoint (a Hugging Face folder), not both")


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
