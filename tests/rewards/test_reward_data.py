"""The reward_model job's data path (gui_jax/jobs/reward_model.py build_reward_data): hard negatives mined with an
earlier RM, potential step labels of failed PhoneSim trajectories, and the rm.data fields that turn them on."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gui_jax.core.types import Action
from gui_jax.envs.sim import PhoneSim
from gui_jax.jobs import reward_model as job
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.potential import PhoneSimPotential, phonesim_rollout, slipping_expert
from gui_jax.tasks import make_task
from gui_jax.tasks.generate import generate_episode
from gui_jax.train.config_blocks import rm_data_block

from support.fake_policy import make_episode

REPO = Path(__file__).resolve().parents[2]


def _dcfg(**kw):
    d = rm_data_block()
    d.clicks_per_step, d.substitution, d.continuation = 0, False, False
    for k, v in kw.items():
        d[k] = v
    return d


# ------------------------------------------------------------------------------------------ hard negatives
# three steps; step t's screen lists "item 0..2" and the expert taps item t, so the other two taps are wrong
FALSE_POSITIVES = {(0, 1): 0.5, (0, 2): 0.49, (1, 0): 0.95, (1, 2): 0.2, (2, 0): 0.0, (2, 1): 0.7}


def test_hard_negative_mining_picks_exactly_the_earlier_rms_false_positives():
    ep = make_episode(n=3)
    seen = []

    def earlier_rm(records, episodes):            # the earlier RM: P(+) by (step, tapped element)
        assert set(episodes) == {ep.episode_id}
        seen.extend((r.steps[-1].step, r.steps[-1].action.element, r.label) for r in records)
        return [FALSE_POSITIVES[(r.steps[-1].step, r.steps[-1].action.element)] for r in records]

    data = job.build_reward_data([ep], np.random.default_rng(0), _dcfg(hard_negative_checkpoint="earlier",
                                                                        hard_negative_clicks=5),
                                 earlier_rm=earlier_rm)
    # the earlier RM scored every wrong tap (the right ones cannot be false positives) ...
    assert sorted(seen) == sorted((t, e, False) for t, e in FALSE_POSITIVES)
    # ... and exactly those it judged correct (P(+) ≥ 0.5) are mined, each with its score
    mined = [r for r in data.records if r.source == "hard_negative"]
    assert sorted((r.steps[-1].step, r.steps[-1].action.element, r.info["score"]) for r in mined) == [
        (0, 1, 0.5), (1, 0, 0.95), (2, 1, 0.7)]
    assert all(r.kind == "step" and r.label is False and r.info["drawn_as"] == "rule" for r in mined)
    assert [s.step for s in mined[0].steps[:-1]] == list(range(mined[0].steps[-1].step))   # expert history
    # the other records are the ones the job builds without mining
    plain = job.build_reward_data([ep], np.random.default_rng(0), _dcfg()).records
    assert [r for r in data.records if r.source != "hard_negative"] == plain
    assert de.label_balance(data.records)["step/hard_negative"] == {"pos": 0, "neg": 3}


def test_mined_taps_skip_the_steps_rule_and_sibling_candidates():
    ep = generate_episode(make_task("music.play", 1), PhoneSim(render=False))
    seen = []
    data = job.build_reward_data([ep], np.random.default_rng(0), _dcfg(
        clicks_per_step=2, sibling_clicks=3, hard_negative_checkpoint="earlier", hard_negative_clicks=100),
        earlier_rm=lambda recs, eps: seen.extend(recs) or [1.0] * len(recs))
    drawn = {(r.steps[-1].step, r.steps[-1].action.element) for r in data.records
             if r.source in ("rule", "sibling") and r.steps[-1].action is not None}
    mined = {(r.steps[-1].step, r.steps[-1].action.element) for r in seen}
    assert mined and not mined & drawn
    # every wrong tap the earlier RM scored 1.0 is mined; none of them is the expert's target
    assert {(r.steps[-1].step, r.steps[-1].action.element) for r in data.records
            if r.source == "hard_negative"} == mined
    assert all(not de.rule_label(ep, t, Action("click", x=0, y=0, element=e).replace(
        x=ep.observations[t].ui_elements[e].center[0], y=ep.observations[t].ui_elements[e].center[1]))
        for t, e in mined)


def test_bad_earlier_rm_scores_and_missing_sources_are_named():
    ep = make_episode(n=3)
    cfg = _dcfg(hard_negative_checkpoint="earlier")
    with pytest.raises(ValueError, match=r"6 records but 5 scores from the earlier reward model"):
        job.build_reward_data([ep], np.random.default_rng(0), cfg, earlier_rm=lambda r, e: [0.9] * 5)
    with pytest.raises(ValueError, match=r"scored record 0 \(episode 'Turn on Wi-Fi', step \d\) nan"):
        job.build_reward_data([ep], np.random.default_rng(0), cfg, earlier_rm=lambda r, e: [float("nan")] * len(r))
    with pytest.raises(ValueError, match="rm.data.hard_negative_checkpoint is set but no earlier reward model"):
        job.build_reward_data([ep], np.random.default_rng(0), cfg)
    with pytest.raises(ValueError, match="rm.data.potential_labels is on but no rollout source"):
        job.build_reward_data([ep], np.random.default_rng(0), _dcfg(potential_labels=True))


# ------------------------------------------------------------------------------------------ potential labels
def test_potential_records():
    ep = make_episode(n=3)
    recs = de.potential_records(ep, [True, False, np.bool_(True)])
    assert [(r.kind, [s.step for s in r.steps], r.label, r.source) for r in recs] == [
        ("step", [0], True, "potential"), ("step", [0, 1], False, "potential"), ("step", [0, 1, 2], True, "potential")]
    assert all(r.goal == ep.goal and {s.episode_id for s in r.steps} == {ep.episode_id} for r in recs)
    assert all(s.action is None for r in recs for s in r.steps)        # the trajectory's own actions
    with pytest.raises(ValueError, match=r"2 labels for 3 steps of 'Turn on Wi-Fi'"):
        de.potential_records(ep, [True, False])
    with pytest.raises(ValueError, match=r"must be True / False; step 1 has 'yes'"):
        de.potential_records(ep, [True, "yes", False])


class StubRollouts:
    """A failed trajectory known in advance; continuation i from step t succeeds iff (t, i) is in `wins`."""

    def __init__(self, wins):
        self.wins, self.calls = wins, []

    def failed_trajectory(self, ep, seed):
        failed = make_episode(goal=ep.goal, n=3)
        failed.episode_id = f"{ep.episode_id}/failed"
        return failed

    def continuation(self, expert, failed, seed):
        def succeeds(t, i):
            self.calls.append((t, i))
            return (t, i) in self.wins
        return succeeds


def test_exactly_one_of_five_continuations_makes_a_positive_step():
    ep = make_episode(goal="Open the clock", n=2)
    # step 0: none of 5 succeeds; step 1: only the 4th; step 2: the first
    stub = StubRollouts({(1, 3), (2, 0)})
    data = job.build_reward_data([ep], np.random.default_rng(0), _dcfg(potential_labels=True), potential=stub)
    pot = [r for r in data.records if r.source == "potential"]
    assert [(len(r.steps), r.label) for r in pot] == [(1, False), (2, True), (3, True)]
    assert {s.episode_id for r in pot for s in r.steps} == {"Open the clock/failed"}
    assert set(data.episodes) == {"Open the clock", "Open the clock/failed"}       # the lookup holds the rollout
    assert stub.calls == [(0, i) for i in range(5)] + [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0)]
    # k comes from rm.data.potential_continuations: with 3, the 4th continuation is never run
    three = job.build_reward_data([ep], np.random.default_rng(0), _dcfg(potential_labels=True,
                                                                        potential_continuations=3),
                                  potential=StubRollouts({(1, 3), (2, 0)}))
    assert [r.label for r in three.records if r.source == "potential"] == [False, False, True]
    # the other records are the ones the job builds without potential labels
    assert [r for r in data.records if r.source != "potential"] == job.build_reward_data(
        [ep], np.random.default_rng(0), _dcfg()).records


def test_the_slipping_expert_follows_the_expert_and_resumes_after_a_back():
    task = make_task("music.play", 1)
    ep = generate_episode(task, PhoneSim(render=False))
    rng = np.random.default_rng(0)
    clean = phonesim_rollout(task, slipping_expert(ep, 0.0), rng, max_steps=10, record=True)
    assert clean.success and [a.replace(action_desc=None) for a in clean.actions] == [
        a.replace(action_desc=None) for a in ep.actions]
    assert [a.action_desc for a in clean.actions] == [a.action_desc for a in ep.actions]
    # a Back to the home screen: the expert opens the app again and finishes
    back = Action("system_button", button="Back")
    r = phonesim_rollout(task, slipping_expert(ep, 0.0), rng, prefix=[ep.actions[0], back], max_steps=10, record=True)
    assert r.success and [a.type for a in r.actions] == ["open", "system_button", "open", "click", "terminate"]
    assert len(r.observations) == len(r.actions) + 1


def test_phonesim_failed_trajectories_are_labelled_by_their_continuations():
    class Recording(PhoneSimPotential):                   # remembers the seed the job gave the continuations
        def continuation(self, expert, failed, seed):
            self.seed = seed
            return super().continuation(expert, failed, seed)

    ep = generate_episode(make_task("clock.delete_alarm", 1), PhoneSim(render=False))
    source = Recording(slip=0.3, attempts=5)
    data = job.build_reward_data([ep], np.random.default_rng(0), _dcfg(potential_labels=True), potential=source)
    failed = [e for k, e in data.episodes.items() if k != ep.episode_id]
    assert len(failed) == 1
    f = failed[0]
    assert f.episode_id.startswith("clock.delete_alarm#1/failed") and f.info["success"] is False
    assert all(a.action_desc for a in f.actions) and len(f.observations) == len(f.actions) + 1
    # replaying the recorded trajectory fails PhoneSim's check, as the rollout said
    replay = phonesim_rollout(make_task("clock.delete_alarm", 1), lambda *a: Action("terminate", status="failure"),
                              np.random.default_rng(0), prefix=f.actions, max_steps=1)
    assert replay.success is False
    pot = [r for r in data.records if r.source == "potential"]
    assert [len(r.steps) for r in pot] == list(range(1, len(f.actions) + 1))
    # each label is PhoneSim's verdict on the continuations (rerun from the same seeds)
    assert [r.label for r in pot] == de.potential_labels(len(f.actions), source.continuation(ep, f, source.seed), 5)
    assert 0 < sum(r.label for r in pot) < len(pot)


def test_potential_labels_need_phonesim_episodes():
    ep = make_episode(n=2)                                 # hand-built: no template / seed to rebuild the task
    with pytest.raises(ValueError, match=r"rm.data.potential_labels: episode 'Turn on Wi-Fi' names no PhoneSim task"):
        job.build_reward_data([ep], np.random.default_rng(0), _dcfg(potential_labels=True),
                              potential=PhoneSimPotential(0.3, 5))


# ------------------------------------------------------------------------------------------ the recipe's fields
def _recipe(*overrides):
    from gui_jax.core.recipe_files import load_python_file
    config = load_python_file(str(REPO / "configs" / "reward_model.py")).get_config()
    for path, value in overrides:
        node = config
        *head, last = path.split(".")
        for part in head:
            node = node[part]
        node[last] = value
    return config


def test_the_recipe_turns_both_sources_on(monkeypatch):
    from gui_jax.jobs import verifier_eval
    config = _recipe(("rm.data.hard_negative_checkpoint", "runs/rm_round0/rm/checkpoints"),
                     ("rm.data.potential_labels", True), ("rm.data.potential_slip", 0.2),
                     ("rm.data.potential_continuations", 3))
    loaded = []
    monkeypatch.setattr(verifier_eval, "load_policy", lambda cfg, path, field: loaded.append((path, field)) or (
        "earlier-agent", {"kind": "orbax"}))

    class Scorer:
        def __init__(self, agent, lookup, pcfg, rcfg):
            self.agent = agent

        def score(self, records):
            return np.full(len(records), 0.9 if self.agent == "earlier-agent" else 0.0)
    monkeypatch.setattr(job, "make_scorer", Scorer)
    sources = job.data_sources(config, *job.rm_configs(config))
    assert loaded == [("runs/rm_round0/rm/checkpoints", "rm.data.hard_negative_checkpoint")]
    pot = sources["potential"]
    assert (pot.slip, pot.attempts, pot.render, pot.resolution) == (0.2, 3, True, tuple(config.data.resolution))
    ep = generate_episode(make_task("clock.alarm_toggle", 1), PhoneSim(render=False))
    data = job.build_reward_data([ep], np.random.default_rng(0), config.rm.data, **sources)
    sources_seen = {r.source for r in data.records}
    assert {"expert", "rule", "hard_negative", "potential"} <= sources_seen
    assert job.data_sources(_recipe(), *job.rm_configs(config)) == {}          # both off by default


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "gui_jax.main", "--config", str(REPO / "configs" / "reward_model.py"),
                           *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_command_line_fields_are_checked_and_documented(tmp_path):
    # a bad value stops the job before any work (nothing written), naming the field
    p = _cli("--config.rm.data.hard_negative_checkpoint=/no/such/rm", f"--workdir={tmp_path / 'a'}")
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1] == (
        "error: config.rm.data.hard_negative_checkpoint = '/no/such/rm': no such directory (parent does not exist "
        "either)")
    p = _cli("--config.rm.data.potential_continuations=0", f"--workdir={tmp_path / 'b'}")
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1] == (
        "error: config.rm.data.potential_continuations = 0: expected an integer ≥ 1")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    p = _cli("--config.rm.data.potential_labels=True", "--config.rm.data.potential_slip=0.1", "--help")
    assert p.returncode == 0, p.stderr[-2000:]
    lines = {ln.strip().split(" = ", 1)[0]: ln.strip() for ln in p.stdout.splitlines() if " = " in ln}
    from gui_jax.train.config_blocks import RM_DATA
    for f in RM_DATA:                                       # every field, with its value and its one-line doc
        assert lines[f"rm.data.{f.name}"].endswith(f"# {f.doc}"), f.name
    assert lines["rm.data.potential_labels"].startswith("rm.data.potential_labels = True ")
    assert lines["rm.data.potential_slip"].startswith("rm.data.potential_slip = 0.1 ")
