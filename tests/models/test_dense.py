"""`dense`, the model's x @ w: on CPU it merges the leading axes into one matmul (the batched form's weight gradient
goes through slow transposing copies there); values and gradients must equal the batched product's."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gui_jax.models.qwen2_5_vl.layers import dense


@pytest.mark.parametrize("spec,w_shape", [("...i,io->...o", (5, 7)), ("...h,vh->...v", (7, 5))])
def test_dense_equals_the_batched_product_and_its_gradients(spec, w_shape):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((2, 3, 5)), jnp.float32)
    w = jnp.asarray(rng.standard_normal(w_shape), jnp.float32)
    dy = jnp.asarray(rng.standard_normal((2, 3, 7)), jnp.float32)
    np.testing.assert_allclose(dense(x, w, spec), jnp.einsum(spec, x, w), rtol=1e-6, atol=1e-6)
    ours = jax.grad(lambda x, w: (dense(x, w, spec) * dy).sum(), argnums=(0, 1))(x, w)
    ref = jax.grad(lambda x, w: (jnp.einsum(spec, x, w) * dy).sum(), argnums=(0, 1))(x, w)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # a 2-D input is already one matmul
    np.testing.assert_allclose(dense(x[0], w, spec), jnp.einsum(spec, x[0], w), rtol=1e-6, atol=1e-6)


def test_dense_runs_one_two_dimensional_matmul_on_cpu():
    assert jax.default_backend() == "cpu"
    jaxpr = jax.make_jaxpr(lambda x, w: dense(x, w, preferred_element_type=jnp.float32))(
        jnp.zeros((2, 3, 5), jnp.bfloat16), jnp.zeros((5, 7), jnp.bfloat16))
    dots = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert len(dots) == 1
    assert [v.aval.shape for v in dots[0].invars] == [(6, 5), (5, 7)]
    assert jaxpr.out_avals[0].shape == (2, 3, 7) and jaxpr.out_avals[0].dtype == jnp.float32


def test_the_batched_form_is_what_benchmarks_time_beside_it(monkeypatch):
    from gui_jax.models.qwen2_5_vl import layers
    monkeypatch.setattr(layers, "MERGED_DENSE_BACKENDS", ())     # benchmarks/train_step.py's reference form
    jaxpr = jax.make_jaxpr(dense)(jnp.zeros((2, 3, 5)), jnp.zeros((5, 7)))
    dots = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "dot_general"]
    assert [v.aval.shape for v in dots[0].invars] == [(2, 3, 5), (5, 7)]
