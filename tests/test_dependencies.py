"""Runtime dependencies = what gui_jax imports: every import is declared, every declared package is used.

A module-level import must be a runtime dependency. An import inside a function (an optional backend such
as MiniWob++) may instead come from an optional extra, or from a package that such an extra requires.
"""
import ast
import functools
import importlib.metadata
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gui_jax"

# Distribution name -> the module it provides, where the two differ by more than '-' vs '_' and case.
MODULE_OF = {
    "pillow": "PIL", "absl-py": "absl", "ml-collections": "ml_collections", "orbax-checkpoint": "orbax",
    "google-crc32c": "google_crc32c", "protobuf": "google.protobuf", "pyyaml": "yaml",
}
# Declared but not imported by gui_jax, with the reason.
NOT_IMPORTED = {
    "tensorboard": "command-line viewer for the logs (README: tensorboard --logdir ...)",
}


def _requirement_name(req: str) -> str:
  """The distribution name as written ('tensorboardX>=2.6' -> 'tensorboardX')."""
  return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0]


def _normal(dist: str) -> str:
  return dist.lower().replace("_", "-").replace(".", "-")


def _project():
  return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _runtime() -> list[str]:
  return [_requirement_name(r) for r in _project()["dependencies"]]


def _module_of(dist: str) -> str:
  return MODULE_OF.get(_normal(dist), dist.replace("-", "_"))


def _top(name: str) -> str:
  parts = name.split(".")
  return ".".join(parts[:2]) if parts[0] == "google" and len(parts) > 1 else parts[0]


@functools.lru_cache(maxsize=1)
def _imports() -> dict[str, dict[str, str]]:
  """{'module_level' | 'lazy': {module (top level; 'google.x' for the google namespace): first file}}.

  Also counts `importlib.resources.files("m")` / `importlib.import_module("m")` with a literal name (lazy).
  """
  found: dict[str, dict[str, str]] = {"module_level": {}, "lazy": {}}
  for path in sorted(PACKAGE.rglob("*.py")):  # every file: a lazy import inside a function counts too
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = str(path.relative_to(ROOT))
    for node in _executed_at_import(tree.body):
      for name in _names(node):
        found["module_level"].setdefault(_top(name), rel)
    for node in ast.walk(tree):
      for name in _names(node):
        found["lazy"].setdefault(_top(name), rel)
  for module in found["module_level"]:
    found["lazy"].pop(module, None)
  return {kind: {m: f for m, f in mods.items()
                 if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "gui_jax"}
          for kind, mods in found.items()}


def _executed_at_import(body):
  """Statements that run when the module is imported: the body, and the bodies of top-level if / try /
  with / class statements (not function bodies)."""
  for node in body:
    yield node
    if isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)):
      for field in ("body", "orelse", "finalbody"):
        yield from _executed_at_import(getattr(node, field, []))
      for handler in getattr(node, "handlers", []):
        yield from _executed_at_import(handler.body)


def _names(node) -> list[str]:
  if isinstance(node, ast.Import):
    return [a.name for a in node.names]
  if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
    return [node.module]
  if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
      and node.func.attr in ("files", "import_module") and node.args
      and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
    return [node.args[0].value]
  return []


def _optional_dists() -> set[str]:
  """Distributions of every optional extra, plus what those distributions themselves require."""
  dists = {_normal(_requirement_name(r)) for reqs in _project()["optional-dependencies"].values() for r in reqs}
  for dist in list(dists):
    try:
      requires = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
      continue
    dists |= {_normal(_requirement_name(r)) for r in requires if "extra ==" not in r}
  return dists


def test_every_module_level_import_is_a_declared_runtime_dependency():
  declared = {_module_of(d) for d in _runtime()}
  undeclared = {m: f for m, f in _imports()["module_level"].items() if m not in declared}
  assert not undeclared, f"imported at module level by gui_jax but not in pyproject dependencies: {undeclared}"


def test_every_lazy_import_is_declared_somewhere():
  declared = {_module_of(d) for d in _runtime()}
  provided = importlib.metadata.packages_distributions()
  optional = _optional_dists()
  bad = {}
  for module, file in _imports()["lazy"].items():
    if module in declared:
      continue
    owners = {_normal(d) for d in provided.get(module.split(".")[0], [])}
    if not owners & optional:
      bad[module] = f"{file} (installed from {sorted(owners) or 'nothing'})"
  assert not bad, f"imported inside functions but declared in no dependency list or extra: {bad}"


def test_every_declared_runtime_dependency_is_imported():
  imported = set(_imports()["module_level"]) | set(_imports()["lazy"])
  unused = [d for d in _runtime() if _module_of(d) not in imported and _normal(d) not in NOT_IMPORTED]
  assert not unused, f"declared runtime dependencies gui_jax never imports (move to an extra or drop): {unused}"
  stale = [d for d in NOT_IMPORTED if d not in {_normal(r) for r in _runtime()} or _module_of(d) in imported]
  assert not stale, f"NOT_IMPORTED lists packages that are not declared, or that gui_jax now imports: {stale}"


def test_module_names_match_the_installed_distributions():
  # The MODULE_OF map is checked against installed metadata, so a wrong mapping cannot hide a dependency.
  provided = importlib.metadata.packages_distributions()
  for dist in _runtime():
    top = _module_of(dist).split(".")[0]
    owners = {_normal(o) for o in provided.get(top, [])}
    assert _normal(dist) in owners, f"{dist}: expected it to provide module {top!r}; {top!r} comes from " \
                                    f"{owners or 'nothing'}"


def test_requirements_txt_lists_runtime_and_test_dependencies():
  project = _project()
  wanted = sorted(project["dependencies"] + project["optional-dependencies"]["test"])
  lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
  assert sorted(lines) == wanted
