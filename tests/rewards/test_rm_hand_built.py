"""Hand-built cases of the reward-model data engine with exact expected values: hard-negative mining keeps exactly
an earlier RM's false positives (in data_engine and through the reward_model job with rm.data.hard_negative_checkpoint),
and potential step labels where exactly one of 5 PhoneSim continuations succeeds, turned into records."""
import numpy as np
import pytest

from gui_jax.core.types import Action, Episode
from gui_jax.jobs import reward_model as job
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.data_engine import RewardRecord, StepRef
from gui_jax.rewards.potential import phonesim_continuation, phonesim_rollout
from gui_jax.tasks import make_task

from support.fake_policy import make_episode


def _click(k):
    """A tap on element k of support.fake_policy.make_episode's screens (item k, centre (300, 300 + 300 k))."""
    return Action("click", x=300, y=300 + 300 * k, element=k)


# ------------------------------------------------------------------------------------------ hard negatives
def test_hard_negative_records_are_exactly_the_false_positives_in_input_order():
    ep = make_episode(n=3)                                  # the expert taps item t at step t
    rule0 = de.rule_verified_records(ep, 0, [_click(0), _click(1), Action("system_button", button="Back")])
    rule1 = de.rule_verified_records(ep, 1, [_click(1), _click(2)])
    sib1 = de.rule_verified_records(ep, 1, [_click(0)], source="sibling")
    trunc = de.truncation_records(ep, [1])
    expert_outcome = de.expert_records(ep)[-1]
    records = rule0 + rule1 + sib1 + trunc + [expert_outcome]
    # the hand-built labels the mining is judged against
    assert [r.label for r in records] == [True, False, False, True, False, False, False, True]
    #        TP    FP    TN    FN    TN       FP (= threshold)  FP (outcome)  TP
    scores = [0.9, 0.8, 0.1, 0.3, 0.4999, 0.5, 0.6, 0.99]
    hard = de.hard_negative_records(records, scores)
    # exactly records 1, 5, 6 (label negative, score ≥ 0.5), in input order, relabelled and re-sourced
    assert hard == [RewardRecord("step", ep.goal, records[1].steps, False, "hard_negative"),
                    RewardRecord("step", ep.goal, records[5].steps, False, "hard_negative"),
                    RewardRecord("outcome", ep.goal, records[6].steps, False, "hard_negative")]
    assert [r.info for r in hard] == [{"score": 0.8, "drawn_as": "rule"}, {"score": 0.5, "drawn_as": "sibling"},
                                      {"score": 0.6, "drawn_as": "truncation"}]
    assert [(r.steps[-1].step, r.steps[-1].action) for r in hard[:2]] == [(0, _click(1)), (1, _click(0))]
    assert [s.step for s in hard[2].steps] == [0]          # the truncated trajectory: 1 step kept
    # a stricter threshold keeps only the one scored 0.8; a true positive is never mined
    assert [r.info["score"] for r in de.hard_negative_records(records, scores, threshold=0.7)] == [0.8]
    assert de.hard_negative_records(records, [0.0] * len(records)) == []
    assert de.hard_negative_records([records[0]], [1.0]) == []


# P(+) of the stub earlier RM for a wrong tap at (step, element); one false positive (≥ 0.5) per step
EARLIER_RM = {(0, 1): 0.5, (0, 2): 0.49, (1, 0): 0.95, (1, 2): 0.2, (2, 0): 0.0, (2, 1): 0.7}


def test_the_reward_model_job_mines_the_earlier_rms_false_positives(monkeypatch, tmp_path):
    """job.run with rm.data.hard_negative_checkpoint: the earlier RM is loaded from that field, scores the mined
    taps, and records_train.jsonl / the records the RM trains on hold exactly its false positives."""
    from gui_jax.core.recipe_files import load_python_file
    from gui_jax.jobs import common, verifier_eval
    from gui_jax.rl import agent as agent_mod
    from gui_jax.train import rm_training
    from pathlib import Path

    config = load_python_file(str(Path(__file__).resolve().parents[2] / "configs" / "reward_model.py")).get_config()
    d = config.rm.data
    d.hard_negative_checkpoint, d.hard_negative_clicks = "runs/rm_round0/rm/checkpoints", 5
    d.clicks_per_step, d.sibling_clicks, d.substitution, d.continuation = 0, 0, False, False
    train_ep, test_ep = make_episode(goal="Turn on Wi-Fi", n=3), make_episode(goal="Turn off Wi-Fi", n=3)
    monkeypatch.setattr(common, "prepare", lambda cfg, wd, sides: ([], [], [train_ep], [test_ep]))
    loaded, scored = [], []
    monkeypatch.setattr(verifier_eval, "load_policy",
                        lambda cfg, path, field: loaded.append((path, field)) or ("earlier-rm", "(stub)"))

    class Scorer:                                            # the earlier RM's P(+), by (step, tapped element)
        def __init__(self, agent, lookup, pcfg, rcfg):
            assert agent == "earlier-rm"

        def score(self, records):
            scored.extend((r.goal, r.steps[-1].step, r.steps[-1].action.element, r.label) for r in records)
            return np.array([EARLIER_RM[(r.steps[-1].step, r.steps[-1].action.element)] for r in records])
    monkeypatch.setattr(job, "make_scorer", Scorer)
    trained = {}
    monkeypatch.setattr(agent_mod, "Agent", lambda cfg, seed: "new-rm")
    monkeypatch.setattr(rm_training, "train_reward_model",
                        lambda agent, records, episodes, *a, **kw: trained.update(records=list(records)) or {})
    monkeypatch.setattr(job, "evaluate_rm", lambda agent, records, *a, **kw: trained.update(test=list(records)))

    job.run(config, str(tmp_path))

    assert loaded == [("runs/rm_round0/rm/checkpoints", "rm.data.hard_negative_checkpoint")]
    # it scored every wrong tap of both sides (each goal's 6), never a right one
    assert sorted(scored) == sorted((g, t, e, False) for g in ("Turn on Wi-Fi", "Turn off Wi-Fi") for t, e in EARLIER_RM)
    expected = [(1, 0, 1, 0.5), (2, 1, 0, 0.95), (3, 2, 1, 0.7)]    # (len(steps), step, element, score), by step
    for side, ep in (("train", train_ep), ("test", test_ep)):
        recs = de.read_records(str(tmp_path / f"records_{side}.jsonl"))
        mined = [r for r in recs if r.source == "hard_negative"]
        assert [(len(r.steps), r.steps[-1].step, r.steps[-1].action.element, r.info["score"]) for r in mined] \
            == expected, side
        assert all(r.kind == "step" and r.label is False and r.goal == ep.goal and r.info["drawn_as"] == "rule"
                   and [s.step for s in r.steps[:-1]] == list(range(r.steps[-1].step)) for r in mined)
        # nothing else changed: the other records are the ones built without mining
        plain = job.build_reward_data([ep], np.random.default_rng(d.seed + (side == "test")),
                                      _without_mining(d)).records
        assert [r for r in recs if r.source != "hard_negative"] == plain
    assert trained["records"] == de.read_records(str(tmp_path / "records_train.jsonl"))   # what the RM trains on
    assert trained["test"] == de.read_records(str(tmp_path / "records_test.jsonl"))


def _without_mining(d):
    plain = d.copy_and_resolve_references()
    plain.hard_negative_checkpoint = ""
    return plain


# ------------------------------------------------------------------------------------------ potential labels
def _turn_off_0830(obs, goal, rng, history):
    """Turns the 08:30 alarm off from wherever it is, then claims success (solves clock.alarm_toggle#0)."""
    switch = [e for e in obs.ui_elements if e.checkable and e.content_desc.startswith("08:30")]
    if obs.current_app != "clock":
        return Action("open", text="Clock")
    if switch and switch[0].checked:
        return Action("click", x=switch[0].center[0], y=switch[0].center[1])
    return Action("terminate", status="success")


def _give_up(obs, goal, rng, history):
    return Action("terminate", status="failure")


FAILED = [Action("open", text="Clock"), Action("click", x=540, y=2000), Action("terminate", status="failure")]


def test_potential_labels_when_exactly_one_of_five_phonesim_continuations_succeeds():
    task = make_task("clock.alarm_toggle", 0)
    solver = phonesim_continuation(task, FAILED, _turn_off_0830)
    quitter = phonesim_continuation(task, FAILED, _give_up)
    # continuation (t, i) runs the solver for (0, 3) and (2, 1), the quitter otherwise; PhoneSim judges each
    outcomes = {}

    def continuation(t, i):
        outcomes[(t, i)] = (solver if (t, i) in {(0, 3), (2, 1)} else quitter)(t, i)
        return outcomes[(t, i)]

    labels = de.potential_labels(3, continuation, k=5)
    assert labels == [True, False, False]
    # step 0: the 4th continuation is the only success (the 5th is not run); step 1: none of 5; step 2: the prefix
    # already ended the episode (terminate failure), so even the solver's continuation fails
    assert outcomes == {**{(0, i): i == 3 for i in range(4)}, **{(1, i): False for i in range(5)},
                        **{(2, i): False for i in range(5)}}

    # the failed trajectory as an episode, and its potential records: one per step, its own history before it
    r = phonesim_rollout(task, _give_up, np.random.default_rng(0), prefix=FAILED, max_steps=1, record=True)
    assert r.success is False and len(r.actions) == 3 and len(r.observations) == 4
    ep = Episode(episode_id="clock.alarm_toggle#0/failed", goal=task.goal, observations=r.observations,
                 actions=r.actions, app="clock", template=task.template, info={"seed": 0, "success": False})
    recs = de.potential_records(ep, labels)
    ref = [StepRef("clock.alarm_toggle#0/failed", t) for t in range(3)]
    assert recs == [RewardRecord("step", task.goal, (ref[0],), True, "potential"),
                    RewardRecord("step", task.goal, (ref[0], ref[1]), False, "potential"),
                    RewardRecord("step", task.goal, (ref[0], ref[1], ref[2]), False, "potential")]
    assert [r.info for r in recs] == [{}, {}, {}]
    assert de.label_balance(recs) == {"step/potential": {"pos": 1, "neg": 2}}
    with pytest.raises(ValueError, match=r"2 labels for 3 steps of 'clock.alarm_toggle#0/failed'"):
        de.potential_records(ep, labels[:2])


# ------------------------------------------------------------------------------------------ self-improvement data
def test_synthesis_records_of_a_round_exact():
    """A 3-step success ending in terminate (2 working steps) and a 2-step failure: 3 positive steps, a positive
    outcome and one truncation (kept 1) from the success; one negative outcome over the failure's 2 steps."""
    ok = make_episode(goal="Star Banana bread", n=2)
    ok = Episode(**{**ok.__dict__, "episode_id": "ok", "actions": ok.actions + [Action("terminate", status="success")],
                    "target_bboxes": list(ok.target_bboxes) + [None],
                    "step_instructions": list(ok.step_instructions) + ["done"]})
    bad = make_episode(goal="Star Banana bread", n=2)
    bad = Episode(**{**bad.__dict__, "episode_id": "ok@fail0"})
    recs = de.synthesis_records([ok], [bad])
    got = [(r.kind, r.label, r.source, [(s.episode_id, s.step) for s in r.steps]) for r in recs]
    assert got == [
        ("step", True, "synth", [("ok", 0)]),
        ("step", True, "synth", [("ok", 0), ("ok", 1)]),
        ("step", True, "synth", [("ok", 0), ("ok", 1), ("ok", 2)]),
        ("outcome", True, "synth", [("ok", 0), ("ok", 1), ("ok", 2)]),
        ("outcome", False, "truncation", [("ok", 0)]),
        ("outcome", False, "synth_failure", [("ok@fail0", 0), ("ok@fail0", 1)]),
    ]
    assert all(r.goal == "Star Banana bread" for r in recs)
    with pytest.raises(ValueError, match="'empty' has no steps"):
        de.synthesis_records([], [Episode(episode_id="empty", goal="g", observations=[], actions=[])])
