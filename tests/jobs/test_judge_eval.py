"""The judge_eval job: success judges (the backbone zero-shot, the trained RM) against PhoneSim's rule check.

(a) judge_agreement's numbers by hand (confusion counts, agreement with Wilson bounds, P / R / F1, κ, AUROC);
(b) the job end to end on the tiny untrained policy: every completed episode judged by both judges, results.json
    equal to judge_agreement over episodes.jsonl, and two judges with the same weights score alike;
(c) bad configs raise ConfigError naming the field.
"""
import dataclasses
import json
import math
import os

import numpy as np
import pytest

from gui_jax.config_check import ConfigError
from gui_jax.eval.metrics import judge_agreement
from gui_jax.jobs import judge_eval as je
from gui_jax.jobs import load_config

TINY = {"data.num_train_episodes": 2, "data.num_test_episodes": 2, "data.templates": ("music.play", "tasks.complete"),
        "data.train_seed_range": (0, 4), "data.test_seed_range": (1000, 1002), "data.resolution": (112, 252),
        "model.checkpoint": "", "model.num_hidden_layers": 1, "model.vision_depth": 1, "model.max_new_tokens": 8}
Z = 1.959963984540054


def test_judge_agreement_by_hand():
    m = judge_agreement([0.9, 0.8, 0.2, 0.6, 0.1], [True, False, False, True, True])
    assert (m["tp"], m["fp"], m["fn"], m["tn"], m["n"]) == (2, 1, 1, 1, 5)
    p = 3 / 5  # agreement; its Wilson interval written out
    centre = (p + Z * Z / 10) / (1 + Z * Z / 5)
    half = Z / (1 + Z * Z / 5) * math.sqrt(p * (1 - p) / 5 + Z * Z / 100)
    np.testing.assert_allclose(m["agreement_ci95"], [centre - half, centre + half], rtol=1e-12)
    assert m["agreement"] == pytest.approx(0.6) and m["precision"] == m["recall"] == m["f1"] == pytest.approx(2 / 3)
    assert m["kappa"] == pytest.approx((0.6 - 13 / 25) / (1 - 13 / 25))   # chance agreement (3·3 + 2·2) / 25
    assert m["auroc"] == pytest.approx(3 / 6)                              # 3 of 6 (positive, negative) pairs ordered
    assert m["judged_rate"] == pytest.approx(0.6) and m["true_rate"] == pytest.approx(0.6)
    one_class = judge_agreement([0.7, 0.9], [True, True])   # both say "success" throughout: κ undefined
    assert one_class["agreement"] == 1.0 and math.isnan(one_class["kappa"]) and math.isnan(one_class["auroc"])
    with pytest.raises(ValueError, match="3 scores vs 2 verdicts"):
        judge_agreement([0.1, 0.2, 0.3], [True, False])


def test_job_judges_every_completed_episode_with_both_judges(tmp_path):
    cfg = load_config("configs/judge_eval.py", **{**TINY, "judge.rm_untrained": True, "judge.trials": 2,
                                                  "judge.max_steps": 2})
    je.run(cfg, str(tmp_path))
    res = json.load(open(tmp_path / "results.json"))
    rows = [json.loads(line) for line in open(tmp_path / "episodes.jsonl")]
    assert res["episodes"] + res["env_failures"] == 4 and len(rows) == res["episodes"] == 4
    assert sorted((r["task_id"], r["trial"]) for r in rows) == sorted({(r["task_id"], k) for r in rows for k in (0, 1)})
    truth = [r["success"] for r in rows]
    assert res["true_success_rate"] == pytest.approx(sum(truth) / 4)
    for name in ("prompted", "rm"):
        scores = [r[f"{name}_score"] for r in rows]
        assert all(0.0 < s < 1.0 for s in scores)
        want = judge_agreement(scores, truth, 0.5)
        got = res["judges"][name]
        assert {k: got[k] for k in ("tp", "fp", "fn", "tn", "agreement", "judged_rate")} == \
            {k: want[k] for k in ("tp", "fp", "fn", "tn", "agreement", "judged_rate")}
        assert got["weights"]["kind"] == "untrained" and got["unscorable"] == 0
    # both judges are the untrained preset of one seed here: the same weights give the same verdicts
    np.testing.assert_allclose([r["prompted_score"] for r in rows], [r["rm_score"] for r in rows], atol=1e-6)
    assert "| prompted |" in (tmp_path / "results.md").read_text()


def test_the_prompted_judge_as_the_policys_confidence_in_its_last_step(tmp_path):
    """prompted_scorer=policy_likelihood: each episode scores the backbone's probability of writing its final step
    after the trajectory (rewards/likelihood.py), not its answer to the verdict question."""
    from gui_jax.eval.online_success import rollout_records
    from gui_jax.jobs import common
    from gui_jax.jobs.reward_model import rm_configs
    from gui_jax.jobs.verifier_eval import held_out_tasks, load_policy
    from gui_jax.train.online.rewards import RMTrajectoryScorer
    cfg = load_config("configs/judge_eval.py", **{**TINY, "judge.judges": ("prompted",), "judge.max_steps": 2,
                                                  "judge.prompted_scorer": "policy_likelihood"})
    je.run(cfg, str(tmp_path / "job"))
    res = json.load(open(tmp_path / "job" / "results.json"))
    assert res["judges"]["prompted"]["scorer"] == "policy_likelihood" and "rm" not in res["judges"]
    got = [json.loads(line)["prompted_score"] for line in open(tmp_path / "job" / "episodes.jsonl")]
    # the same episodes (same policy, tasks and seed) scored here by each scorer
    agent, _ = load_policy(cfg, "", "judge.prompted_checkpoint_dir")
    tasks = held_out_tasks(cfg, common.prepare(cfg, str(tmp_path / "here"), sides=())[1])
    pcfg, rcfg = rm_configs(cfg)
    recs = rollout_records(agent.policy, tasks, pcfg, je.rollout_env(cfg), trials=1, temperature=1.0, max_steps=2)
    likelihood, verdict = (RMTrajectoryScorer(agent, pcfg, dataclasses.replace(rcfg, scorer=k)).outcome_scores(recs)
                           for k in ("policy_likelihood", "verdict"))
    np.testing.assert_allclose(got, likelihood, atol=1e-6)
    assert np.abs(np.asarray(got) - verdict).max() > 1e-3


@pytest.mark.parametrize("field,value,needle", [
    ("judge.judges", ("oracle",), "config.judge.judges"),
    ("judge.judges", ("rm", "rm"), "expected distinct names"),
    ("judge.threshold", 1.5, "config.judge.threshold"),
    ("judge.trials", 0, "config.judge.trials"),
    ("judge.temperature", -1.0, "config.judge.temperature"),
    ("judge.prompted_scorer", "logit", "config.judge.prompted_scorer"),
])
def test_bad_config_names_the_field(field, value, needle, tmp_path):
    cfg = load_config("configs/judge_eval.py", **{"judge.rm_untrained": True, field: value})
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        je.run(cfg, str(tmp_path))
    assert not os.path.exists(tmp_path / "results.json")


def test_greedy_trials_and_a_missing_rm_are_refused():
    cfg = load_config("configs/judge_eval.py", **{"judge.rm_untrained": True, "judge.trials": 3, "judge.temperature": 0.0})
    with pytest.raises(ConfigError, match="repeat one episode"):
        je.check_judge_config(cfg)
    with pytest.raises(ConfigError, match=r"config\.judge\.rm_checkpoint_dir"):
        je.check_judge_config(load_config("configs/judge_eval.py"))
    je.check_judge_config(load_config("configs/judge_eval.py", **{"judge.judges": ("prompted",)}))  # no RM needed
