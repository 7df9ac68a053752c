"""Experiment spec files: parsing and validation against the recipes, before anything runs.

The format is documented in gui_jax/experiment.py (the runner); every error message starts with the
key at fault, e.g. "spec.arms.sft.overrides: the recipe has no field 'rl.gamam'; did you mean rl.gamma?".
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from gui_jax import sweep as gs
from gui_jax.sweep import SweepError

SPEC_KEYS = ("name", "description", "arms", "seeds", "seed_fields", "evaluation", "comparisons")
ARM_KEYS = ("recipe", "overrides", "init_from", "stage", "seed_fields", "report")
VIEW_KEYS = ("results_of", "stage")
INIT_KEYS = ("arm", "path", "flag")
INIT_OPTIONAL = ("ready",)  # a stage of the source's results.json after which `path` is final (scheduling only)
EVAL_KEYS = ("metric", "stage", "test")
TESTS = ("mcnemar", "bootstrap")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # names become directory and file names


class ExperimentError(SweepError):
    """A malformed spec (the message starts with the key at fault) or unusable job results."""


def variant_arms(base: dict, variants: dict) -> dict:
    """{name: `base` with its overrides updated by variants[name]}: the arms of an ablation (one setting changed
    an arm), for spec files."""
    return {name: {**base, "overrides": {**base.get("overrides", {}), **change}} for name, change in variants.items()}


def init_entries(init) -> list:
    """init_from as a list of {arm, path, flag}: None -> [], one dict -> [it], a list as it is."""
    if init is None:
        return []
    return list(init) if isinstance(init, (list, tuple)) else [init]


@dataclass
class Arm:
    name: str
    recipe: str = ""                  # "" for an arm that reads another arm's runs
    overrides: dict = field(default_factory=dict)
    init_from: dict | list | None = None   # one {arm, path, flag} or a list of them (as the spec wrote it)
    stage: str | None = None
    seed_fields: list = field(default_factory=list)
    results_of: str | None = None
    report: bool = True               # False: the job makes an input of other arms (an export, a reward model)
    base: str | None = None           # the shipped weights its job starts from, itself or through its sources

    @property
    def inits(self) -> list:
        """The init_from entries as a list (empty when the arm starts from its recipe alone)."""
        return init_entries(self.init_from)

    @property
    def runs(self) -> str:
        """The arm whose jobs hold this arm's results."""
        return self.results_of or self.name


@dataclass
class Experiment:
    name: str
    arms: dict                        # {name: Arm}, sources before the arms that start from them
    seeds: list
    metric: str = "online_success"
    stage: str | None = None
    test: str = "mcnemar"
    comparisons: list = field(default_factory=list)
    description: str = ""


@dataclass(frozen=True)
class Point:
    arm: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.arm}/seed={self.seed}"


def _keys(block, accepted, where: str) -> None:
    if not isinstance(block, dict):
        raise ExperimentError(f"{where}: must be a dict with keys {', '.join(accepted)}, got {type(block).__name__}")
    for k in block:
        if k not in accepted:
            raise ExperimentError(f"{where}.{k}: unknown key; accepted: {', '.join(accepted)}")


def _name(value, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ExperimentError(f"{where}: {value!r} must be letters, digits, '_', '.', '-' (it names a folder)")
    return value


def _load_recipe(recipe, where: str, cache: dict):
    """get_config() of a recipe path ('path.py' or 'path.py:arg', as main takes it), relative to the cwd."""
    if not isinstance(recipe, str) or not recipe:
        raise ExperimentError(f"{where}: missing (the recipe file the arm runs, e.g. configs/quickstart.py)")
    if recipe not in cache:
        from gui_jax.core.recipe_files import recipe_config
        if not os.path.isfile(recipe.partition(":")[0]):
            raise ExperimentError(f"{where}: file not found: {recipe}")
        try:
            cache[recipe] = recipe_config(recipe)
        except Exception as e:  # a broken recipe file is the spec's fault as far as this runner can tell
            raise ExperimentError(f"{where}: {recipe} does not load: {type(e).__name__}: {e}") from None
    return cache[recipe]


def _check_flags(config, flags, where: str) -> None:
    for flag in flags:
        if not isinstance(flag, str):
            raise ExperimentError(f"{where}: flag {flag!r} must be a dotted config path, e.g. 'rl.gamma'")
        try:
            gs._check_flag(config, flag, where)  # the sweep's check: names the field and suggests close ones
        except SweepError as e:
            raise ExperimentError(str(e)) from None


def _base(config, overrides: dict, init, arms: dict, where: str) -> str | None:
    """The shipped base weights an arm's job starts from ('builtin:<name>@<sha>', gui_jax.models.builtin): its own
    model.checkpoint when that is a built-in, and its sources' bases; None when neither (from random weights, a
    folder). Part of a point's settings, so results measured from another base are not pooled with new ones."""
    from gui_jax.models.builtin import weights_id
    bases = [arms[e["arm"]].base for e in init_entries(init)]
    if "model.checkpoint" not in [e["flag"] for e in init_entries(init)]:
        model = getattr(config, "model", None)
        own = overrides.get("model.checkpoint", getattr(model, "checkpoint", "") if model is not None else "")
        try:
            bases.append(weights_id(own))
        except ValueError as e:
            raise ExperimentError(f"{where}: {e}") from None
    found = sorted({b for b in bases if b})
    return "; ".join(found) or None


def _dependency_order(arms: dict) -> list:
    """Arm names with every init_from source before the arms that start from it (else spec order)."""
    order, visiting = [], []

    def visit(name):
        if name in order:
            return
        if name in visiting:
            cycle = " → ".join(visiting[visiting.index(name):] + [name])
            raise ExperimentError(f"spec.arms.{name}.init_from: the arms start from each other ({cycle})")
        visiting.append(name)
        for init in init_entries(arms[name].get("init_from")):
            visit(init.get("arm"))
        visiting.pop()
        order.append(name)

    for name in arms:
        visit(name)
    return order


def parse_spec(spec) -> Experiment:
    """Validates a spec dict against its recipes (nothing runs) and returns the experiment."""
    _keys(spec, SPEC_KEYS, "spec")
    name = _name(spec.get("name"), "spec.name")
    seeds = spec.get("seeds")
    if not (isinstance(seeds, (list, tuple)) and seeds and len(set(seeds)) == len(seeds)
            and all(type(s) is int for s in seeds)):
        raise ExperimentError(f"spec.seeds: must be a non-empty list of distinct ints, got {seeds!r}")
    seed_fields = spec.get("seed_fields", ["seed"])
    if not isinstance(seed_fields, (list, tuple)):
        raise ExperimentError(f"spec.seed_fields: must be a list of flags, got {seed_fields!r}")
    ev = spec.get("evaluation", {})
    _keys(ev, EVAL_KEYS, "spec.evaluation")
    metric, stage, test = ev.get("metric", "online_success"), ev.get("stage"), ev.get("test", "mcnemar")
    if not isinstance(metric, str) or not metric:
        raise ExperimentError(f"spec.evaluation.metric: must name a results.json field, got {metric!r}")
    if stage is not None and not isinstance(stage, str):
        raise ExperimentError(f"spec.evaluation.stage: must be a stage name, got {stage!r}")
    if test not in TESTS:
        raise ExperimentError(f"spec.evaluation.test: {test!r}; known: {', '.join(TESTS)}")
    raw = spec.get("arms")
    if not isinstance(raw, dict) or not raw:
        raise ExperimentError("spec.arms: must be a non-empty dict {arm name: {recipe, overrides, ...}}")
    for arm, body in raw.items():
        _name(arm, f"spec.arms.{arm!r}")
        where = f"spec.arms.{arm}"
        if not isinstance(body, dict):
            raise ExperimentError(f"{where}: must be a dict, got {type(body).__name__}")
        if "results_of" in body:
            _keys(body, VIEW_KEYS, where)
            src = body["results_of"]
            if src not in raw or "results_of" in raw[src] or src == arm:
                raise ExperimentError(f"{where}.results_of: {src!r} is not an arm that runs jobs "
                                      f"(arms: {', '.join(a for a in raw if 'results_of' not in raw[a])})")
            if not isinstance(body.get("stage"), str):
                raise ExperimentError(f"{where}.stage: an arm that reads {src}'s runs needs the stage it reads")
            continue
        _keys(body, ARM_KEYS, where)
        init_raw = body.get("init_from")
        if init_raw is not None and not isinstance(init_raw, (dict, list, tuple)):
            raise ExperimentError(f"{where}.init_from: must be {{arm, path, flag}} or a list of them, got {init_raw!r}")
        entries = init_entries(init_raw)
        for i, init in enumerate(entries):
            at = f"{where}.init_from" + (f"[{i}]" if isinstance(init_raw, (list, tuple)) else "")
            if not isinstance(init, dict):
                raise ExperimentError(f"{at}: must be a dict {{arm, path, flag}}, got {init!r}")
            _keys(init, INIT_KEYS + INIT_OPTIONAL, at)
            for k in INIT_KEYS:
                if not isinstance(init.get(k), str) or not init.get(k):
                    raise ExperimentError(f"{at}.{k}: missing (init_from needs arm, path and flag)")
            if "ready" in init and not (isinstance(init["ready"], str) and _NAME.match(init["ready"])):
                raise ExperimentError(f"{at}.ready: {init['ready']!r} must be a stage name of the source's "
                                      "results.json (e.g. 'sft'), after which its path is final")
            if init["arm"] not in raw or "results_of" in raw[init["arm"]] or init["arm"] == arm:
                raise ExperimentError(f"{at}.arm: {init['arm']!r} is not another arm that runs jobs "
                                      f"(arms: {', '.join(raw)})")
            if os.path.isabs(init["path"]) or ".." in init["path"].split("/"):
                raise ExperimentError(f"{at}.path: {init['path']!r} must be relative, inside the "
                                      "source arm's workdir (e.g. sft/checkpoints)")
        flags = [e["flag"] for e in entries]
        if len(set(flags)) != len(flags):
            raise ExperimentError(f"{where}.init_from: sets the flag {flags!r} twice")
    order = _dependency_order({a: b for a, b in raw.items() if "results_of" not in b})
    order += [a for a in raw if "results_of" in raw[a]]
    configs: dict = {}
    arms = {}
    for arm in order:
        body, where = raw[arm], f"spec.arms.{arm}"
        if "results_of" in body:
            arms[arm] = Arm(arm, stage=body["stage"], results_of=body["results_of"])
            continue
        config = _load_recipe(body.get("recipe"), f"{where}.recipe", configs)
        overrides = body.get("overrides", {}) or {}
        if not isinstance(overrides, dict):
            raise ExperimentError(f"{where}.overrides: must be a dict {{flag: value}}, got {type(overrides).__name__}")
        fields = list(body.get("seed_fields", seed_fields))
        _check_flags(config, overrides, f"{where}.overrides")
        _check_flags(config, fields, f"{where}.seed_fields" if "seed_fields" in body else "spec.seed_fields")
        init = body.get("init_from")
        init_flags = [e["flag"] for e in init_entries(init)]
        _check_flags(config, init_flags, f"{where}.init_from.flag")
        for flag in overrides:
            if flag in fields or flag in init_flags:
                raise ExperimentError(f"{where}.overrides: {flag!r} is set per seed (seed_fields / init_from.flag)")
        if body.get("stage") is not None and not isinstance(body["stage"], str):
            raise ExperimentError(f"{where}.stage: must be a stage name, got {body['stage']!r}")
        if not isinstance(body.get("report", True), bool):
            raise ExperimentError(f"{where}.report: must be True or False, got {body['report']!r}")
        arms[arm] = Arm(arm, recipe=body["recipe"], overrides=dict(overrides), init_from=_copy_init(init),
                        stage=body.get("stage"), seed_fields=fields, report=body.get("report", True),
                        base=_base(config, overrides, init, arms, f"{where}.overrides"))
    comparisons = spec.get("comparisons", [])
    if not isinstance(comparisons, (list, tuple)):
        raise ExperimentError("spec.comparisons: must be a list of [arm_a, arm_b] pairs")
    pairs = []
    for i, pair in enumerate(comparisons):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ExperimentError(f"spec.comparisons[{i}]: must be a pair [arm_a, arm_b], got {pair!r}")
        for a in pair:
            if a not in arms:
                raise ExperimentError(f"spec.comparisons[{i}]: unknown arm {a!r} (arms: {', '.join(raw)})")
        quiet = [a for a in pair if not arms[a].results_of and not arms[a].report]  # a stage read is scored
        if quiet:
            raise ExperimentError(f"spec.comparisons[{i}]: arm {quiet[0]!r} is not reported (its runs have "
                                  "report: False: they make an input of other arms)")
        if pair[0] == pair[1]:
            raise ExperimentError(f"spec.comparisons[{i}]: compares {pair[0]!r} with itself")
        pairs.append((pair[0], pair[1]))
    desc = spec.get("description", "")
    if not isinstance(desc, str):
        raise ExperimentError("spec.description: must be a string")
    return Experiment(name=name, arms=arms, seeds=list(seeds), metric=metric, stage=stage, test=test,
                      comparisons=pairs, description=desc)


def _copy_init(init):
    """init_from as the spec wrote it (one dict or a list), copied; the form enters a point's settings."""
    if not init:
        return None
    return [dict(e) for e in init] if isinstance(init, (list, tuple)) else dict(init)


def load_spec(path: str) -> Experiment:
    if not os.path.isfile(path):
        raise ExperimentError(f"spec file not found: {path}")
    return parse_spec(gs._load_module_fn(path, "get_spec"))
