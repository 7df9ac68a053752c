"""benchmarks/aot.py's recipe handling (no TPU compiler needed): which recipes are paper-scale, their layouts'
topologies, the RL block and policy loss each recipe's train step uses, and the error for a missing field."""
import pytest

from benchmarks import aot
from gui_jax.core.recipe_files import recipe_config
from gui_jax.rl.losses import combine_loss, get_policy_loss
from gui_jax.train.online.builtin_algorithms import get_algorithm


def test_every_recipe_with_layouts_runs_on_each_layouts_topology():
  found = dict(aot.paper_scale_recipes())
  assert found == {
      "configs/adagrpo_7b.py": [("v5p-128", "v5p:4x4x4"), ("v5p-64", "v5p:4x4x2")],
      "configs/grpo_online_7b.py": [("v5p-128", "v5p:4x4x4"), ("v5p-64", "v5p:4x4x2")],
      "configs/ui_s1_32b.py": [("v5p-128", "v5p:4x4x4")],
      "configs/ui_s1_7b.py": [("v5e-256", "v5e:16x16"), ("v5p-128", "v5p:4x4x4"), ("v5p-64", "v5p:4x4x2")]}


def test_online_layouts_are_the_ui_s1_7b_layouts_with_the_batch_in_online():
  base = recipe_config("configs/ui_s1_7b.py")
  for spec in ("configs/grpo_online_7b.py", "configs/adagrpo_7b.py"):
    c = recipe_config(spec)
    for name in ("v5p-64", "v5p-128"):
      assert c.layouts[name].mesh.to_dict() == base.layouts[name].mesh.to_dict()
      assert c.layouts[name].online.micro_batch_size == base.layouts[name].rl.micro_batch_size
  # v5p-128 is v5p-64 on twice the chips: one row and one FSDP shard per chip either way
  lay = base.layouts["v5p-128"]
  assert (lay.chips, lay.mesh.fsdp, lay.mesh.sampler_data, lay.rl.micro_batch_size) == (64, 64, 16, 64)
  c = recipe_config("configs/grpo_online_7b.py:ppo,v5p-128")
  assert (c.online.algorithm, c.layout, c.mesh.fsdp, c.online.micro_batch_size) == ("ppo", "v5p-128", 64, 64)
  assert recipe_config("configs/adagrpo_7b.py:v5p-64").online.micro_batch_size == 32


def test_rl_block_and_policy_loss():
  block, cfg, loss = aot.rl_settings(recipe_config("configs/ui_s1_7b.py"), "ui_s1_7b")
  assert block == "rl" and loss is combine_loss
  for spec, algo in (("configs/grpo_online_7b.py", "grpo"), ("configs/adagrpo_7b.py", "adagrpo")):
    block, cfg, loss = aot.rl_settings(recipe_config(spec), spec)
    assert block == "online" and cfg.algorithm == algo
    assert loss is get_policy_loss(get_algorithm(algo).policy_loss)


def test_missing_rl_field_names_recipe_and_field():
  config = recipe_config("configs/grpo_online_7b.py")
  with config.unlocked():
    del config.online["clip_low"]
  with pytest.raises(ValueError, match=r"my_recipe.py: config\.online\.clip_low is missing"):
    aot.rl_settings(config, "my_recipe.py")
  config = recipe_config("configs/ui_s1_7b.py")
  with config.unlocked():
    del config.rl["micro_batch_size"]
  with pytest.raises(ValueError, match=r"ui_s1_7b.py: config\.rl\.micro_batch_size is missing"):
    aot.rl_settings(config, "ui_s1_7b.py")


def test_layout_topology_names():
  assert aot.layout_topology("v5p-64", 32) == "v5p:4x4x2"
  assert aot.layout_topology("v5e-256", 256) == "v5e:16x16"
  with pytest.raises(ValueError, match="no known v5p slice shape for 3 chips"):
    aot.layout_topology("v5p-6", 3)


def test_online_7b_recipes_take_the_ui_s1_memory_settings():
  base = recipe_config("configs/ui_s1_7b.py").model
  for spec in ("configs/grpo_online_7b.py", "configs/adagrpo_7b.py"):
    model = recipe_config(spec).model
    assert [model[k] for k in ("remat_policy", "scan_layers", "vision_per_row")] == \
        [base[k] for k in ("remat_policy", "scan_layers", "vision_per_row")] == ["full", True, True]
