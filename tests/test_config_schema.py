"""One declaration per config field (gui_jax/core/config_schema.py): the block builders, config_check, the
--help listing and the docs all agree with it.

Docs checked (the docs state defaults in prose, not in tables):
- docs/algorithms.md and docs/README.md, every "`block.field`, default V" / "`block.field` (default V)" /
  "`block.field` <words> (default V)" and "`block.field`): <label> V (default" statement, for the declared
  blocks (model, prompt, sft, rl, mesh, rm.data, online, env). V is a number (1,024 = 1024; "ε = 1" reads 1), true /
  false, a `name` in backticks, or "A and B" (a tuple). Any markdown table in those files with a `default`
  column and a column of `block.field` names is checked the same way (there are none today).
- docs/README.md "Where each algorithm lives": every `block.field` (or `block.prefix*`) of a declared block
  in its "main config fields" column names a declared field.
"""
import fnmatch
import math
import pathlib
import re
import subprocess
import sys

import ml_collections
import pytest

from gui_jax import config_check
from gui_jax.core.config_schema import Block
from gui_jax.train import config_blocks as B
from gui_jax.train.online.config import ENV, ONLINE, env_block, online_block

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / "algorithms.md", ROOT / "docs" / "README.md"]
DECLARED: dict[str, Block] = {**B.BLOCKS, "online": ONLINE, "env": ENV}
_NAMES = "|".join(re.escape(n) for n in sorted(DECLARED, key=len, reverse=True))   # rm.data before rm
_VALUE = r"(?P<v>`[^`]+`|[\d.eE+-][\w.,+-]*(?: and \d+)?|true|false)"
PROSE = [
    # `rl.num_rollouts`, default 4 | `rl.temperature` (default 1.0) | `sft.prompt_loss_chunk` ... (default 1,024)
    re.compile(rf"`(?P<f>(?:{_NAMES})\.\w+)`[^`\n(]{{0,30}}?,? \(?default (?:\S{{1,2}} = )?{_VALUE}"),
    # (`rl.kl_coef`): UI-S1 1e-4 (default) | (`rl.aggregation`): `token_mean` (default, ...
    re.compile(rf"`(?P<f>(?:{_NAMES})\.\w+)`\)?: (?:[\w-]+ )?{_VALUE} \(default[,)]"),
]


def _parse(raw: str):
    raw = raw.strip().rstrip(".,;:")
    if raw.startswith("`"):
        return raw.strip("`")
    if raw in ("true", "false"):
        return raw == "true"
    if " and " in raw:
        return tuple(int(x) for x in raw.split(" and "))
    if re.fullmatch(r"\d{1,3}(,\d{3})+", raw):
        raw = raw.replace(",", "")
    return float(raw)


def _same(doc_value, default) -> bool:
    if isinstance(default, bool) or isinstance(doc_value, bool):
        return doc_value is default
    if isinstance(default, (int, float)) and isinstance(doc_value, float):
        return math.isclose(doc_value, default)
    if isinstance(default, tuple):
        return tuple(doc_value) == default
    return doc_value == default


def _split(path: str) -> tuple[str, str]:
    """(declared block, field) of a dotted path; a block name may hold a dot (`rm.data`)."""
    block = max((b for b in DECLARED if path.startswith(b + ".")), key=len)
    return block, path[len(block) + 1:]


def _field(path: str):
    block, name = _split(path)
    return DECLARED[block].fields.get(name)


def _doc_statements():
    """(file, field path, stated value) of every default the docs state for a declared field."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for pattern in PROSE:
            out += [(doc.name, m["f"], m["v"]) for m in pattern.finditer(text)]
        # markdown tables with a "default" column next to a column of `block.field` names
        for table in re.findall(r"((?:^\|.*\|\n)+)", text, re.M):
            rows = [[c.strip() for c in r.strip("|").split("|")] for r in table.strip().splitlines()]
            header = [h.lower() for h in rows[0]]
            if "default" not in header:
                continue
            d = header.index("default")
            for row in rows[2:]:
                for cell in row:
                    m = re.fullmatch(rf"`((?:{_NAMES})\.\w+)`", cell)
                    if m:
                        out.append((doc.name, m[1], row[d]))
    return out


def test_defaults_stated_in_the_docs_equal_the_declared_defaults():
    statements = _doc_statements()
    assert len(statements) >= 10, f"only {len(statements)} default statements found; did the docs' wording change?"
    bad = []
    for doc, path, raw in statements:
        f = _field(path)
        assert f is not None, f"{doc} states a default for {path}, which no block declares"
        if not _same(_parse(raw), f.default):
            bad.append(f"{doc}: {path} default {raw!r}, declared {f.default!r}")
    assert not bad, "\n".join(bad)


def test_fields_named_in_the_algorithm_table_are_declared():
    text = (ROOT / "docs" / "README.md").read_text().split("## Where each algorithm lives", 1)[1]
    table = text.split("\n\n", 2)[1]
    names = re.findall(rf"`((?:{_NAMES})\.[\w*]+)`", table)
    assert len(names) >= 20, names
    for name in names:
        block, pattern = _split(name)
        assert fnmatch.filter(DECLARED[block].names(), pattern), f"docs/README.md names {name}: no such field"


@pytest.mark.parametrize("block", sorted(DECLARED))
def test_each_field_has_a_doc_and_a_default_that_passes_its_check(block):
    for f in DECLARED[block]:
        assert f.doc.strip() and "\n" not in f.doc, f"{block}.{f.name}: needs a one-line doc"
        assert f.check(f.default) is None, f"{block}.{f.name} = {f.default!r}: {f.check(f.default)}"
        assert f.check(object()) is not None, f"{block}.{f.name}: the check accepts anything"
        if f.nullable is not None:
            assert f.check(None) is None, f"{block}.{f.name} is nullable but its check refuses None"


@pytest.mark.parametrize("block", sorted(DECLARED))
def test_config_check_takes_each_declared_field_from_its_declaration(block):
    rules = config_check.BLOCKS[block]
    assert list(rules) == DECLARED[block].names()
    for f in DECLARED[block]:
        assert rules[f.name].check is f.check and rules[f.name].doc == f.doc


def test_block_defaults_are_the_ones_the_builders_had():
    """Representative values of the builders before the schema (same values, order and None-able fields)."""
    model, prompt, sft, rl, mesh = B.model_block(), B.prompt_block(), B.sft_block(), B.rl_block(), B.mesh_block()
    assert sft.learning_rate == 1e-3 and sft.num_steps == 200 and sft.grounding_instruction == "Tap on '{label}'."
    assert rl.dual_clip == 3.0 and rl.require_thought is None and rl.kl_coef == 1e-4 and rl.num_rollouts == 4
    assert prompt.max_ui_lines == 40 and prompt.ui_text_class is True and prompt.dialect == "ui_s1"
    assert prompt.answer_spaced is False   # answers as written; a base pretrained spaced records it
    assert model.max_pixels == 28 * 28 * 1280 and model.tokenizer == "auto" and B.model_block("7b").preset == "7b"
    assert mesh.fsdp == -1 and mesh.compute_dtype == "bfloat16" and "remat" not in mesh
    assert list(model._fields)[:3] == ["preset", "checkpoint", "num_hidden_layers"]
    assert list(sft._fields)[-4:] == ["copy_warmup_steps", "copy_warmup_batch", "copy_warmup_length",
                                      "stop_after_steps"]
    assert rl.text_match == "substring" and rl.merge_duplicates is True  # UI-S1's matcher; an exact speed-up
    assert rl.revisit_uniform == 1.0 and rl.drop_cancelled is False  # selective rollouts off; cancelled steps kept
    assert rl.template_sampling == "uniform" and rl.template_sampling_floor == 0.2  # the plain shuffled draw
    assert rl.offline_reward == "rule" and rl.rm_checkpoint_dir == "" and rl.rm_scorer == "policy_likelihood"
    assert sft.micro_rows == rl.micro_rows == "fixed" and model.sample_batch_buckets == "powers_of_4"
    assert [len(b) for b in (model, prompt, sft, rl, mesh)] == [19, 19, 23, 48, 11]
    # None-able fields are typed FieldReferences: None and back, and no other type
    rl.dual_clip = None
    rl.dual_clip = 2.0
    sft.stop_after_steps = 5
    with pytest.raises(TypeError):
        rl.dual_clip = "off"
    assert isinstance(B.rl_block()._fields["require_thought"], ml_collections.FieldReference)
    # the online block: rl's shared fields first, then the algorithm's hook on the declared defaults
    grpo, ada, ppo = online_block("grpo"), online_block("adagrpo"), online_block("ppo")
    assert list(grpo._fields)[:2] == ["seed", "iterations"] and len(grpo) == 62
    assert grpo.fcf is False and ada.fcf is True and ppo.kl_coef == 0.0 and ada.kl_coef == 1e-4
    assert ada.num_rollouts == 8 and ada.curriculum_switch_iterations == (50, 100) and ada.dual_clip == 3.0
    assert env_block().resolution == (540, 1200) and env_block().server_urls == ()


def test_name_lists_of_the_declarations_equal_their_sources():
    from gui_jax.models.sharding import RULE_TABLES
    from gui_jax.train.online.builtin_algorithms import algorithm_names
    assert set(B.MESH_RULES) == set(RULE_TABLES)
    assert {"grpo", "adagrpo", "ppo"} <= set(algorithm_names())


def test_help_lists_every_declared_field_of_the_recipe_with_its_doc():
    """`python -m gui_jax.main --config configs/adagrpo.py --help` (an override applied)."""
    p = subprocess.run([sys.executable, "-m", "gui_jax.main", "--config", "configs/adagrpo.py", "--help",
                        "--config.online.spa=False"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = {ln.strip().split(" = ", 1)[0]: ln.strip() for ln in p.stdout.splitlines() if " = " in ln}
    from gui_jax.core.recipe_files import load_python_file
    config = load_python_file(str(ROOT / "configs" / "adagrpo.py")).get_config()
    config.online.spa = False
    checked = 0
    for block in ("model", "prompt", "sft", "online", "env"):
        for f in DECLARED[block]:
            if f.name not in config[block]:
                continue
            path = f"{block}.{f.name}"
            assert path in lines, f"--help does not list {path}"
            assert lines[path].startswith(f"{path} = {config[block][f.name]!r}"), lines[path]
            assert lines[path].endswith(f"# {f.doc}"), lines[path]
            checked += 1
    assert checked >= 120 and lines["online.spa"].startswith("online.spa = False")
    assert "data.split = 'instance'" in lines["data.split"] and "init.checkpoint_dir" in lines
