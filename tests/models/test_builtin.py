"""Built-in model directories: `builtin:<name>` resolves to the shipped folder after a checksum check; unknown
names, missing files and damaged files are one-line errors naming what is wrong."""
import json
import os

import pytest

from gui_jax.models.builtin import BUILTIN_MODELS, directory_problem, resolve_checkpoint, write_checksums


def _fake_install(root):
    folder = os.path.join(root, BUILTIN_MODELS["tiny-base"][0])
    os.makedirs(folder)
    for name, data in (("config.json", b'{"model_type": "qwen2_5_vl"}'), ("model.safetensors", b"\x00" * 64),
                       ("tokenizer.model", b"sp")):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    sums = write_checksums(folder)
    return folder, sums


def test_builtin_name_resolves_to_the_checked_folder(tmp_path):
    folder, sums = _fake_install(str(tmp_path))
    assert sorted(sums) == ["config.json", "model.safetensors", "tokenizer.model"]
    assert json.load(open(os.path.join(folder, "checksums.json"))) == sums
    assert resolve_checkpoint("builtin:tiny-base", root=str(tmp_path)) == folder
    assert resolve_checkpoint("/some/hf/dir", root=str(tmp_path)) == "/some/hf/dir"   # not a built-in: as given
    assert resolve_checkpoint("", root=str(tmp_path)) == ""


def test_unknown_missing_and_damaged_builtins_fail_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="unknown built-in model; known: builtin:tiny-base"):
        resolve_checkpoint("builtin:huge-base", root=str(tmp_path))
    with pytest.raises(ValueError, match="tiny_base is missing; reinstall gui_jax, or rebuild it with"):
        resolve_checkpoint("builtin:tiny-base", root=str(tmp_path))
    folder, _ = _fake_install(str(tmp_path))
    with open(os.path.join(folder, "model.safetensors"), "r+b") as f:
        f.write(b"\x01")
    with pytest.raises(ValueError, match=r"model.safetensors is damaged \(sha256 differs") as err:
        resolve_checkpoint("builtin:tiny-base", root=str(tmp_path))
    assert "\n" not in str(err.value)
    write_checksums(folder)                       # accept the change, then lose a file
    os.remove(os.path.join(folder, "tokenizer.model"))
    assert directory_problem(folder).endswith("tokenizer.model is missing")


def test_config_check_reports_a_bad_builtin_before_running():
    from gui_jax.config_check import hf_dir_rule
    rule = hf_dir_rule("doc")
    assert "unknown built-in model" in rule.check("builtin:nope")
    assert rule.check("") is None


def test_the_shipped_base_trains_with_float32_masters_and_its_own_shape():
    """The base ships in bfloat16; an agent loads it as float32 masters (an Adam step of lr 1e-4 is below half a
    bfloat16 ulp of a weight of 0.05, so bf16 masters would drop it), and a preset override of its depth is an
    error naming the checkpoint's value."""
    import jax
    import jax.numpy as jnp
    import ml_collections

    from gui_jax.config_check import ConfigError, check_config
    from gui_jax.rl.agent import Agent
    from gui_jax.train.config_blocks import model_block
    w = jnp.asarray(0.05, jnp.bfloat16)
    assert w + jnp.asarray(1e-4, jnp.bfloat16) == w            # the update a bf16 master loses
    m = model_block()
    m.checkpoint = "builtin:tiny-base"
    agent = Agent(ml_collections.ConfigDict({"model": m}), seed=0)
    assert {str(x.dtype) for x in jax.tree.leaves(agent.copy_params())} == {"float32"}
    m.num_hidden_layers = 3                                      # the base's own depth: accepted
    check_config(ml_collections.ConfigDict({"job": "evaluate", "model": m}))
    m.num_hidden_layers = 1
    with pytest.raises(ConfigError, match="has num_hidden_layers = 3, and a checkpoint fixes the model's shape"):
        check_config(ml_collections.ConfigDict({"job": "evaluate", "model": m}))
    m.num_hidden_layers, m.rope_theta = 0, 10000.0               # the base's own RoPE base: accepted
    check_config(ml_collections.ConfigDict({"job": "evaluate", "model": m}))
    m.rope_theta = 1e6
    with pytest.raises(ConfigError, match="has rope_theta = 10000, and a checkpoint fixes the model's shape and RoPE"):
        check_config(ml_collections.ConfigDict({"job": "evaluate", "model": m}))


def test_the_shipped_cards_phases_chain_from_random_weights_to_the_exported_update():
    """The card's phases cover updates 1..N without a gap or overlap, each later phase starting from the update
    the one before ended at, and N is the update gui_jax_export.json records: the card describes these weights."""
    import re
    from gui_jax.jobs.pretrain import card_phases
    folder = resolve_checkpoint("builtin:tiny-base")
    phases = card_phases(open(os.path.join(folder, "README.md")).read())
    spans = [tuple(int(x.replace(",", "")) for x in re.match(r"### Phase \d+ \(updates ([\d,]+)-([\d,]+),", p).groups())
             for p in phases]
    assert spans[0][0] == 1 and "from random weights" in phases[0].splitlines()[0]
    for (_, end), (start, _), text in zip(spans, spans[1:], phases[1:]):
        assert start == end + 1 and f"from the update-{end:,} snapshot" in text.splitlines()[0], text.splitlines()[0]
    steps = json.load(open(os.path.join(folder, "gui_jax_export.json")))["source"]["steps"]
    assert spans[-1][1] == steps


def test_width_and_head_overrides_build_a_wider_preset_whose_vision_output_follows():
    """model.hidden_size / num_attention_heads / num_key_value_heads widen the preset's text stack (the shape
    pretrain.grow_from grows a snapshot into); the vision tower's output width follows the text's."""
    from gui_jax.rl.agent import model_config_from
    from gui_jax.train.config_blocks import model_block
    m = model_block()
    m.hidden_size, m.num_attention_heads, m.num_key_value_heads = 192, 6, 3
    cfg = model_config_from(m)
    assert (cfg.text.hidden_size, cfg.text.num_attention_heads, cfg.text.num_key_value_heads,
            cfg.text.head_dim, cfg.vision.out_hidden_size) == (192, 6, 3, 32, 192)
    assert cfg.vision.hidden_size == model_config_from(model_block()).vision.hidden_size


def test_rope_theta_override_builds_the_preset_with_that_base_and_exports_it():
    """model.rope_theta sets the random-init preset's text RoPE base (0 keeps the preset's), and the Hugging Face
    config a run exports carries it back to the loader."""
    from gui_jax.models.qwen2_5_vl.config import Qwen25VLConfig
    from gui_jax.rl.agent import model_config_from
    from gui_jax.train.config_blocks import model_block
    m = model_block()
    assert model_config_from(m).text.rope_theta == 10000.0
    m.rope_theta = 1e6
    cfg = model_config_from(m)
    assert cfg.text.rope_theta == 1e6
    assert cfg.text.num_hidden_layers == model_config_from(model_block()).text.num_hidden_layers
    assert Qwen25VLConfig.from_hf_dict(cfg.to_hf_dict()).text.rope_theta == 1e6
