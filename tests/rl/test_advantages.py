import math
import statistics

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gui_jax.rl import advantages as A

TOL = 1e-5
S2 = math.sqrt(0.5)


def test_registry():
    assert A.get_estimator("grpo_trajectory") is A.grpo_trajectory
    assert A.get_estimator("ui_s1_semi_online") is A.ui_s1_semi_online
    assert A.get_estimator("spa") is A.spa and A.get_estimator("gae") is A.gae
    with pytest.raises(KeyError, match="unknown advantage estimator 'nope'"):
        A.get_estimator("nope")
    with pytest.raises(KeyError, match="already registered"):
        A.register_estimator("gae", A.gae)


def test_grpo_uneven_groups_and_singletons():
    rewards = jnp.array([1.0, 0.0, 0.0, 1.0, 0.5, 2.0])
    groups = jnp.array([7, 3, 7, 7, 9, 3])
    adv = A.grpo_trajectory(rewards, groups)
    s = math.sqrt(1 / 3)  # ddof=1 std of {1, 0, 1}
    want = [(1 / 3) / s, -1 / math.sqrt(2), -(2 / 3) / s, (1 / 3) / s, 0.0, 1 / math.sqrt(2)]
    np.testing.assert_allclose(np.asarray(adv), want, atol=TOL)
    # constant group -> 0; jit works
    adv2 = jax.jit(A.grpo_trajectory)(jnp.array([1.0, 1.0, 1.0]), jnp.array([5, 5, 5]))
    np.testing.assert_allclose(np.asarray(adv2), 0.0, atol=TOL)
    # ddof=0 option
    adv0 = A.grpo_trajectory(jnp.array([1.0, 0.0]), jnp.array([1, 1]), ddof=0)
    np.testing.assert_allclose(np.asarray(adv0), [1.0, -1.0], atol=TOL)


def test_discounted_returns_gamma_half_with_and_without_cut():
    # trajectory 4: rewards [1, .5, 1, .2], step 2 mismatched; trajectory 9: [0, 1]. Shuffled input order.
    order = [3, 5, 0, 2, 4, 1]
    traj = np.array([4, 4, 4, 4, 9, 9])[order]
    step = np.array([0, 1, 2, 3, 0, 1])[order]
    rew = np.array([1.0, 0.5, 1.0, 0.2, 0.0, 1.0])[order]
    mm = np.array([0, 0, 1, 0, 0, 0], bool)[order]
    off = A.discounted_returns(jnp.asarray(rew), jnp.asarray(traj), jnp.asarray(step), jnp.asarray(mm),
                               gamma=0.5, cut_at_mismatch=False)
    on = A.discounted_returns(jnp.asarray(rew), jnp.asarray(traj), jnp.asarray(step), jnp.asarray(mm),
                              gamma=0.5, cut_at_mismatch=True)
    want_off = np.array([1.525, 1.05, 1.1, 0.2, 0.5, 1.0])[order]
    want_on = np.array([1.25, 0.5, 1.0, 0.2, 0.5, 1.0])[order]
    np.testing.assert_allclose(np.asarray(off), want_off, atol=1e-6)
    np.testing.assert_allclose(np.asarray(on), want_on, atol=1e-6)


def _std1(xs):
    return statistics.stdev(xs)


def test_discounted_returns_compile_once_per_length_bucket_and_match_a_loop():
    """Eager calls (the trainer's): lengths 70-100 share the 128 bucket, so the scan compiles once over six calls
    (a closure per call compiled on every call and grew the RL stage's memory); values equal a plain loop."""
    compiles = []

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration" and "scan" in kw.get("fun_name", ""):
            compiles.append(kw["fun_name"])
    jax.monitoring.register_event_duration_secs_listener(listener)
    rng = np.random.default_rng(0)
    try:
        for n in (70, 81, 99, 100, 70, 93):
            traj = np.sort(rng.integers(0, 20, n)).astype(np.int32)
            step = np.zeros(n, np.int32)
            for i in range(1, n):
                step[i] = step[i - 1] + 1 if traj[i] == traj[i - 1] else 0
            r = rng.random(n).astype(np.float32)
            got = np.asarray(A.discounted_returns(jnp.asarray(r), jnp.asarray(traj), jnp.asarray(step), gamma=0.5,
                                                  cut_at_mismatch=False))
            want = np.zeros(n, np.float32)
            for i in reversed(range(n)):
                nxt = want[i + 1] if i + 1 < n and traj[i + 1] == traj[i] else 0.0
                want[i] = r[i] + 0.5 * nxt
            np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert len(compiles) <= 1, compiles


def test_ui_s1_semi_online_hand_values():
    # task 10: traj 0 r=[1,1], traj 1 r=[1,0]; task 20: traj 2 r=[1], traj 3 r=[1,1,1], traj 4 r=[.1,0];
    # task 30: traj 5 r=[.5,.5] (single rollout).
    rows = [  # (traj, step, task, reward)
        (0, 0, 10, 1.0), (0, 1, 10, 1.0), (1, 0, 10, 1.0), (1, 1, 10, 0.0),
        (2, 0, 20, 1.0), (3, 0, 20, 1.0), (3, 1, 20, 1.0), (3, 2, 20, 1.0), (4, 0, 20, 0.1), (4, 1, 20, 0.0),
        (5, 0, 30, 0.5), (5, 1, 30, 0.5),
    ]
    perm = [7, 2, 11, 0, 5, 9, 1, 3, 10, 4, 8, 6]
    rows = [rows[i] for i in perm]
    traj, step, task, rew = (jnp.asarray(np.array(c)) for c in zip(*rows))
    out = A.ui_s1_semi_online(rew.astype(jnp.float32), traj, step, task, gamma=0.5, omega=1.0)
    got = {(int(t), int(s)): i for i, (t, s) in enumerate(zip(traj, step))}
    adv = np.asarray(out["advantages"])
    # task 10: step and episode advantages are all ±1/sqrt(2)·... = ±0.7071 each -> ±sqrt(2) combined.
    for t, sign in ((0, 1.0), (1, -1.0)):
        for s_ in (0, 1):
            np.testing.assert_allclose(adv[got[(t, s_)]], sign * math.sqrt(2), atol=TOL)
    # task 20 returns at step 0: traj2 1, traj3 1 + .5(1 + .5) = 1.75, traj4 .1
    r0 = [1.0, 1.75, 0.1]
    m0, s0 = sum(r0) / 3, _std1(r0)
    ep = [1.0, 3.0, 0.1]
    me, se = sum(ep) / 3, _std1(ep)
    for k, t in enumerate((2, 3, 4)):
        want = (ep[k] - me) / se + (r0[k] - m0) / s0
        np.testing.assert_allclose(adv[got[(t, 0)]], want, atol=TOL)
    np.testing.assert_allclose(out["returns"][got[(3, 0)]], 1.75, atol=1e-6)
    # step 1 of task 20: traj3 R=1.5, traj4 R=0 -> ±0.7071 ; step 2 only traj3 -> step adv 0
    np.testing.assert_allclose(out["step_adv"][got[(3, 1)]], S2, atol=TOL)
    np.testing.assert_allclose(out["step_adv"][got[(4, 1)]], -S2, atol=TOL)
    np.testing.assert_allclose(out["step_adv"][got[(3, 2)]], 0.0, atol=TOL)
    np.testing.assert_allclose(adv[got[(3, 2)]], (3.0 - me) / se, atol=TOL)
    # single-rollout task -> 0 everywhere
    np.testing.assert_allclose(adv[got[(5, 0)]], 0.0, atol=TOL)
    np.testing.assert_allclose(adv[got[(5, 1)]], 0.0, atol=TOL)
    # omega scales only the step term
    out2 = A.ui_s1_semi_online(rew.astype(jnp.float32), traj, step, task, gamma=0.5, omega=0.0)
    np.testing.assert_allclose(np.asarray(out2["advantages"]), np.asarray(out["episode_adv"]), atol=1e-6)


def test_ui_s1_mismatch_changes_step_returns_not_episode_returns():
    traj = jnp.array([0, 0, 1, 1])
    step = jnp.array([0, 1, 0, 1])
    task = jnp.array([3, 3, 3, 3])
    rew = jnp.array([0.5, 1.0, 0.5, 1.0])
    mm = jnp.array([False, True, False, False])
    out = jax.jit(A.ui_s1_semi_online)(rew, traj, step, task, mm)
    np.testing.assert_allclose(np.asarray(out["returns"]), [0.5, 1.0, 1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(out["episode_adv"]), 0.0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(out["step_adv"]), [-S2, 0.0, S2, 0.0], atol=TOL)


def test_dynamic_sampling_keep():
    r0 = jnp.array([1.0, 1.0, 1.0, 0.0, 1.0, 0.7, 0.5, 0.8])
    g = jnp.array([1, 1, 1, 2, 2, 3, 4, 4])
    keep = A.dynamic_sampling_keep(r0, g, eta=0.3)
    np.testing.assert_array_equal(np.asarray(keep), [0, 0, 0, 1, 1, 1, 0, 0])


def test_spa_hand_values():
    success = jnp.array([1, 1, 0, 1, 0, 0])
    lengths = jnp.array([2, 4, 3, 5, 7, 1])
    groups = jnp.array([0, 0, 0, 0, 1, 1])  # group 1 has no success
    out = A.spa(success, lengths, groups, alpha=1.0)
    np.testing.assert_allclose(np.asarray(out["rewards"]), [1.0, 0.5, 0.0, 0.4, 0.0, 0.0], atol=1e-6)
    # step-weighted standardisation == standardising the expanded per-step list
    expanded = np.repeat([1.0, 0.5, 0.0, 0.4], [2, 4, 3, 5])
    m, s = expanded.mean(), expanded.std(ddof=1)
    want = (np.array([1.0, 0.5, 0.0, 0.4]) - m) / (s + 1e-6)
    np.testing.assert_allclose(np.asarray(out["advantages"])[:4], want, atol=TOL)
    np.testing.assert_allclose(np.asarray(out["advantages"])[4:], 0.0, atol=TOL)
    half = A.spa_rewards(success, lengths, groups, alpha=0.5)
    np.testing.assert_allclose(np.asarray(half)[:4], [1.0, 0.75, 0.0, 0.7], atol=1e-6)


def _naive_gae(r, v, n, gamma, lam):
    adv = np.zeros(len(r))
    last = 0.0
    for t in reversed(range(n)):
        delta = r[t] + gamma * v[t + 1] - v[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv


def test_gae_matches_naive_loop():
    rng = np.random.default_rng(1)
    b, t = 3, 5
    lengths = [5, 3, 1]
    r = rng.normal(size=(b, t)).astype(np.float32)
    v = rng.normal(size=(b, t + 1)).astype(np.float32)
    mask = np.zeros((b, t), np.float32)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        v[i, n + 1:] = 99.0  # garbage past the bootstrap slot must not leak
    adv, ret = A.gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(mask), gamma=0.9, lam=0.8)
    for i, n in enumerate(lengths):
        want = _naive_gae(r[i], v[i], n, 0.9, 0.8)
        np.testing.assert_allclose(np.asarray(adv[i]), want, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ret[i, :n]), want[:n] + v[i, :n], atol=1e-5)
    # [B, T] values -> terminal bootstrap 0
    adv2, _ = A.gae(jnp.asarray(r), jnp.asarray(v[:, :t]), jnp.ones((b, t)), gamma=1.0, lam=1.0)
    np.testing.assert_allclose(np.asarray(adv2[0]), np.cumsum(r[0][::-1])[::-1] - v[0, :t], atol=1e-5)


def test_token_gae_skips_prompt_tokens():
    rng = np.random.default_rng(2)
    r = rng.normal(size=(2, 7)).astype(np.float32)
    v = rng.normal(size=(2, 7)).astype(np.float32)
    mask = np.array([[0, 1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 0, 0, 0]], np.float32)
    adv, ret = A.token_gae(jnp.asarray(r), jnp.asarray(v), jnp.asarray(mask), gamma=0.95, lam=0.9)
    for i in range(2):
        idx = np.nonzero(mask[i])[0]
        vv = np.append(v[i, idx], 0.0)
        want = _naive_gae(r[i, idx], vv, len(idx), 0.95, 0.9)
        np.testing.assert_allclose(np.asarray(adv[i, idx]), want, atol=1e-5)
        assert np.all(np.asarray(adv[i])[mask[i] == 0] == 0)
        np.testing.assert_allclose(np.asarray(ret[i, idx]), want + v[i, idx], atol=1e-5)


def test_token_placement_helpers():
    step_ids = jnp.array([[-1, 0, 0, -1, 1, 1, 1], [0, 0, -1, -1, -1, -1, -1]])
    mask = jnp.array([[0, 1, 1, 0, 1, 1, 0], [1, 1, 0, 0, 0, 0, 0]])
    step_r = jnp.array([[2.0, 3.0], [5.0, 0.0]])
    tok = A.rewards_on_last_token(step_r, step_ids, mask)
    np.testing.assert_allclose(np.asarray(tok), [[0, 0, 2, 0, 0, 3, 0], [0, 5, 0, 0, 0, 0, 0]])
    bt = A.broadcast_to_tokens(step_r, step_ids, mask)
    np.testing.assert_allclose(np.asarray(bt), [[0, 2, 2, 0, 3, 3, 0], [5, 5, 0, 0, 0, 0, 0]])


def test_ui_s1_dense_matches_flat_and_index_ids():
    # 2 tasks x 2 rollouts x 3 steps with uneven valid lengths.
    rew = jnp.array([[[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], [[0.5, 0.2, 1.0], [0.1, 9.0, 9.0]]])
    mask = jnp.array([[[1, 1, 0], [1, 1, 0]], [[1, 1, 1], [1, 0, 0]]])
    mm = jnp.zeros(rew.shape, bool).at[1, 0, 1].set(True)
    dense = A.ui_s1_semi_online_dense(rew, mask, mm, gamma=0.5)
    rows = [(g * 2 + n, t, g, float(rew[g, n, t]), bool(mm[g, n, t]))
            for g in range(2) for n in range(2) for t in range(3) if mask[g, n, t]]
    traj, step, task, r, m = (jnp.asarray(np.array(c)) for c in zip(*rows))
    flat = A.ui_s1_semi_online(r.astype(jnp.float32), traj, step, task, m, gamma=0.5)
    got = np.asarray(dense["advantages"])[np.asarray(mask, bool)]
    np.testing.assert_allclose(got, np.asarray(flat["advantages"]), atol=1e-6)
    assert np.all(np.asarray(dense["advantages"])[~np.asarray(mask, bool)] == 0)
    # cut at mismatch in task 1 rollout 0: R = [0.5, 0.2, 1.0]
    np.testing.assert_allclose(np.asarray(dense["returns"][1, 0]), [0.5, 0.2, 1.0], atol=1e-6)
    np.testing.assert_array_equal(A.index_ids(["b", ("a", 1), "b", "c"]), [0, 1, 0, 2])


def test_ui_s1_semi_online_bucketed_equals_unpadded_and_compiles_once_per_bucket():
    """Padding to a power-of-two bucket (steps of their own trajectory and task) changes no real step's value:
    equal to the same math on the unpadded arrays, for step counts across buckets; counts within one bucket
    reuse one compiled program."""
    rng = np.random.default_rng(3)
    reference = A._ui_s1_semi_online_padded.__wrapped__
    for n_traj in (3, 21, 40, 41, 70):
        lens = rng.integers(1, 5, n_traj)
        traj = np.repeat(rng.permutation(1000)[:n_traj], lens).astype(np.int32)
        step = np.concatenate([np.arange(k) for k in lens]).astype(np.int32)
        task = (np.repeat(np.arange(n_traj), lens) // 4 + 7).astype(np.int32)
        rew = rng.random(len(traj)).astype(np.float32)
        mm = rng.random(len(traj)) < 0.2
        for level in ("paper", "code"):
            got = A.ui_s1_semi_online(rew, traj, step, task, mm, gamma=0.5, omega=0.7, episode_level=level)
            want = reference(jnp.asarray(rew), jnp.asarray(traj), jnp.asarray(step), jnp.asarray(task),
                             jnp.asarray(mm), gamma=0.5, omega=0.7, cut_at_mismatch=True, episode_level=level,
                             ddof=1, eps=A.EPS)
            for k in want:
                assert got[k].shape == (len(traj),)
                np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6, atol=1e-6)
    before = A._ui_s1_semi_online_padded._cache_size()
    for n in (65, 90, 128):                       # one bucket (128): one program
        A.ui_s1_semi_online(np.ones(n, np.float32), np.arange(n) // 2, np.arange(n) % 2, np.arange(n) // 8)
    assert A._ui_s1_semi_online_padded._cache_size() == before + 1
