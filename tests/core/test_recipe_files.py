"""Recipe files load by path in one place: get_config with and without ':arg', clear errors."""
import pytest

from gui_jax.core.recipe_files import load_python_file, recipe_config


def test_recipe_config_passes_the_arg_and_loads_a_fresh_module(tmp_path):
    path = tmp_path / "recipe.py"
    path.write_text("CALLS = []\ndef get_config(arg='none'):\n    CALLS.append(arg)\n    return {'arg': arg, 'n': len(CALLS)}\n")
    assert recipe_config(str(path)) == {"arg": "none", "n": 1}
    assert recipe_config(f"{path}:7b") == {"arg": "7b", "n": 1}      # a fresh module: CALLS starts empty again
    assert load_python_file(str(path)).CALLS == []


def test_missing_file_and_missing_get_config_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        recipe_config(str(tmp_path / "nope.py"))
    bare = tmp_path / "bare.py"
    bare.write_text("X = 1\n")
    with pytest.raises(AttributeError, match="bare.py defines no get_config"):
        recipe_config(str(bare))


def test_shipped_quickstart_recipe_loads():
    config = recipe_config("configs/quickstart.py")
    assert config.job == "quickstart" and config.sft.num_steps > 0
