"""Reward-data construction reproduces hand-built cases: rule labels on the matcher's boundaries, each
trajectory corruption on known episodes, potential labels, hard negatives, record round trips."""
import dataclasses

import pytest

from gui_jax.core.types import Action
from gui_jax.envs.sim import PhoneSim
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.potential import phonesim_continuation
from gui_jax.tasks import make_task
from gui_jax.tasks.generate import generate_episode
from support.fake_policy import make_episode


@pytest.fixture(scope="module")
def clock_eps():
    sim = PhoneSim(render=False)
    toggle = generate_episode(make_task("clock.alarm_toggle", 0), sim)   # open, click, terminate
    delete = generate_episode(make_task("clock.delete_alarm", 0), sim)   # open, click ×3, terminate
    return toggle, delete


def test_rule_labels_on_the_matcher_boundaries():
    ep = make_episode(n=2)  # step 0: click (300, 300) on element 0, bounds (100, 200, 500, 400), 1080×2400 screen
    # the tree is known: right iff the tap reaches element 0 (x ∈ [100, 500), y ∈ [200, 400))
    reach = [Action("click", x=100, y=200), Action("click", x=499.5, y=399.5), Action("click", x=500, y=300),
             Action("click", x=300, y=400), Action("click", x=540, y=300), Action("click", x=300, y=600)]
    assert [r.label for r in de.rule_verified_records(ep, 0, reach)] == [True, True, False, False, False, False]
    # elements no tap reaches (not clickable): the box ×1.2 about the centre (300, 300) decides,
    # x ∈ [60, 540], y ∈ [180, 420], inclusive
    for o in ep.observations:
        o.ui_elements = [dataclasses.replace(e, clickable=False) for e in o.ui_elements]
    cands = [Action("click", x=540, y=300), Action("click", x=540.5, y=300), Action("click", x=300, y=420),
             Action("click", x=300, y=420.6), Action("long_press", x=300, y=300), Action("click", x=60, y=180)]
    recs = de.rule_verified_records(ep, 0, cands)
    assert [r.label for r in recs] == [True, False, True, False, False, True]
    assert all(r.source == "rule" and r.kind == "step" and len(r.steps) == 1 for r in recs)
    assert recs[1].steps[-1].action == cands[1] and recs[1].steps[-1].step == 0
    # with no bbox the 0.04 distance rule decides: 0.04·1080 = 43.2 px
    ep.target_bboxes[1] = None
    assert de.rule_label(ep, 1, Action("click", x=300 + 43.2, y=600)) is True
    assert de.rule_label(ep, 1, Action("click", x=300 + 43.3, y=600)) is False
    # the knobs reach the matcher
    assert de.rule_label(ep, 0, Action("click", x=540.5, y=300), bbox_scale=1.3) is True


def test_expert_and_truncation_records(clock_eps):
    toggle, _ = clock_eps
    ex = de.expert_records(toggle)
    assert [(r.kind, len(r.steps), r.label) for r in ex] == [("step", 1, True), ("step", 2, True),
                                                             ("step", 3, True), ("outcome", 3, True)]
    assert de.working_steps(toggle) == 2
    tr = de.truncation_records(toggle, [1])
    assert [(r.kind, [s.step for s in r.steps], r.label) for r in tr] == [("outcome", [0], False)]
    # cutting only the terminate leaves open + click: the expert's own outcome, which is positive
    with pytest.raises(ValueError, match=r"must be in 1..1 .*2 steps before its final terminate"):
        de.truncation_records(toggle, [2])
    with pytest.raises(ValueError, match="must be in 1..1"):
        de.truncation_records(toggle, [3])


def test_label_conflicts_are_refused(clock_eps):
    toggle, delete = clock_eps
    eps = {toggle.episode_id: toggle, delete.episode_id: delete}
    good = de.expert_records(toggle) + de.truncation_records(toggle, [1]) + de.expert_records(delete)
    de.check_label_conflicts(good, eps)
    # what the old truncation built: open + click claimed complete, labelled negative
    twin = de.RewardRecord("outcome", toggle.goal, tuple(de.StepRef(toggle.episode_id, t) for t in range(2)),
                           False, "truncation")
    with pytest.raises(ValueError, match=r"records 3 \(expert, label True\) and 11 \(truncation, label False\)"):
        de.check_label_conflicts(good + [twin], eps)
    # a step record's input includes its candidate: the same steps with another label conflict too
    flipped = de.RewardRecord("step", toggle.goal, good[0].steps, False, "rule")
    with pytest.raises(ValueError, match="same step input"):
        de.check_label_conflicts(good + [flipped], eps)


def test_substitution_within_an_app(clock_eps):
    toggle, delete = clock_eps
    recs = de.substitution_records(toggle, delete, split=1, other_from=1)
    # toggle's step 0 (open Clock), then delete's steps 1..4 (click, click, click, terminate)
    assert [(s.episode_id, s.step) for s in recs[-1].steps] == [("clock.alarm_toggle#0", 0)] + [
        ("clock.delete_alarm#0", t) for t in range(1, 5)]
    assert [r.kind for r in recs] == ["step"] * 4 + ["outcome"]
    assert all(r.goal == toggle.goal and r.label is False for r in recs)
    assert [len(r.steps) for r in recs[:4]] == [2, 3, 4, 5]
    other_app = generate_episode(make_task("settings.wifi_on", 0), PhoneSim(render=False))
    with pytest.raises(ValueError, match="same app"):
        de.substitution_records(toggle, other_app, 1, 1)
    # a prefix that already finishes the task, or a tail that is only the other's terminate, would leave
    # toggle's complete trajectory labelled negative
    with pytest.raises(ValueError, match="split < 2"):
        de.substitution_records(toggle, delete, split=2, other_from=1)
    with pytest.raises(ValueError, match="other_from < 4"):
        de.substitution_records(toggle, delete, split=1, other_from=4)


def test_redundant_continuation(clock_eps):
    toggle, delete = clock_eps
    extra = [de.StepRef(toggle.episode_id, 1, Action("click", x=10, y=10)), de.StepRef(delete.episode_id, 2)]
    recs = de.continuation_records(toggle, extra)
    assert [(r.kind, len(r.steps), r.label) for r in recs] == [("step", 3, False), ("step", 4, False),
                                                               ("outcome", 4, False)]
    assert [s.step for s in recs[-1].steps[:2]] == [0, 1]  # the expert steps without their terminate


def test_potential_labels_exactly_one_of_five():
    calls = []

    def cont(t, i):
        calls.append((t, i))
        return t == 1 and i == 3

    assert de.potential_labels(3, cont, k=5) == [False, True, False]
    assert calls == [(0, i) for i in range(5)] + [(1, 0), (1, 1), (1, 2), (1, 3)] + [(2, i) for i in range(5)]


def _alarm_policy(obs, goal, rng, history):
    """Turns the 08:30 alarm off from wherever it is, then claims success."""
    switch = [e for e in obs.ui_elements if e.checkable and e.content_desc.startswith("08:30")]
    if obs.current_app != "clock":
        return Action("open", text="Clock")
    if switch and switch[0].checked:
        x, y = switch[0].center
        return Action("click", x=x, y=y)
    return Action("terminate", status="success")


def test_phonesim_continuations_judged_by_the_exact_check():
    task = make_task("clock.alarm_toggle", 0)
    # a failed trajectory: open Clock, a click on empty space, give up
    failed = [Action("open", text="Clock"), Action("click", x=540, y=2000), Action("terminate", status="failure")]
    labels = de.potential_labels(3, phonesim_continuation(task, failed, _alarm_policy), k=5)
    assert labels == [True, True, False]  # after giving up, nothing can continue
    never = phonesim_continuation(task, failed, lambda o, g, r, h: Action("terminate", status="success"))
    assert de.potential_labels(3, never, k=5) == [False, False, False]
    # a continuation that toggles a different alarm fails PhoneSim's exact check
    wrong = phonesim_continuation(task, failed, lambda o, g, r, h: Action("click", x=950, y=655)
                                  if o.ui_elements[14].checked else Action("terminate", status="success"))
    assert wrong(0, 0) is False


def test_hard_negatives_and_round_trip(tmp_path):
    ep = make_episode(n=1)
    recs = de.rule_verified_records(ep, 0, [Action("click", x=300, y=300), Action("click", x=900, y=2000),
                                            Action("click", x=1000, y=100)])
    hard = de.hard_negative_records(recs, [0.9, 0.7, 0.2])
    assert [(r.steps[-1].action.x, r.source, r.label, r.info["score"]) for r in hard] == [
        (900, "hard_negative", False, 0.7)]
    path = tmp_path / "rm.jsonl"
    assert de.write_records(str(path), recs + hard) == 4
    back = de.read_records(str(path))
    assert back == recs + hard
    assert de.label_balance(back) == {"step/rule": {"pos": 1, "neg": 2}, "step/hard_negative": {"pos": 0, "neg": 1}}
    path.write_text('{"kind": "step"}\n')
    with pytest.raises(ValueError, match="record 0"):
        de.read_records(str(path))


def test_sibling_clicks_are_row_clicks_at_expert_clicks_only():
    import numpy as np
    import ml_collections
    from gui_jax.jobs.reward_model import build_reward_data, candidate_actions
    from gui_jax.rl.prompting import visible_elements
    sim = PhoneSim(render=False)
    ep = generate_episode(make_task("music.play", 1), sim)            # open, click a song row, terminate
    assert [a.type for a in ep.actions] == ["open", "click", "terminate"]
    base = candidate_actions(ep, 1, np.random.default_rng(0), num_clicks=2)
    more = candidate_actions(ep, 1, np.random.default_rng(0), num_clicks=2, sibling_clicks=4)
    # the same draw first, then 4 clicks on labelled elements none of the first clicks hit, named "sibling"
    assert more[:2] == base[:2] and len(more) == len(base) + 4
    assert [s for s, _ in more] == ["rule"] * 2 + ["sibling"] * 4 + ["rule"] * 2   # + Back, terminate
    labelled = {e.index: e for e in visible_elements(ep.observations[1]) if e.text or e.content_desc}
    rows = [a for _, a in more[2:6]]
    assert all(r.element in labelled for r in rows) and len({r.element for r in rows}) == 4
    assert not {r.element for r in rows} & {b.element for _, b in base[:2]}
    for r in rows:
        x1, y1, x2, y2 = labelled[r.element].bounds
        assert (r.x, r.y) == ((x1 + x2) / 2, (y1 + y2) / 2)
    # no sibling clicks where the expert does not click
    for t in (0, 2):
        assert candidate_actions(ep, t, np.random.default_rng(0), 2, 4) == candidate_actions(
            ep, t, np.random.default_rng(0), 2)
    # labelled by the rule matcher: a row is positive only when it is the expert's target
    recs = de.rule_verified_records(ep, 1, rows, source="sibling")
    target = ep.target_bboxes[1]
    for r, rec in zip(rows, recs):
        inside = target[0] <= r.x <= target[2] and target[1] <= r.y <= target[3]
        assert rec.label == inside and rec.source == "sibling"
    # `substitutions` other episodes per episode, each distinct; the default (1) draws as before
    others = [generate_episode(make_task("music.play", s), sim) for s in (2, 3, 4)]
    dcfg = ml_collections.ConfigDict({"clicks_per_step": 2, "sibling_clicks": 0, "substitution": True,
                                      "substitutions": 2, "continuation": False})
    recs = build_reward_data([ep] + others, np.random.default_rng(0), dcfg).records
    froms = [r.info["from"] for r in recs if r.kind == "outcome" and r.source == "substitution"
             and r.goal == ep.goal]
    assert len(froms) == 2 and len(set(froms)) == 2 and ep.episode_id not in froms
    dcfg.substitutions = 1
    one = build_reward_data([ep] + others, np.random.default_rng(0), dcfg).records
    del dcfg["sibling_clicks"], dcfg["substitutions"]         # a config from before the two knobs
    assert [(r.kind, r.source, r.steps, r.label) for r in build_reward_data(
        [ep] + others, np.random.default_rng(0), dcfg).records] == [(r.kind, r.source, r.steps, r.label) for r in one]
    # sibling clicks are their own source in the by-source counts
    dcfg.sibling_clicks = 2
    balance = de.label_balance(build_reward_data([ep] + others, np.random.default_rng(0), dcfg).records)
    assert balance["step/sibling"]["neg"] > 0 and "step/sibling" not in de.label_balance(one)
