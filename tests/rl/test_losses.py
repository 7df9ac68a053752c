import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gui_jax.rl import losses as L

TOL = 1e-6


def test_policy_loss_branches_hand_values():
    # ratios: e^0.5 (clip branch for A>0), e^-0.5 (clip branch for A<0), 1.0, e^2 (dual-clip for A<0).
    logp = jnp.array([[0.5, -0.5, 0.0, 2.0]])
    old = jnp.zeros((1, 4))
    adv = jnp.array([[1.0, -1.0, 2.0, -1.0]])
    mask = jnp.ones((1, 4))
    terms = L.policy_loss_per_token(logp, old, adv, dual_clip=3.0)
    # token 0: max(-e^.5, -1.2) = -1.2 ; token 1: max(e^-.5, 0.8)=0.8 ; token 2: -2 ;
    # token 3: max(e^2, 1.2) = e^2 = 7.389 > 3 -> dual clip gives 3.
    np.testing.assert_allclose(terms["loss"][0], [-1.2, 0.8, -2.0, 3.0], atol=TOL)
    np.testing.assert_allclose(terms["clipped"][0], [1, 1, 0, 0])
    np.testing.assert_allclose(terms["dual_clipped"][0], [0, 0, 0, 1])
    # without dual clip token 3 is e^2
    nodual = L.policy_loss_per_token(logp, old, adv)
    np.testing.assert_allclose(nodual["loss"][0, 3], math.exp(2.0), rtol=1e-6)
    s, d = L.policy_loss(logp, old, adv, mask, dual_clip=3.0)
    assert float(d) == 4.0
    np.testing.assert_allclose(float(s), -1.2 + 0.8 - 2.0 + 3.0, atol=1e-5)


def test_asymmetric_clip_and_mask():
    logp = jnp.array([[0.4, 0.4, 9.0]])
    old = jnp.zeros((1, 3))
    adv = jnp.array([[1.0, 1.0, 5.0]])
    mask = jnp.array([[1, 1, 0]])
    s, d = L.policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28)
    assert float(d) == 2.0
    np.testing.assert_allclose(float(s), -2 * 1.28, atol=1e-6)


def test_log_ratio_clipped_at_20():
    ratio, lr = L.ratio_and_log_ratio(jnp.array([[100.0, -100.0]]), jnp.zeros((1, 2)))
    np.testing.assert_allclose(lr[0], [20.0, -20.0])
    np.testing.assert_allclose(ratio[0], [math.exp(20.0), math.exp(-20.0)], rtol=1e-6)


# rows: row 0 holds two steps (ids 0: 2 tokens, 1: 1 token), row 1 one step with 3 tokens; padding has mask 0.
PER_TOKEN = jnp.array([[1.0, 3.0, 5.0, 7.0], [2.0, 4.0, 6.0, 100.0]])
MASK = jnp.array([[1, 1, 1, 0], [1, 1, 1, 0]])
STEPS = jnp.array([[0, 0, 1, -1], [0, 0, 0, -1]])


def test_aggregations_hand_values():
    s, d = L.aggregate(PER_TOKEN, MASK, "token_mean")
    assert (float(s), float(d)) == (21.0, 6.0)
    s, d = L.aggregate(PER_TOKEN, MASK, "step_token_mean", STEPS)
    # steps: mean(1,3)=2, mean(5)=5, mean(2,4,6)=4 -> sum 11 over 3 steps
    np.testing.assert_allclose([float(s), float(d)], [11.0, 3.0], atol=TOL)
    s, d = L.aggregate(PER_TOKEN, MASK, "seq_mean_token_mean")
    # rows: mean(1,3,5)=3, mean(2,4,6)=4
    np.testing.assert_allclose([float(s), float(d)], [7.0, 2.0], atol=TOL)
    # no step ids -> each row is a step
    s, d = L.aggregate(PER_TOKEN, MASK, "step_token_mean")
    np.testing.assert_allclose([float(s), float(d)], [7.0, 2.0], atol=TOL)
    with pytest.raises(ValueError, match="aggregation"):
        L.aggregate(PER_TOKEN, MASK, "mean")


def test_step_token_mean_non_contiguous_steps_and_empty_rows():
    per = jnp.array([[1.0, 9.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]])
    mask = jnp.array([[1, 0, 1, 1], [0, 0, 0, 0]])
    steps = jnp.array([[2, 2, 0, 2], [0, 0, 0, 0]])  # step 2 split by a prompt token
    s, d = L.aggregate(per, mask, "step_token_mean", steps)
    np.testing.assert_allclose([float(s), float(d)], [2.5 + 3.0, 2.0], atol=TOL)
    s, d = L.aggregate(per, mask, "seq_mean_token_mean")
    np.testing.assert_allclose([float(s), float(d)], [8.0 / 3.0, 1.0], atol=TOL)


def test_kl_estimators_exact():
    logp = jnp.array([[-1.0, -2.0]])
    ref = jnp.array([[-1.5, -1.0]])
    np.testing.assert_allclose(L.kl_penalty(logp, ref, "kl")[0], [0.5, -1.0], atol=TOL)
    np.testing.assert_allclose(L.kl_penalty(logp, ref, "mse")[0], [0.125, 0.5], atol=TOL)
    # k3 = e^{ref-logp} - (ref-logp) - 1
    want = [math.exp(-0.5) + 0.5 - 1, math.exp(1.0) - 1.0 - 1]
    np.testing.assert_allclose(L.kl_penalty(logp, ref, "low_var_kl")[0], want, atol=TOL)
    assert float(L.kl_penalty(jnp.zeros((1, 1)), jnp.full((1, 1), 30.0), "low_var_kl")[0, 0]) == 10.0
    with pytest.raises(ValueError, match="KL estimator"):
        L.kl_penalty(logp, ref, "k4")
    s, d = L.kl_loss(logp, ref, jnp.array([[1, 0]]), kind="kl")
    assert (float(s), float(d)) == (0.5, 1.0)


def test_value_loss_clipped():
    values = jnp.array([[1.0, 0.0, 0.5]])
    old = jnp.array([[0.0, 0.0, 0.4]])
    ret = jnp.array([[2.0, 1.0, 0.5]])
    mask = jnp.ones((1, 3))
    s, d = L.value_loss(values, old, ret, mask, clip=0.2)
    # tok0: max((1-2)^2, (0.2-2)^2)=3.24 ; tok1: 1 ; tok2: max(0, (0.5-0.5)^2)=0
    np.testing.assert_allclose(float(s), 0.5 * (3.24 + 1.0), atol=1e-6)
    assert float(d) == 3.0
    s, _ = L.value_loss(values, old, ret, mask, clip=None)
    np.testing.assert_allclose(float(s), 0.5 * (1.0 + 1.0), atol=1e-6)


def test_entropy_from_logits():
    logits = jnp.array([[[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]]])
    s, d = L.entropy_from_logits(logits, jnp.array([[1, 1]]))
    np.testing.assert_allclose(float(s), math.log(4.0), atol=1e-5)
    assert float(d) == 2.0


def test_combine_loss_adds_kl_and_metrics():
    logp = jnp.array([[0.5, 0.0]])
    old = jnp.zeros((1, 2))
    ref = jnp.array([[0.0, -1.0]])
    adv = jnp.array([[1.0, 1.0]])
    mask = jnp.ones((1, 2))
    total, d, m = L.combine_loss(logp, old, adv, mask, ref_logp=ref, kl_coef=0.1, kl_kind="kl")
    np.testing.assert_allclose(float(total), (-1.2 - 1.0) + 0.1 * (0.5 + 1.0), atol=1e-6)
    fin = L.finalize_metrics([m])
    np.testing.assert_allclose(fin["clip_frac"], 0.5)
    np.testing.assert_allclose(fin["kl"], 0.75, atol=1e-6)
    np.testing.assert_allclose(fin["ratio_mean"], (math.exp(0.5) + 1) / 2, atol=1e-6)
    np.testing.assert_allclose(fin["ratio_std"], (math.exp(0.5) - 1) / 2, atol=1e-5)
    # k3 of KL(πold‖πθ) with lr = logπθ − logπold = (0.5, 0): (e^0.5 − 1 − 0.5 + 0)/2 = 0.0743606.
    np.testing.assert_allclose(fin["approx_kl"], 0.0743606, atol=1e-6)
    np.testing.assert_allclose(fin["approx_kl"], (math.exp(0.5) - 1 - 0.5) / 2, atol=1e-7)


@pytest.mark.parametrize("agg", L.AGGREGATIONS)
def test_micro_batch_split_matches_full_batch(agg):
    rng = np.random.default_rng(0)
    b, l = 4, 6
    old = jnp.asarray(rng.normal(size=(b, l)) * 0.3, jnp.float32)
    ref = jnp.asarray(rng.normal(size=(b, l)) * 0.3, jnp.float32)
    adv = jnp.asarray(rng.normal(size=(b, l)), jnp.float32)
    mask = jnp.asarray(rng.random((b, l)) < 0.7, jnp.float32)
    steps = jnp.asarray(rng.integers(0, 3, size=(b, l)), jnp.int32)
    theta = jnp.asarray(rng.normal(size=(b, l)) * 0.3, jnp.float32)

    def parts(th, sl):
        # logp depends on parameters theta so that the gradient is meaningful.
        total, denom, _ = L.combine_loss(th[sl], old[sl], adv[sl], mask[sl], ref_logp=ref[sl], kl_coef=0.05,
                                         dual_clip=3.0, agg=agg, step_ids=steps[sl])
        return total, denom

    full = lambda th: (lambda t, d: t / d)(*parts(th, slice(None)))
    loss_full, grad_full = jax.value_and_grad(full)(theta)

    slices = [slice(0, 1), slice(1, 3), slice(3, 4)]
    denom_global = sum(float(parts(theta, sl)[1]) for sl in slices)
    sums = [parts(theta, sl)[0] for sl in slices]
    grads = [jax.grad(lambda th, sl=sl: parts(th, sl)[0])(theta) for sl in slices]
    loss_mb = sum(float(x) for x in sums) / denom_global
    grad_mb = sum(grads) / denom_global
    np.testing.assert_allclose(loss_mb, float(loss_full), atol=1e-6)
    np.testing.assert_allclose(np.asarray(grad_mb), np.asarray(grad_full), atol=1e-6)


def test_jit_compatible():
    f = jax.jit(L.policy_loss, static_argnames=("agg", "dual_clip", "clip_low", "clip_high"))
    s, d = f(PER_TOKEN * 0.1, jnp.zeros((2, 4)), jnp.ones((2, 4)), MASK, agg="step_token_mean",
             step_ids=STEPS, dual_clip=3.0)
    s2, d2 = L.policy_loss(PER_TOKEN * 0.1, jnp.zeros((2, 4)), jnp.ones((2, 4)), MASK, agg="step_token_mean",
                           step_ids=STEPS, dual_clip=3.0)
    np.testing.assert_allclose([float(s), float(d)], [float(s2), float(d2)], atol=1e-6)
