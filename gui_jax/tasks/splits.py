"""CMDP train/test splits (docs/algorithms.md §12, AndroidWorld-Generalization §3.2).

- instance: every parametric template in both sides, disjoint seeds; duplicate instances removed
  (within a side, and train instances equal to a test instance). A template with few distinct
  instances (tasks.complete has 16) gives test at most half of those seen over both seed ranges, so
  the duplicate removal cannot empty its train side; `info["capped_templates"]` names each one.
- template: per app 3:1 train:test templates (apps with one template dropped); a medium/hard test
  template keeps an equal-or-easier template of its app in train; the assignment with the closest
  train/test mean difficulty over a seeded search wins.
- app: disjoint app sets; cross-app templates that straddle the two sets are dropped; the test app
  set with the closest mean difficulty (and a test share near 25%) wins.
Every split is checked for disjointness at its level and for |mean difficulty gap| <= 0.15.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional

from gui_jax.tasks.registry import Task, get_template, list_templates, make_task

TRAIN_SEEDS = (1, 2, 3, 4, 5, 6, 8, 9, 12, 123, 12345, 123456, 1234567, 12345678, 123456789, 1234567890)
TEST_SEEDS = (7, 30, 1234)
REGIMES = ("instance", "template", "app")
MAX_DIFFICULTY_GAP = 0.15


class SplitError(ValueError):
    """A split violates its invariants."""


def instance_key(t: Task) -> tuple:
    return (t.template, t.goal, t.params)


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


@dataclass
class Split:
    regime: str
    train: list
    test: list
    info: dict = field(default_factory=dict)

    def _side(self, tasks):
        return {
            "instances": len(tasks),
            "templates": len({t.template for t in tasks}),
            "apps": len({a for t in tasks for a in t.apps}),
            "mean_difficulty": round(_mean(t.level for t in tasks), 3),
            "difficulty": dict(sorted(Counter(t.difficulty for t in tasks).items())),
            "answer": sum(t.answer_task for t in tasks),
            "cross_app": sum(len(t.apps) > 1 for t in tasks),
        }

    def balance(self) -> dict:
        return {
            "train": self._side(self.train),
            "test": self._side(self.test),
            "difficulty_gap": round(abs(_mean(t.level for t in self.train) - _mean(t.level for t in self.test)), 3),
        }

    def report(self) -> str:
        b = self.balance()
        head = (
            f"{'':8s}{'inst':>6s}{'tmpl':>6s}{'apps':>6s}{'diff':>7s}{'easy/med/hard':>16s}{'answer':>8s}{'cross':>7s}"
        )
        lines = [f"split '{self.regime}'", head]
        for side in ("train", "test"):
            s = b[side]
            d = s["difficulty"]
            mix = f"{d.get('easy', 0)}/{d.get('medium', 0)}/{d.get('hard', 0)}"
            lines.append(
                f"{side:8s}{s['instances']:6d}{s['templates']:6d}{s['apps']:6d}{s['mean_difficulty']:7.2f}"
                f"{mix:>16s}{s['answer']:8d}{s['cross_app']:7d}"
            )
        lines.append(f"mean difficulty gap {b['difficulty_gap']:.3f} (limit {MAX_DIFFICULTY_GAP})")
        for name, (kept, drawn, distinct) in sorted(self.info.get("capped_templates", {}).items()):
            lines.append(f"{name}: {distinct} distinct instances; test keeps {kept} of {drawn} so train has the rest")
        if self.info.get("test_apps"):
            lines.append(f"test apps: {', '.join(self.info['test_apps'])}")
        return "\n".join(lines)

    def check(self) -> None:
        """Raise SplitError unless train and test are disjoint at this regime's level and balanced."""
        if not self.train or not self.test:
            raise SplitError(f"{self.regime} split has an empty side ({len(self.train)} train, {len(self.test)} test)")
        tr, te = {instance_key(t) for t in self.train}, {instance_key(t) for t in self.test}
        if tr & te:
            raise SplitError(
                f"{self.regime} split: {len(tr & te)} instances in both train and test, e.g. {sorted(tr & te)[0]}"
            )
        if len(tr) != len(self.train) or len(te) != len(self.test):
            raise SplitError(f"{self.regime} split: duplicate instances within a side")
        if self.regime == "instance":
            seeds = {t.seed for t in self.train} & {t.seed for t in self.test}
            if seeds:
                raise SplitError(f"instance split: seeds {sorted(seeds)} used on both sides")
            tr_t, te_t = {t.template for t in self.train}, {t.template for t in self.test}
            if tr_t != te_t:
                raise SplitError(f"instance split: templates on one side only (train only: {sorted(tr_t - te_t)}, "
                                 f"test only: {sorted(te_t - tr_t)}); widen the seed ranges or drop them")
        if self.regime in ("template", "app"):
            both = {t.template for t in self.train} & {t.template for t in self.test}
            if both:
                raise SplitError(f"{self.regime} split: templates on both sides: {sorted(both)}")
        if self.regime == "app":
            both = {a for t in self.train for a in t.apps} & {a for t in self.test for a in t.apps}
            if both:
                raise SplitError(f"app split: apps on both sides: {sorted(both)}")
        gap = self.balance()["difficulty_gap"]
        if gap > MAX_DIFFICULTY_GAP:
            raise SplitError(f"{self.regime} split: train/test mean difficulty gap {gap:.3f} > {MAX_DIFFICULTY_GAP}")


def _instances(templates, seeds) -> list:
    out, seen = [], set()
    for name in templates:
        for s in seeds:
            t = make_task(name, s)
            k = instance_key(t)
            if k not in seen:
                seen.add(k)
                out.append(t)
    return out


def screen_variants(tasks: list, seeds: Iterable[int], per_instance: int) -> list:
    """`tasks`, each followed by up to `per_instance - 1` tasks of the same instance (template, goal,
    params) drawn with other `seeds`: the same goal on another screen, where its target sits elsewhere.
    One screen per goal lets a small model learn goal → element by heart; several force the look-up.
    Instances stay those of `tasks`, so a split's disjointness is unchanged."""
    if per_instance < 1:
        raise ValueError(f"per_instance must be >= 1, got {per_instance}")
    if per_instance == 1:
        return list(tasks)
    first = {instance_key(t): t for t in tasks}
    extra: dict[tuple, list] = {k: [] for k in first}
    for name in sorted({t.template for t in tasks}):
        for s in seeds:
            t = make_task(name, s)
            k = instance_key(t)
            if k in first and t.seed != first[k].seed and len(extra[k]) < per_instance - 1:
                extra[k].append(t)
    return [v for t in tasks for v in [t] + extra[instance_key(t)]]


def _cap_small_templates(test: list, train: list) -> tuple[list, dict]:
    """Test instances with each template's share cut to half its distinct instances on both sides (train
    = the train seeds' instances before test duplicates are removed; the first test ones in seed order
    kept); {template: (kept, drawn, distinct)} for each cut one."""
    train_keys: dict[str, set] = {}
    for t in train:
        train_keys.setdefault(t.template, set()).add(instance_key(t))
    by_template: dict[str, list] = {}
    for t in test:
        by_template.setdefault(t.template, []).append(t)
    out, capped = [], {}
    for name, drawn in by_template.items():
        distinct = len({instance_key(t) for t in drawn} | train_keys.get(name, set()))
        keep = drawn[: distinct // 2]
        if len(keep) < len(drawn):
            capped[name] = (len(keep), len(drawn), distinct)
        out += keep
    return out, capped


def _build(regime, train_templates, test_templates, train_seeds, test_seeds, info) -> Split:
    test = _instances(test_templates, test_seeds)
    train = _instances(train_templates, train_seeds)
    if regime == "instance":
        test, info["capped_templates"] = _cap_small_templates(test, train)
    test_keys = {instance_key(t) for t in test}
    return Split(regime, [t for t in train if instance_key(t) not in test_keys], test, info)


def _template_split(names, search: int, rng: random.Random):
    by_app: dict[str, list] = {}
    for n in names:
        by_app.setdefault(get_template(n).app, []).append(n)
    by_app = {a: sorted(ns) for a, ns in sorted(by_app.items()) if len(ns) >= 2}
    level = {n: get_template(n).level for ns in by_app.values() for n in ns}
    best, best_gap = None, float("inf")
    for _ in range(search):
        test = []
        for app, ns in by_app.items():
            k = max(1, round(len(ns) / 4))
            for _ in range(50):
                pick = rng.sample(ns, k)
                rest = [n for n in ns if n not in pick]
                if all(any(level[r] <= level[p] for r in rest) for p in pick):
                    break
            test.extend(pick)
        train = [n for ns in by_app.values() for n in ns if n not in test]
        gap = abs(_mean(level[n] for n in train) - _mean(level[n] for n in test))
        if gap < best_gap:
            best, best_gap = (sorted(train), sorted(test)), gap
    return best


def _app_split(names, n_test_apps: int):
    apps = sorted({get_template(n).app for n in names})
    level = {n: get_template(n).level for n in names}
    best, best_score = None, float("inf")
    for test_apps in itertools.combinations(apps, n_test_apps):
        ts = set(test_apps)
        test = [n for n in names if set(get_template(n).apps) <= ts]
        train = [n for n in names if not set(get_template(n).apps) & ts]
        if not test or not train:
            continue
        gap = abs(_mean(level[n] for n in train) - _mean(level[n] for n in test))
        share = len(test) / (len(test) + len(train))
        score = gap + 0.2 * abs(share - 0.25)
        if score < best_score:
            best, best_score = (sorted(train), sorted(test), list(test_apps)), score
    return best


def make_split(
    regime: str,
    train_seeds: Iterable[int] = TRAIN_SEEDS,
    test_seeds: Iterable[int] = TEST_SEEDS,
    seed: int = 0,
    templates: Optional[Iterable[str]] = None,
    n_test_apps: int = 3,
    search: int = 300,
    verbose: bool = False,
) -> Split:
    """Build and check a CMDP split. regime: 'instance' | 'template' | 'app'."""
    train_seeds, test_seeds = tuple(train_seeds), tuple(test_seeds)
    if set(train_seeds) & set(test_seeds):
        raise SplitError(f"train and test seeds overlap: {sorted(set(train_seeds) & set(test_seeds))}")
    names = sorted(templates) if templates is not None else list_templates()
    if regime == "instance":
        param = [n for n in names if get_template(n).parametric]
        split = _build(
            regime, param, param, train_seeds, test_seeds, {"excluded_templates": [n for n in names if n not in param]}
        )
    elif regime == "template":
        train_t, test_t = _template_split(names, search, random.Random(f"template-split:{seed}"))
        split = _build(
            regime, train_t, test_t, train_seeds, test_seeds, {"train_templates": train_t, "test_templates": test_t}
        )
    elif regime == "app":
        found = _app_split(names, n_test_apps)
        if found is None:
            raise SplitError(f"app split: no valid choice of {n_test_apps} test apps")
        train_t, test_t, test_apps = found
        split = _build(
            regime,
            train_t,
            test_t,
            train_seeds,
            test_seeds,
            {"train_templates": train_t, "test_templates": test_t, "test_apps": test_apps},
        )
    else:
        raise SplitError(f"unknown split regime {regime!r}; expected one of {REGIMES}")
    split.check()
    if verbose:
        print(split.report())
    return split
