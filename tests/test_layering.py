"""Dependencies point one way: core ← envs, tasks, data, models ← rl, rewards ← train, eval ← jobs ← main.

Every `import gui_jax.X` / `from gui_jax.X import` in the package (module level or inside a function) is
checked against the layer table; train/ and eval/ never import each other, and jobs/ is the only package
that imports both.
"""
import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "gui_jax"

LAYER = {"core": 0, "envs": 1, "tasks": 1, "data": 1, "models": 1, "rl": 2, "rewards": 2,
         "train": 3, "eval": 3, "jobs": 4, "main": 5, "sweep": 5, "view": 5, "experiment_spec": 5.5, "experiment_record": 5.5, "experiment_report": 5.75, "experiment": 6,
         "config_check": 3.5, "host_malloc": 0, "__init__": 0}
# Same-layer imports that are allowed: the task registry lives with the simulator's templates; the
# AndroidWorld client speaks the json_action format that the AndroidControl reader defines.
SAME_LAYER_OK = {("tasks", "envs"), ("rl", "rewards"), ("rewards", "rl"), ("envs", "data")}


def _top(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0].removesuffix(".py")


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "gui_jax" and len(parts) > 1:
                yield node.lineno, parts[1]


def _edges():
    for path in sorted(PKG.rglob("*.py")):
        src = _top(path)
        for lineno, dst in _imports(path):
            if dst != src:
                yield path.relative_to(PKG.parent), lineno, src, dst


def test_every_top_level_module_has_a_layer():
    tops = {_top(p) for p in PKG.rglob("*.py")}
    assert tops <= set(LAYER), f"add a layer for: {sorted(tops - set(LAYER))}"


def test_dependencies_point_one_way():
    bad = []
    for path, lineno, src, dst in _edges():
        if dst not in LAYER:
            bad.append(f"{path}:{lineno} imports unknown package gui_jax.{dst}")
        elif LAYER[dst] > LAYER[src] or (LAYER[dst] == LAYER[src] and (src, dst) not in SAME_LAYER_OK):
            bad.append(f"{path}:{lineno}: {src} (layer {LAYER[src]}) imports {dst} (layer {LAYER[dst]})")
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


@pytest.mark.parametrize("a,b", [("train", "eval"), ("eval", "train")])
def test_train_and_eval_never_import_each_other(a, b):
    hits = [f"{p}:{n}" for p, n, s, d in _edges() if s == a and d == b]
    assert not hits, f"gui_jax/{a} imports gui_jax/{b}: {hits}"


def test_jobs_is_the_only_importer_of_both_train_and_eval():
    users = {}
    for _, _, src, dst in _edges():
        if dst in ("train", "eval"):
            users.setdefault(src, set()).add(dst)
    both = sorted(s for s, d in users.items() if d == {"train", "eval"})
    assert both == ["jobs"], both
