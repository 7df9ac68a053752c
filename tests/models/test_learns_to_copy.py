"""The tiny text model learns in-context copying (an induction task) within 120 Adam steps.

A sequence is 16 random symbols followed by the same 16 again; only the second half's tokens can be
predicted, and only by looking back. Parity tests pin the forward pass to transformers; this pins that
training forms the look-back circuit (attention that cannot reach earlier tokens, or gradients that do
not reach the attention weights, fail it). The quickstart's element grounding needs a harder look-up of
the same kind (docs/algorithms.md §10).
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from gui_jax.models.qwen2_5_vl.config import tiny
from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration

HALF, BATCH, SYMBOLS = 16, 16, range(100, 164)


def test_tiny_model_learns_in_context_copying():
    model = Qwen25VLForConditionalGeneration(tiny(), rngs=nnx.Rngs(0))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(2e-3))
    opt_state = opt.init(params)

    def copy_half(p, ids):  # (mean NLL, accuracy) on the repeated half's predictions
        logits = nnx.merge(graphdef, p, rest)(ids).logits[:, HALF - 1:-1].astype(jnp.float32)
        target = ids[:, HALF:]
        nll = -jnp.take_along_axis(jax.nn.log_softmax(logits), target[..., None], -1)[..., 0]
        return nll.mean(), (jnp.argmax(logits, -1)[:, 1:] == target[:, 1:]).mean()

    @jax.jit
    def step(p, o, ids):
        (loss, acc), g = jax.value_and_grad(copy_half, has_aux=True)(p, ids)
        updates, o = opt.update(g, o, p)
        return optax.apply_updates(p, updates), o, loss, acc

    rng = np.random.default_rng(0)
    draw = lambda: jnp.asarray(np.tile(rng.integers(SYMBOLS.start, SYMBOLS.stop, size=(BATCH, HALF)), 2))
    _, acc0 = copy_half(params, draw())
    for _ in range(120):
        params, opt_state, loss, acc = step(params, opt_state, draw())
    _, held_out = copy_half(params, draw())
    # the first repeated token is not copyable (a new symbol each time); the other 15 are
    assert float(acc0) < 0.05 and float(held_out) > 0.95, (float(acc0), float(held_out))
