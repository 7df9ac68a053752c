"""Growing a trained model (models/qwen2_5_vl/grow.py): the larger model computes the same logits, keeps every
old weight in place, starts its new layers as the identity (zero residual writers, random readers), and refuses
what cannot grow with the parameter named."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from gui_jax.models.qwen2_5_vl import Qwen25VLForConditionalGeneration, tiny
from gui_jax.models.qwen2_5_vl.grow import grow_params


def _model(layers: int, inter: int, seed: int, kv_heads: int = 2, hidden: int = 128, heads: int = 4,
           eps: float = 1e-6):
    cfg = tiny()
    text = dataclasses.replace(cfg.text, num_hidden_layers=layers, intermediate_size=inter,
                               num_key_value_heads=kv_heads, hidden_size=hidden, num_attention_heads=heads,
                               rms_norm_eps=eps)
    vision = dataclasses.replace(cfg.vision, out_hidden_size=hidden)
    return Qwen25VLForConditionalGeneration(cfg.replace(text=text, vision=vision), rngs=nnx.Rngs(seed))


def _trained_like(model, seed: int):
    """Weights at a trained scale (std 0.1, norms off 1), so that a copy error could not hide under the init."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    keys = iter(jax.random.split(jax.random.key(seed), len(jax.tree.leaves(params))))
    params = jax.tree.map(lambda x: x + 0.1 * jax.random.normal(next(keys), x.shape, x.dtype), params)
    return nnx.merge(graphdef, params, rest)


def test_grown_model_computes_the_same_logits_and_keeps_the_old_weights():
    small = _trained_like(_model(2, 384, seed=0), seed=1)
    big = _model(4, 640, seed=2)
    graphdef, fresh, rest = nnx.split(big, nnx.Param, ...)
    grown = grow_params(nnx.state(small, nnx.Param), fresh)
    big = nnx.merge(graphdef, grown, rest)
    ids = jax.random.randint(jax.random.key(3), (2, 37), 0, 4000)
    want, got = small(ids).logits, big(ids).logits
    assert float(jnp.abs(want).max()) > 1.0                  # not a degenerate comparison
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)

    layers = grown["language_model"]["layers"]
    old = nnx.state(small, nnx.Param)["language_model"]["layers"]
    np.testing.assert_array_equal(layers[1]["self_attn"]["q_proj"]["kernel"][...],
                                  old[1]["self_attn"]["q_proj"]["kernel"][...])
    # the widened MLP: old units in place, new units read at random and write nothing
    np.testing.assert_array_equal(layers[0]["mlp"]["up_proj"]["kernel"][...][:, :384],
                                  old[0]["mlp"]["up_proj"]["kernel"][...])
    assert float(jnp.std(layers[0]["mlp"]["up_proj"]["kernel"][...][:, 384:])) > 0.01
    assert not np.any(np.asarray(layers[0]["mlp"]["down_proj"]["kernel"][...][384:]))
    # new layers: zero writers, random readers (so the writers get a gradient at the first update)
    for i in (2, 3):
        assert not np.any(np.asarray(layers[i]["self_attn"]["o_proj"]["kernel"][...]))
        assert not np.any(np.asarray(layers[i]["mlp"]["down_proj"]["kernel"][...]))
        assert float(jnp.std(layers[i]["self_attn"]["q_proj"]["kernel"][...])) > 0.01
        assert float(jnp.std(layers[i]["mlp"]["gate_proj"]["kernel"][...])) > 0.01


def _grown_same_logits(small, big, atol: float = 2e-5):
    """(grown params of `big`'s shape holding `small`'s, big's fresh params), after checking that the grown model's
    logits are the small model's."""
    graphdef, fresh, rest = nnx.split(big, nnx.Param, ...)
    grown = grow_params(nnx.state(small, nnx.Param), fresh, head_dim=32)
    ids = jax.random.randint(jax.random.key(3), (2, 37), 0, 4000)
    want, got = small(ids).logits, nnx.merge(graphdef, grown, rest)(ids).logits
    assert float(jnp.abs(want).max()) > 1.0
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=atol)
    return grown, fresh


def test_more_key_value_heads_keep_the_logits_each_a_copy_of_the_head_its_queries_shared():
    small = _trained_like(_model(2, 384, seed=0), seed=1)
    grown, fresh = _grown_same_logits(small, _model(2, 384, seed=2, kv_heads=4))
    old = nnx.state(small, nnx.Param)["language_model"]["layers"][1]["self_attn"]
    new = grown["language_model"]["layers"][1]["self_attn"]
    for proj in ("k_proj", "v_proj"):   # query heads 0, 1 read old head 0; 2, 3 old head 1 -> new heads 0-3
        k_old, k_new = np.asarray(old[proj]["kernel"][...]), np.asarray(new[proj]["kernel"][...])
        for j, i in enumerate((0, 0, 1, 1)):
            np.testing.assert_array_equal(k_new[:, 32 * j:32 * (j + 1)], k_old[:, 32 * i:32 * (i + 1)])
        np.testing.assert_array_equal(np.asarray(new[proj]["bias"][...])[64:96],
                                      np.asarray(old[proj]["bias"][...])[32:64])
    with pytest.raises(ValueError, match=r"k_proj.*needs the head width"):
        grow_params(nnx.state(small, nnx.Param), fresh)


@pytest.mark.parametrize("kv_before, kv_after", [(4, 6), (2, 3)])
def test_a_wider_residual_stream_with_more_heads_keeps_the_logits(kv_before, kv_after):
    """hidden 128 -> 192 with heads 4 -> 6 (head width 32) and a wider MLP, one more layer: the new residual
    dimensions start at zero and every norm scale times sqrt(128 / 192), so the logits are the small model's; the
    old heads keep their key/value heads (same ratio), the new ones read at random and write nothing."""
    # the norms' epsilon is the one inexact part (added to a mean square the zeros made 2/3 as large): 0 here
    small = _trained_like(_model(2, 384, seed=0, kv_heads=kv_before, eps=0.0), seed=1)
    grown, _ = _grown_same_logits(small, _model(3, 576, seed=2, kv_heads=kv_after, hidden=192, heads=6, eps=0.0),
                                  atol=5e-5)
    old = nnx.state(small, nnx.Param)
    lm, lm_old = grown["language_model"], old["language_model"]
    assert not np.any(np.asarray(lm["embed_tokens"][...])[:, 128:])
    np.testing.assert_allclose(np.asarray(lm["norm"]["scale"][...])[:128],
                               np.asarray(lm_old["norm"]["scale"][...]) * (128 / 192) ** 0.5, rtol=1e-6)
    attn = lm["layers"][0]["self_attn"]
    assert not np.any(np.asarray(attn["o_proj"]["kernel"][...])[128:])          # new heads write nothing
    assert float(jnp.std(attn["q_proj"]["kernel"][...][:, 128:])) > 0.01        # and read at random
    np.testing.assert_array_equal(np.asarray(attn["k_proj"]["kernel"][...])[:128, :32 * kv_before],
                                  np.asarray(lm_old["layers"][0]["self_attn"]["k_proj"]["kernel"][...]))
    out, out_old = grown["visual"]["merger"]["mlp_out"], old["visual"]["merger"]["mlp_out"]
    np.testing.assert_array_equal(np.asarray(out["kernel"][...])[:, :128], np.asarray(out_old["kernel"][...]))
    assert not np.any(np.asarray(out["kernel"][...])[:, 128:]) and not np.any(np.asarray(out["bias"][...])[128:])


def test_what_cannot_grow_is_named():
    small = nnx.state(_model(2, 384, seed=0), nnx.Param)
    with pytest.raises(ValueError, match=r"no parameter .*layers.*\[1\]"):
        grow_params(small, nnx.state(_model(1, 384, seed=0), nnx.Param))
    wider_vision = jax.tree_util.tree_map_with_path(  # the vision tower's own width may not grow
        lambda p, x: jnp.zeros((1176, 96)) if "patch_embed" in jax.tree_util.keystr(p) else x, small)
    with pytest.raises(ValueError, match=r"cannot grow .*patch_embed.*\(1176, 64\) -> \(1176, 96\)"):
        grow_params(small, wider_vision)
    with pytest.raises(ValueError, match=r"2 query heads per key/value head become 1"):
        grow_params(small, nnx.state(_model(2, 384, seed=0, kv_heads=6, hidden=192, heads=6), nnx.Param), 32)
    with pytest.raises(ValueError, match=r"cannot grow .*down_proj.*\(512, 128\) -> \(384, 128\)"):
        grow_params(nnx.state(_model(2, 512, seed=0), nnx.Param), small)
