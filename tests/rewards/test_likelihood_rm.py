"""The implicit reward model of a policy (gui_jax/rewards/likelihood.py): the agent's own prompt and response for
every record kind, scores equal to a full-logits reference, and the reward_eval path that reaches it."""
import json

import jax
import ml_collections
import numpy as np
import pytest

from gui_jax import config_check
from gui_jax.core.types import Action
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.likelihood import (LikelihoodScorer, gated_history_min, history_prefixes, likelihood_bce,
                                       log1mexp, prefix_min_scores, record_prompt_response)
from gui_jax.rewards.rm_scoring import RewardModelConfig
from gui_jax.rl.batch import TrainSample, build_batch
from gui_jax.rl.prompting import build_messages, expert_response
from gui_jax.rl.semi_online_rollout import expert_element
from gui_jax.train.sft import expert_history

from support.fake_policy import UI_PROMPT, make_episode
from support.oracle_policy import small_agent

UI = UI_PROMPT


@pytest.fixture(scope="module")
def agent():
    return small_agent(seed=0)


@pytest.fixture(scope="module")
def data():
    eps = [make_episode("Turn on Wi-Fi", n=5, size=(112, 252)), make_episode("Open the clock", n=3, size=(112, 252))]
    lookup = {e.episode_id: e for e in eps}
    recs = []
    for ep in eps:
        recs += de.expert_records(ep)
        recs += de.rule_verified_records(ep, 1, [Action("click", x=300, y=900)])
        recs += de.truncation_records(ep, [1])
    return eps, lookup, recs


def test_an_expert_step_record_is_the_sft_sample(data):
    eps, lookup, recs = data
    ep = eps[0]
    for t in range(len(ep.actions)):
        rec = next(r for r in recs if r.kind == "step" and r.source == "expert" and r.goal == ep.goal
                   and len(r.steps) == t + 1)
        prompt, response = record_prompt_response(rec, lookup, UI)
        assert prompt == build_messages(ep.goal, expert_history(ep, t, UI), ep.observations[t], UI)
        assert response == expert_response(ep.actions[t], ep.observations[t], UI, element=expert_element(ep, t))


def test_an_outcome_record_asks_for_terminate_after_the_trajectory(data):
    eps, lookup, recs = data
    ep = eps[1]
    rec = next(r for r in recs if r.kind == "outcome" and r.source == "truncation" and r.goal == ep.goal)
    prompt, response = record_prompt_response(rec, lookup, UI)
    assert response == expert_response(Action("terminate", status="success"), ep.observations[1], UI)
    assert prompt == build_messages(ep.goal, expert_history(ep, 1, UI), ep.observations[1], UI)


def _reference_logprob(agent, sample) -> float:
    """Σ log softmax of the full logits over the response tokens, one unpadded row."""
    batch = build_batch([sample], agent.model_config, pad_id=agent.tokenizer.pad_id, rows=1)
    out = agent.model()(batch["input_ids"], attention_mask=batch["attention_mask"], position_ids=batch["position_ids"])
    logp = jax.nn.log_softmax(np.asarray(out.logits, np.float64)[0], axis=-1)
    p, r = sample.prompt_ids.size, sample.response_ids.size
    return float(sum(logp[p - 1 + k, sample.response_ids[k]] for k in range(r)))


def test_scores_equal_the_full_logits_reference_batched_or_not(agent, data):
    _, lookup, recs = data
    sc = LikelihoodScorer(agent, lookup, UI, batch_size=len(recs))
    logs = sc.log_scores(recs)
    samples = sc.samples(recs)
    picks = [0, 5, len(recs) - 1]   # a step, a rule-verified click, an outcome record
    ref = [_reference_logprob(agent, samples[i]) for i in picks]
    np.testing.assert_allclose(logs[picks], ref, atol=2e-3, rtol=1e-5)
    np.testing.assert_allclose(sc.log_scores([recs[5]], batch_size=1), logs[[5]], atol=1e-4, rtol=0)
    np.testing.assert_allclose(sc.score(recs), np.exp(logs), rtol=1e-12)
    assert np.all(logs < 0)


LIKELIHOOD = RewardModelConfig(scorer="policy_likelihood", batch_size=4, history_images=0)


def test_reward_eval_scores_with_the_policy_likelihood(agent, data, tmp_path):
    from gui_jax.jobs.reward_model import evaluate_rm
    eps, lookup, recs = data
    evaluate_rm(agent, recs, eps, UI, LIKELIHOOD, str(tmp_path))
    out = json.load(open(tmp_path / "results.json"))
    assert out["scorer"] == "policy_likelihood" and out["num_records"] == len(recs)
    np.testing.assert_allclose(np.load(tmp_path / "test_scores.npy"),
                               LikelihoodScorer(agent, lookup, UI).score(recs), atol=1e-6, rtol=0)
    assert (tmp_path / "results.md").read_text().startswith("# A policy's likelihood as reward model")
    with pytest.raises(ValueError, match="unknown reward-model scorer 'likely'"):
        RewardModelConfig(scorer="likely")


def test_config_check_names_a_bad_scorer():
    c = ml_collections.ConfigDict({"job": "reward_eval", "rm": {"model": {"scorer": "likely"}}})
    with pytest.raises(config_check.ConfigError, match=r"config.rm.model.scorer = 'likely'"):
        config_check.check_config(c)


def test_log1mexp_matches_the_direct_formula_over_its_range():
    s = np.array([-1e-6, -1e-3, -0.5, -0.7, -1.0, -5.0, -30.0])
    np.testing.assert_allclose(np.asarray(log1mexp(s)), np.log(-np.expm1(s)), rtol=1e-3)  # float32


def test_bce_of_known_log_probabilities():
    s = np.log(np.array([0.9, 0.2, 0.7, 0.01], np.float32))
    signed = np.array([2.0, 2.0, -0.5, -0.5], np.float32)     # two positives (weight 2), two negatives (0.5)
    valid = np.array([1, 1, 1, 0], np.float32)                 # the last row is filler
    total, correct = likelihood_bce(s, signed, valid)
    expect = 2 * -np.log(0.9) + 2 * -np.log(0.2) + 0.5 * -np.log(0.3)
    np.testing.assert_allclose(float(total), expect, rtol=1e-5)
    assert float(correct) == 1.0                               # 0.9 (+) right; 0.2 (+) and 0.7 (-) wrong


def _train(agent, recs, lookup, workdir, steps):
    from gui_jax.train.config_blocks import sft_block
    from gui_jax.train.rm_training import train_reward_model
    cfg = sft_block()
    cfg.num_steps, cfg.batch_size, cfg.micro_batch_size, cfg.learning_rate = steps, 1, 1, 3e-3
    cfg.warmup_steps, cfg.checkpoint_every = 0, 100
    cfg.balance, cfg.loss_over = "none", "vocab"
    train_reward_model(agent, recs, lookup, UI, LIKELIHOOD, cfg, workdir=str(workdir))


def test_unlikelihood_training_lowers_the_probability_of_a_negative_candidate(data, tmp_path):
    """A negative record (a click on the wrong element) trained first as a positive, until the policy would write
    it (its probability far above a random model's e^-150), then with its own label: the unlikelihood term
    -log(1 - π) brings it down again, through the RM trainer."""
    import dataclasses
    eps, lookup, recs = data
    negative = next(r for r in recs if not r.label and r.source == "rule")
    agent = small_agent(seed=1)
    sc = LikelihoodScorer(agent, lookup, UI, batch_size=1)
    _train(agent, [dataclasses.replace(negative, label=True)], lookup, tmp_path / "up", 40)
    raised = sc.log_scores([negative])[0]
    assert raised > np.log(0.3)
    _train(agent, [negative], lookup, tmp_path / "down", 10)
    assert sc.log_scores([negative])[0] < np.log(0.05)


def test_the_verifier_scores_candidates_by_the_policys_probability(agent, data):
    """verifier_eval's step scorer with rm.model.scorer=policy_likelihood: each candidate's score is the policy's
    probability of writing it after the agent's prompt for that screen."""
    from gui_jax.jobs.verifier_eval import rm_step_scorer
    eps, _, _ = data
    ep, obs = eps[0], eps[0].observations[0]
    element = obs.ui_elements[0].index
    cands = [Action("click", element=element), Action("terminate", status="success")]
    got = rm_step_scorer(agent, UI, LIKELIHOOD)(ep.goal, [], obs, cands)
    prompt = build_messages(ep.goal, [], obs, UI)
    want = []
    for a in cands:
        g = agent.policy.encode(prompt, expert_response(a, obs, UI, element=a.element))
        want.append(float(np.exp(_reference_logprob(agent, TrainSample(g.prompt_ids, g.response_ids)))))
    assert want[0] != want[1]
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-30)


def test_online_rl_scores_rollout_steps_by_the_likelihood_rms_probability(agent, data):
    """PRM-PPO's dense reward with rm.model.scorer=policy_likelihood: step t of a rollout scores the RM's
    probability of writing that step's action after the agent's prompt with the rollout's earlier steps as
    history; critic_init = rm (which reads a verdict label) is refused, naming the field."""
    import types
    from gui_jax.train.online.rewards import RMTrajectoryScorer, critic_params_from_rm
    eps, _, _ = data
    ep = eps[0]
    acts = [Action("click", element=ep.observations[0].ui_elements[0].index),
            Action("click", element=ep.observations[1].ui_elements[-1].index)]
    steps = [types.SimpleNamespace(observation=ep.observations[t], action=a) for t, a in enumerate(acts)]
    record = types.SimpleNamespace(task=types.SimpleNamespace(goal=ep.goal), steps=steps, final_observation=None,
                                   task_id="t")
    rm = RMTrajectoryScorer(agent, UI, LIKELIHOOD)
    got = rm.step_scores([record])[0]
    want, history = [], []
    for obs, a in zip(ep.observations, acts):
        response = expert_response(a, obs, UI, element=a.element)
        g = agent.policy.encode(build_messages(ep.goal, history, obs, UI), response)
        want.append(float(np.exp(_reference_logprob(agent, TrainSample(g.prompt_ids, g.response_ids)))))
        history.append((obs, response))
    assert rm.unscorable == 0 and rm.label_ids is None and want[0] != want[1]
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-30)
    with pytest.raises(ValueError, match="online.critic_init = 'rm'.*'policy_likelihood'"):
        critic_params_from_rm(agent, rm)


def test_history_min_takes_the_lowest_step_score_and_scores_each_prefix_once(data):
    """A step record scores min(own, every earlier step's score); an outcome record the same over its trajectory;
    a first step only its own. Log scores come from a table keyed by the prefix (the model is not involved)."""
    eps, lookup, _ = data
    ep = eps[0]
    goal = ep.goal
    refs = [de.StepRef(ep.episode_id, t) for t in range(4)]
    wrong = de.StepRef(ep.episode_id, 1, Action("click", x=300, y=900))
    table = {("step", refs[0]): -0.1, ("step", refs[0], refs[1]): -0.2, ("step", refs[0], wrong): -6.0,
             ("step", refs[0], refs[1], refs[2]): -0.3, ("step", refs[0], wrong, refs[2]): -0.05,
             ("step", refs[0], wrong, refs[2], refs[3]): -0.4,
             ("outcome", refs[0], wrong, refs[2], refs[3]): -0.01}   # the outcome's own: P(terminate) after it
    calls = []

    class TableScorer(LikelihoodScorer):
        def samples(self, records):
            return list(records)

        def log_scores_of_samples(self, samples, batch_size=None):
            calls.append(len(samples))
            return np.array([table[(r.kind, *r.steps)] for r in samples], np.float64)

    first = de.RewardRecord("step", goal, (refs[0],), True, "expert")
    after_good = de.RewardRecord("step", goal, (refs[0], refs[1], refs[2]), True, "expert")
    after_wrong = de.RewardRecord("step", goal, (refs[0], wrong, refs[2]), False, "substitution")
    outcome_wrong = de.RewardRecord("outcome", goal, (refs[0], wrong, refs[2], refs[3]), False, "substitution")
    records = [first, after_good, after_wrong, outcome_wrong]
    plain = TableScorer(None, lookup, UI).log_scores(records[:3])
    assert plain.tolist() == [-0.1, -0.3, -0.05]
    calls.clear()
    got = TableScorer(None, lookup, UI, history_min=True).log_scores(records)
    assert got.tolist() == [-0.1, -0.3, -6.0, -6.0]
    # own scores in one pass, then the 5 distinct earlier steps (r0; r0 r1; r0 wrong; r0 wrong r2; r0 wrong r2 r3)
    assert calls == [4, 5]
    assert [len(p.steps) for p in history_prefixes(outcome_wrong, lookup)] == [1, 2, 3, 4]


def test_gated_history_min_counts_only_earlier_steps_below_the_gate():
    own = np.log([0.9, 0.8, 0.6, 0.7])
    history = [np.zeros(0), np.log([0.3]), np.log([0.005, 0.2]), np.log([0.95, 0.04])]
    np.testing.assert_allclose(np.exp(gated_history_min(own, history, 1.0)), [0.9, 0.3, 0.005, 0.04])
    np.testing.assert_allclose(np.exp(gated_history_min(own, history, 0.1)), [0.9, 0.8, 0.005, 0.04])
    np.testing.assert_allclose(np.exp(gated_history_min(own, history, 0.01)), [0.9, 0.8, 0.005, 0.7])
    np.testing.assert_allclose(np.exp(gated_history_min(own, history, 0.001)), [0.9, 0.8, 0.6, 0.7])


def test_history_gate_lets_a_right_but_unlikely_step_pass_and_still_marks_a_confident_error(data):
    """Earlier steps at P 0.22 (right, unlikely) and P 0.0025 (a wrong row): gate 1.0 sinks both records, gate 0.1
    only the one after the wrong row; the scorer's log_components are the own and per-prefix scores."""
    eps, lookup, _ = data
    ep = eps[0]
    refs = [de.StepRef(ep.episode_id, t) for t in range(3)]
    wrong = de.StepRef(ep.episode_id, 1, Action("click", x=300, y=900))
    table = {("step", refs[0]): -0.05, ("step", refs[0], refs[1]): -1.5, ("step", refs[0], wrong): -6.0,
             ("step", refs[0], refs[1], refs[2]): -0.1, ("step", refs[0], wrong, refs[2]): -0.2}

    class TableScorer(LikelihoodScorer):
        def samples(self, records):
            return list(records)

        def log_scores_of_samples(self, samples, batch_size=None):
            return np.array([table[(r.kind, *r.steps)] for r in samples], np.float64)

    good = de.RewardRecord("step", ep.goal, (refs[0], refs[1], refs[2]), True, "expert")
    bad = de.RewardRecord("step", ep.goal, (refs[0], wrong, refs[2]), False, "substitution")
    own, history = TableScorer(None, lookup, UI).log_components([good, bad])
    assert own.tolist() == [-0.1, -0.2] and [h.tolist() for h in history] == [[-0.05, -1.5], [-0.05, -6.0]]
    assert TableScorer(None, lookup, UI, history_min=True).log_scores([good, bad]).tolist() == [-1.5, -6.0]
    gated = TableScorer(None, lookup, UI, history_min=True, history_gate=0.1)
    assert gated.log_scores([good, bad]).tolist() == [-0.1, -6.0]
    with pytest.raises(ValueError, match="history_gate must be in"):
        RewardModelConfig(scorer="policy_likelihood", history_min=True, history_gate=0.0)
    with pytest.raises(ValueError, match="needs history_min=True"):
        RewardModelConfig(scorer="policy_likelihood", history_gate=0.1)


def test_prefix_min_scores_reads_earlier_steps_from_the_records_and_scores_only_the_missing_ones(data):
    """The prefix minimum from given scores: an earlier step's score is the step record's with the same goal and
    steps (label and source aside), a prefix no record holds is scored once, by score_missing alone."""
    eps, lookup, _ = data
    ep = eps[0]
    refs = [de.StepRef(ep.episode_id, t) for t in range(3)]
    wrong = de.StepRef(ep.episode_id, 1, Action("click", x=300, y=900))
    recs = [de.RewardRecord("step", ep.goal, (refs[0],), True, "expert"),
            de.RewardRecord("step", ep.goal, (refs[0], refs[1]), True, "expert"),
            de.RewardRecord("step", ep.goal, (refs[0], wrong), False, "substitution"),
            de.RewardRecord("outcome", ep.goal, (refs[0], refs[1], refs[2]), True, "expert"),
            de.RewardRecord("outcome", ep.goal, (refs[0], wrong, refs[2]), False, "substitution")]
    scores = np.array([0.9, 0.4, 0.05, 0.8, 0.7])
    asked = []

    def score_missing(prefixes):
        asked.append([p.steps for p in prefixes])
        return np.array([0.3 if p.steps[1] == refs[1] else 0.6 for p in prefixes])
    low = prefix_min_scores(recs, lookup, scores, score_missing)
    # the outcomes' third steps are no step record: scored once each; the rest come from the records
    assert asked == [[(refs[0], refs[1], refs[2]), (refs[0], wrong, refs[2])]]
    assert low.tolist() == [0.9, 0.4, 0.05, 0.3, 0.05]
    with pytest.raises(ValueError, match="2 earlier steps are no step record here"):
        prefix_min_scores(recs, lookup, scores)
    with pytest.raises(ValueError, match="5 scores for 4 records"):
        prefix_min_scores(recs[:4], lookup, scores)


def test_history_min_needs_the_likelihood_scorer():
    with pytest.raises(ValueError, match="history_min"):
        RewardModelConfig(scorer="verdict", history_min=True)


def test_history_min_is_refused_where_it_would_not_apply():
    from gui_jax.jobs.verifier_eval import rm_step_scorer
    from gui_jax.train.online.rewards import RMTrajectoryScorer
    rcfg = RewardModelConfig(scorer="policy_likelihood", history_min=True)
    with pytest.raises(ValueError, match="verifier ranks candidates"):
        rm_step_scorer(None, UI, rcfg)
    with pytest.raises(ValueError, match="not applied to rollout rewards"):
        RMTrajectoryScorer(None, UI, rcfg)
