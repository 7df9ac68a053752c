"""The repository stands alone: docs/algorithms.md is the algorithm reference, every reference to it
names an existing section, and the README's commands name modules, recipes and fields that exist."""
import importlib.util
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
ALGORITHMS = ROOT / "docs" / "algorithms.md"
# Spelled in pieces so that this file does not contain what it forbids.
FORBIDDEN = ("../" + "shared", "SPEC" + ".md", "shared/" + "SPEC", "SPEC" + " §")
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".hypothesis", "runs", "node_modules",
             ".mypy_cache", ".ruff_cache", "build", "dist"}
REF = re.compile(r"docs/algorithms\.md((?:[\s,]|and|§\d+|[–-])*)")


def _text_files():
  for dirpath, dirnames, filenames in os.walk(ROOT):
    dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")]
    for name in filenames:
      path = pathlib.Path(dirpath) / name
      if path.stat().st_size > 2_000_000:
        continue
      try:
        yield path, path.read_text(encoding="utf-8")
      except (UnicodeDecodeError, OSError):
        continue  # binary (PNG, checkpoints)


def _sections() -> dict[int, str]:
  return {int(m.group(1)): m.group(2) for m in re.finditer(r"^## (\d+)\. (.+)$", ALGORITHMS.read_text(), re.M)}


def test_no_file_points_outside_the_repository():
  hits = [f"{path.relative_to(ROOT)}:{text.count(s)}x {s!r}" for path, text in _text_files()
          for s in FORBIDDEN if s in text]
  assert not hits, f"references to material outside this repository (use docs/algorithms.md §N): {hits}"


def test_algorithm_sections_are_numbered_in_order():
  sections = _sections()
  assert sorted(sections) == list(range(1, len(sections) + 1)) and len(sections) >= 12, sections
  text = ALGORITHMS.read_text()
  for title in ("Actions", "Step rewards", "Patch Module", "advantages", "Policy loss", "GRPO", "AdaGRPO",
                "PPO", "Reward models", "Observations", "Metrics", "splits"):
    assert title in text, title


def test_every_reference_names_an_existing_section():
  sections = _sections()
  refs = 0
  for path, text in _text_files():
    if path == ALGORITHMS:
      continue
    for m in REF.finditer(text):
      line = text.count("\n", 0, m.start()) + 1
      for n in map(int, re.findall(r"§(\d+)", m.group(1))):
        refs += 1
        assert n in sections, f"{path.relative_to(ROOT)}:{line} cites docs/algorithms.md §{n}, which does not exist"
  assert refs >= 20, f"only {refs} section references found; the regex or the code comments changed"
  index = (ROOT / "docs" / "README.md").read_text()
  for n in map(int, re.findall(r"§(\d+)", index)):
    assert n in sections, f"docs/README.md cites §{n}, which does not exist"
  assert {int(n) for n in re.findall(r"^\| §(\d+) \|", index, re.M)} == set(sections), \
      "docs/README.md 'Where each algorithm lives' needs one row per section"


def test_docs_name_files_that_exist():
  for doc in ("docs/README.md", "docs/algorithms.md"):
    for rel in set(re.findall(r"`((?:gui_jax|configs|benchmarks|experiments|tests)/[\w/.*-]+)`",
                              (ROOT / doc).read_text())):
      assert list(ROOT.glob(rel)), f"{doc} names {rel}, which does not exist"


def test_every_job_is_documented():
  from gui_jax.jobs import JOBS
  index = (ROOT / "docs" / "README.md").read_text()
  missing = [j for j in JOBS if f"| `{j}` |" not in index]
  assert not missing, f"jobs missing from the Jobs table of docs/README.md: {missing}"


def _readme_commands() -> list[str]:
  text = (ROOT / "README.md").read_text()
  blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S)
  lines = [line.strip() for b in blocks for line in b.splitlines()]
  lines += re.findall(r"`([^`\n]*(?:python |--config |tensorboard )[^`\n]*)`", text)
  return [line for line in lines if re.search(r"python|--config |tensorboard", line)]


def _module_path(module: str) -> pathlib.Path:
  base = ROOT.joinpath(*module.split("."))
  return base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__main__.py"


def _load_config(rel: str):
  spec = importlib.util.spec_from_file_location(f"readme_recipe_{pathlib.Path(rel).stem}", ROOT / rel)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config()


def test_readme_commands_name_modules_recipes_and_fields_that_exist():
  commands = _readme_commands()
  assert len(commands) >= 8, commands
  for cmd in commands:
    for module in re.findall(r"python3? -m ([\w.]+)", cmd):
      if module in ("venv", "pytest", "pip") or module.endswith("."):  # "benchmarks.<name>": a placeholder
        continue
      assert _module_path(module).exists() or (ROOT.joinpath(*module.split(".")) / "__init__.py").exists(), \
          f"README command {cmd!r}: no module {module}"
    for script in re.findall(r"python3? ((?:experiments|benchmarks|gui_jax)/[\w/]+\.py)", cmd):
      assert (ROOT / script).exists(), f"README command {cmd!r}: no file {script}"
    recipes = re.findall(r"--(?:config|sweep) (configs/[\w/]+\.py)", cmd)
    for rel in recipes:
      assert (ROOT / rel).exists(), f"README command {cmd!r}: no recipe {rel}"
    config_recipes = re.findall(r"--config (configs/[\w/]+\.py)", cmd)
    if config_recipes:
      cfg = _load_config(config_recipes[0])
      for field in re.findall(r"--config\.([\w.]+)=", cmd):
        node = cfg
        for part in field.split("."):
          assert part in node, f"README command {cmd!r}: {config_recipes[0]} has no field {field!r}"
          node = node[part]


@pytest.mark.parametrize("needle", ["gui_jax/jobs/", "docs/"])
def test_readme_tour_mentions(needle):
  tour = (ROOT / "README.md").read_text().split("## Tour", 1)[1].split("\n## ", 1)[0]
  short = needle.split("/", 1)[1] if needle.startswith("gui_jax/") else needle
  assert short in tour, f"README tour should mention {needle}"
