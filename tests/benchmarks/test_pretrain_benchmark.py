"""benchmarks/pretrain.py's --set: recipe fields overridden by value type, an unknown field a one-line error."""
import pytest

from benchmarks.pretrain import apply_settings
from gui_jax.core.recipe_files import recipe_config


def test_set_overrides_fields_with_literal_values():
    config = apply_settings(recipe_config("configs/pretrain_tiny.py"),
                            ["pretrain.batch_size=256", "pretrain.mix=tap:1", "model.num_hidden_layers=3",
                             "pretrain.pointer_weight=0.1"])
    assert config.pretrain.batch_size == 256 and config.pretrain.mix == "tap:1"
    assert config.model.num_hidden_layers == 3 and config.pretrain.pointer_weight == 0.1


@pytest.mark.parametrize("item", ["pretrain.batch_sise=256", "pretrain.batch_size", "nothing.batch_size=1"])
def test_set_names_a_bad_field(item):
    with pytest.raises(SystemExit, match=f"--set '{item}'"):
        apply_settings(recipe_config("configs/pretrain_tiny.py"), [item])
