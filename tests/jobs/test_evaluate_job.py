"""The evaluate job restores a training stage's params from its Orbax checkpoints exactly."""
import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.jobs.evaluate import load_stage_params
from gui_jax.train.checkpoint import Checkpointer
from gui_jax.train.state import init_train_state, make_optimizer


def test_load_stage_params_round_trip(tmp_path):
    params = {"layer": {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}, "emb": jnp.full((4, 2), 2.5)}
    state = init_train_state(params, make_optimizer(1e-3, warmup_steps=2), seed=0)
    ck = Checkpointer(str(tmp_path / "ck"))
    ck.save(state, {"data": {"next_index": 1}}, force=True)
    ck.close()
    restored = load_stage_params(None, str(tmp_path / "ck"))
    got = jax.tree.leaves(restored)
    want = jax.tree.leaves(params)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
