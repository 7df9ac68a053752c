"""AndroidControl evaluation (AC-High / AC-Low) on a fixture in the published TFRecord schema reproduces
hand-computed TM / GR / SR and SOP (PG, TSR, Score; an episode stops at its first mismatch); the job reads
a split file and refuses to score without weights."""
import json

import numpy as np
import pytest

from gui_jax.core.types import Action
from gui_jax.data.androidcontrol import read_androidcontrol, write_androidcontrol_tfrecord
from gui_jax.eval.metrics import wilson_interval
from gui_jax.jobs import load_config
from gui_jax.jobs.androidcontrol_eval import evaluate_androidcontrol, format_table, load_episodes, run
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig, expert_response


def _fixture(tmp_path):
    rng = np.random.default_rng(0)
    img = lambda: rng.integers(0, 256, (240, 108, 3), dtype=np.uint8)  # noqa: E731
    eps = [
        {"episode_id": 11, "goal": "Say hello", "screenshots": [img() for _ in range(4)],
         "actions": [{"action_type": "click", "x": 50, "y": 100}, {"action_type": "input_text", "text": "hello"},
                     {"action_type": "navigate_back"}],
         "step_instructions": ["instr 11-0 tap the field", "instr 11-1 type hello", "instr 11-2 go back"]},
        {"episode_id": 12, "goal": "Find the button", "screenshots": [img() for _ in range(3)],
         "actions": [{"action_type": "scroll", "direction": "down"}, {"action_type": "click", "x": 20, "y": 200}],
         "step_instructions": ["instr 12-0 scroll down", "instr 12-1 tap it"]},
        {"episode_id": 13, "goal": "Not in the split", "screenshots": [img() for _ in range(2)],
         "actions": [{"action_type": "navigate_home"}], "step_instructions": ["home"]},
    ]
    path = tmp_path / "android_control-00000-of-00001"
    write_androidcontrol_tfrecord(path, eps)
    (tmp_path / "splits.json").write_text(json.dumps({"train": [13], "test": [11, 12]}))
    return path


class QueuePolicy:
    """Answers prompts in order from a list of responses; records the prompts."""

    def __init__(self, responses):
        self.responses, self.prompts = list(responses), []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.prompts += prompts
        out = [self.responses.pop(0) for _ in prompts]
        return [Generation(text=t, prompt_ids=np.zeros(2, np.int32), response_ids=np.zeros(1, np.int32),
                           logprobs=np.zeros(1, np.float32)) for t in out]


def test_ac_high_and_low_reproduce_hand_computed_metrics(tmp_path):
    path = _fixture(tmp_path)
    acfg = load_config("configs/androidcontrol_eval.py").androidcontrol
    acfg.paths, acfg.split_file = (str(path),), str(tmp_path / "splits.json")
    eps = load_episodes(acfg)
    assert [str(e.episode_id) for e in eps] == ["11", "12"]
    pcfg = PromptConfig(dialect="ui_s1", observation="screenshot", target="coordinate", history_turns=2)
    good = [expert_response(a, eps[e].observations[t], pcfg) for e, t, a in
            ((e, t, a) for e, ep in enumerate(eps) for t, a in enumerate(ep.actions))]
    wrong_type = expert_response(Action("click", x=54, y=120), eps[0].observations[2], pcfg)
    far_click = expert_response(Action("click", x=100, y=10), eps[1].observations[1], pcfg)
    bye = expert_response(Action("type", text="bye"), eps[0].observations[1], pcfg)
    # AC-High: steps A0 ✓, A1 ✓, A2 wrong type, B0 ✓, B1 right type wrong place
    # AC-Low:  every step right except A1 (wrong text)
    high = [good[0], good[1], wrong_type, good[3], far_click]
    low = [good[0], bye, good[2], good[3], good[4]]
    policy = QueuePolicy(high + low)
    res = evaluate_androidcontrol(policy, eps, pcfg, levels=("high", "low"), sop=False)
    h, lo = res["AC-High"], res["AC-Low"]
    assert (h["TM"], h["SR"], h["GR"], h["steps"]) == (pytest.approx(4 / 5), pytest.approx(3 / 5), 0.5, 5)
    assert (lo["TM"], lo["SR"], lo["GR"]) == (1.0, pytest.approx(4 / 5), 1.0)
    # Wilson 95 % for 3/5 by hand: centre (0.6 + z²/10)/(1 + z²/5), half-width z·√(0.048 + z²/100)/(1 + z²/5)
    z = 1.959963984540054
    centre, half = (0.6 + z * z / 10) / (1 + z * z / 5), z * np.sqrt(0.048 + z * z / 100) / (1 + z * z / 5)
    assert h["SR_ci95"] == pytest.approx([centre - half, centre + half], abs=1e-6)
    assert tuple(h["SR_ci95"]) == pytest.approx(wilson_interval(3, 5))
    prompts = [str(msgs) for msgs, _ in policy.prompts]
    assert len(prompts) == 10
    assert not any("instr" in p for p in prompts[:5])  # AC-High prompts carry the goal only
    assert all(f"instr {i}" in p for p, i in zip(prompts[5:], ["11-0", "11-1", "11-2", "12-0", "12-1"]))
    assert "Say hello" in prompts[0] and "Say hello" not in prompts[6]
    assert "| AC-High | 0.800 | 0.500 | 0.600 [" in format_table(res)


class StepPolicy:
    """Answers by (goal, step): the step is the number of earlier responses in the prompt (SOP shows the
    policy's own history); records the (goal, step) pairs asked and the history each prompt carried."""

    def __init__(self, responses):
        self.responses, self.asked = responses, []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        out = []
        for msgs, _ in prompts:
            goal = msgs[1]["content"][0]["text"].split("\n")[0].removeprefix("Goal: ")
            history = [m["content"] for m in msgs if m["role"] == "assistant"]
            self.asked.append((goal, len(history), history))
            out.append(Generation(text=self.responses[goal, len(history)], prompt_ids=np.zeros(2, np.int32),
                                  response_ids=np.zeros(1, np.int32), logprobs=np.zeros(1, np.float32)))
        return out


def test_sop_on_androidcontrol_stops_at_the_first_mismatch(tmp_path):
    path = _fixture(tmp_path)
    acfg = load_config("configs/androidcontrol_eval.py").androidcontrol
    acfg.paths, acfg.split_file = (str(path),), str(tmp_path / "splits.json")
    a, b = load_episodes(acfg)
    pcfg = PromptConfig(dialect="ui_s1", observation="screenshot", target="coordinate", history_turns=2)
    good = {(ep.goal, t): expert_response(act, ep.observations[t], pcfg)
            for ep in (a, b) for t, act in enumerate(ep.actions)}
    # A: step 0 right, step 1 types the wrong text (A's step 2 is never asked); B: both steps right
    policy = StepPolicy({**good, (a.goal, 1): expert_response(Action("type", text="bye"), a.observations[1], pcfg)})
    res = evaluate_androidcontrol(policy, [a, b], pcfg, levels=(), sop=True)
    # s/t: A 1/3, B 2/2 -> PG = (1/3 + 1)/2, TSR = 1/2, Score = (PG + TSR)/2
    assert res["SOP"] == {"PG": pytest.approx(2 / 3), "TSR": 0.5, "Score": pytest.approx(7 / 12), "episodes": 2.0}
    assert sorted((g, t) for g, t, _ in policy.asked) == sorted([(a.goal, 0), (a.goal, 1), (b.goal, 0), (b.goal, 1)])
    b1 = next(h for g, t, h in policy.asked if (g, t) == (b.goal, 1))
    assert b1 == [good[b.goal, 0]]  # the policy's own earlier response is the history
    assert "SOP: PG 0.667, TSR 0.500, Score 0.583" in format_table(res)


def test_job_refuses_to_score_without_weights(tmp_path):
    path = _fixture(tmp_path)
    cfg = load_config("configs/androidcontrol_eval.py")
    cfg.androidcontrol.paths = (str(path),)
    with pytest.raises(ValueError, match="needs model.checkpoint"):
        run(cfg, str(tmp_path))
    cfg.androidcontrol.paths = (str(tmp_path / "nothing-*"),)
    cfg.eval.untrained = True
    with pytest.raises(ValueError, match="match no file"):
        run(cfg, str(tmp_path))
