"""Online algorithms are registered by name: a toy algorithm defined in this file alone (its own group
advantage, its own REINFORCE loss, its own config defaults and check) trains through `train_online` on
PhoneSim, and an unknown `online.algorithm` is a one-line error listing the registered names."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gui_jax.envs.sim import make_task
from gui_jax.rl import advantages, algorithms, losses
from gui_jax.rl.algorithms import OnlineAlgorithm, get_algorithm, register_algorithm
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.online import train_online
from gui_jax.train.online.config import env_block, online_block, validate_online
from support.oracle_policy import DIALECT, EncodedOracle, oracle_prompt, small_agent

PCFG = PromptConfig(dialect=DIALECT, observation="ui_text")
TEMPLATES = ("settings.wifi_on", "clock.alarm_toggle", "music.play", "tasks.complete")
TOY = "toy_reinforce"
CALLS = []  # (rewards, group_ids, lengths, returned advantages) per call of the toy estimator


def toy_advantage(rewards, group_ids, *, lengths, cfg):
    """[N] toy_scale·(R − mean R of the group); rewards, group_ids, lengths [N]."""
    r = np.asarray(rewards, np.float32)
    g = np.asarray(group_ids)
    mean = np.array([r[g == k].mean() for k in g], np.float32)
    out = np.float32(cfg.toy_scale) * (r - mean)
    CALLS.append((r.copy(), g.copy(), np.asarray(lengths).copy(), out.copy()))
    return out


def toy_loss(logp, old_logp, advantages, mask, **unused):
    """REINFORCE −Σ A·log π over masked tokens [B, L] as (sum, token count, metrics); ignores the clip/KL args."""
    m = mask.astype(jnp.float32)
    pg, n = jnp.sum(-advantages * logp * m), jnp.sum(m)
    return pg, n, {"toy_pg": (pg, n), "toy_adv": (jnp.sum(advantages * m), n)}


def toy_defaults(c):
    c.kl_coef = 0.0       # no reference model: the toy loss has no KL term
    c.toy_scale = 2.0     # a field only this algorithm has


def toy_validate(c):
    if not c.toy_scale > 0:
        raise ValueError(f"online.toy_scale = {c.toy_scale!r}: expected > 0")


@pytest.fixture(scope="module")
def toy():
    advantages.register_group_advantage("toy_centered", toy_advantage)
    losses.register_policy_loss("toy_reinforce", toy_loss)
    algo = register_algorithm(TOY, OnlineAlgorithm(advantage="toy_centered", policy_loss="toy_reinforce",
                                                   defaults=toy_defaults, validate=toy_validate))
    yield algo
    # leave the registries as the other tests expect them
    algorithms.ONLINE_ALGORITHMS.pop(TOY)
    losses.POLICY_LOSSES.pop("toy_reinforce")
    advantages.GROUP_ADVANTAGES.pop("toy_centered")


def _cfg(algorithm):
    c = online_block(algorithm)
    c.iterations, c.episodes_per_iteration, c.num_rollouts, c.max_steps = 2, 2, 4, 4
    c.learning_rate, c.micro_batch_size, c.checkpoint_every = 1e-3, 8, 10
    c.recompute_old_logprobs = True   # the scripted policy's logprobs are zeros
    c.curriculum = False
    return c


def _env_cfg():
    e = env_block()
    e.n_envs, e.health_interval_s = 4, 0.0
    return e


def test_a_toy_algorithm_from_this_file_trains_through_the_online_trainer(toy, tmp_path):
    assert get_algorithm(TOY) is toy and toy.name == TOY
    cfg = _cfg(TOY)
    assert cfg.kl_coef == 0.0 and cfg.toy_scale == 2.0  # the defaults hook ran
    cfg.toy_scale = -1.0
    with pytest.raises(ValueError, match=r"online\.toy_scale = -1\.0"):  # the validate hook runs
        validate_online(cfg)
    cfg.toy_scale = 2.0
    agent = small_agent()
    before = [np.asarray(x).copy() for x in jax.tree.leaves(agent.params)]
    seen = []
    CALLS.clear()
    tasks = [make_task(t, s) for t in TEMPLATES for s in (1, 2)]
    summary = train_online(agent, tasks, PCFG, cfg, workdir=str(tmp_path), env_cfg=_env_cfg(),
                           prompt_fn=oracle_prompt, policy=EncodedOracle(agent),
                           on_iteration=lambda run, trajs, m: seen.append((run.ref, list(trajs), dict(m))))
    assert summary["iterations"] == 2 and len(CALLS) == 2 and len(seen) == 2
    trained_any = False
    for (ref, trajs, m), (rewards, gids, lengths, out) in zip(seen, CALLS):
        assert ref is None  # kl_coef = 0: no reference forward
        # the estimator got the rollouts' rewards, grouped by task, and its output became the advantages
        np.testing.assert_array_equal(rewards, [t.reward for t in trajs])
        np.testing.assert_array_equal(lengths, [len(t.steps) for t in trajs])
        ids = [t.task_id for t in trajs]
        assert all((gids[i] == gids[j]) == (ids[i] == ids[j]) for i in range(len(ids)) for j in range(len(ids)))
        want = [2.0 * (t.reward - np.mean([u.reward for u in trajs if u.task_id == t.task_id])) for t in trajs]
        np.testing.assert_allclose([t.advantage for t in trajs], want, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal([t.advantage for t in trajs], out)
        # the update ran the toy loss (not PPO-clip) on exactly the steps of non-zero advantage
        trained = [(t.advantage, s.generation.response_ids.size) for t in trajs if t.advantage != 0 for s in t.steps]
        assert m["trained_trajectories"] == sum(t.advantage != 0 for t in trajs)
        assert m["train_steps"] == len(trained)
        if not trained:
            continue
        trained_any = True
        tokens = sum(n for _, n in trained)
        assert "pg_loss" not in m and "kl" not in m and "clip_frac" not in m
        assert m["tokens"] == tokens
        assert m["toy_pg"] == pytest.approx(m["loss"], rel=1e-5)
        assert m["toy_adv"] == pytest.approx(sum(a * n for a, n in trained) / tokens, rel=1e-5)
    assert trained_any, "no iteration had a group with mixed outcomes; the test would prove nothing"
    after = jax.tree.leaves(agent.params)
    assert any(not np.array_equal(np.asarray(x), y) for x, y in zip(after, before))


def test_unknown_algorithm_is_a_one_line_error_listing_the_registered_names():
    for call in (lambda: online_block("nope"), lambda: get_algorithm("nope")):
        with pytest.raises(ValueError) as err:
            call()
        msg = str(err.value)
        assert "\n" not in msg and "'nope'" in msg
        assert all(repr(n) in msg for n in ("grpo", "adagrpo", "ppo"))
    cfg = online_block("grpo")
    cfg.algorithm = "nope"
    with pytest.raises(ValueError, match=r"^online\.algorithm = 'nope'; known: \('grpo', 'adagrpo', 'ppo'"):
        validate_online(cfg)


def test_registering_a_name_twice_is_an_error():
    with pytest.raises(ValueError, match="already registered"):
        register_algorithm("grpo", OnlineAlgorithm())
    with pytest.raises(ValueError, match="already registered"):
        losses.register_policy_loss("ppo_clip", losses.combine_loss)
    with pytest.raises(ValueError, match="unknown policy loss 'nope'"):
        losses.get_policy_loss("nope")
