"""GreedyMemo: each distinct greedy prompt is decoded once; SOP, step metrics and the greedy online
trial give exactly the results of the unmemoised policy; sampled calls pass through."""
import numpy as np

from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.envs.sim.phonesim import expert_actions, make_task
from gui_jax.eval.greedy_memo import GreedyMemo, prompt_key
from gui_jax.eval.offline import evaluate_sop, evaluate_steps
from gui_jax.eval.online_success import run_online_episodes
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig
from support.fake_policy import goal_and_step
from gui_jax.tasks.generate import generate_episodes

PCFG = PromptConfig(dialect="ui_genie", observation="ui_text", target="coordinate", history_turns=0,
                    history_mode="compact")
TASKS = [make_task("settings.bluetooth_on", 0), make_task("music.play", 3), make_task("expenses.amount", 5)]


class ScriptedPolicy:
    """Replays the oracle, except a wrong tap at step 1 of TASKS[1]; counts the prompts it decodes."""

    def __init__(self):
        self.plans = {t.goal: [s.action for s in expert_actions(t)] for t in TASKS}
        self.decoded = 0
        self.keys = []

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.keys += [prompt_key(p, max_new_tokens) for p in prompts]
        self.decoded += len(prompts)
        out = []
        for messages, _ in prompts:
            goal, t = goal_and_step(messages)
            action = self.plans[goal][t] if t < len(self.plans[goal]) else Action("wait", time=1.0)
            if goal == TASKS[1].goal and t == 1:
                action = Action("click", x=1, y=1)
            out.append(Generation(format_response(action, "ui_genie"), np.zeros(1, np.int32),
                                  np.zeros(1, np.int32), np.zeros(1, np.float32)))
        return out


def _suite(policy, episodes):
    sop = evaluate_sop(policy, episodes, PCFG)
    steps = evaluate_steps(policy, episodes, PCFG)
    online = run_online_episodes(policy, TASKS, PCFG, trials=1, temperature=0.0, max_steps=6, progress=False)
    return sop, steps, [(r["task_id"], r["success"], r["steps"]) for r in online]


def test_memo_gives_the_unmemoised_results_with_fewer_decodes():
    episodes = list(generate_episodes(TASKS, resolution=(112, 252), progress=False))
    raw = ScriptedPolicy()
    expected = _suite(raw, episodes)
    assert [s for _, s, _ in expected[2]] == [True, False, True]  # the wrong tap fails TASKS[1]
    inner = ScriptedPolicy()
    memo = GreedyMemo(inner)
    assert _suite(memo, episodes) == expected
    assert memo.hits + memo.misses == raw.decoded
    assert inner.decoded == memo.misses == len(set(raw.keys)) < raw.decoded
    # SOP decodes 7 of the 9 expert-history prompts (it stops at TASKS[1]'s wrong tap), the step metrics
    # the other 2; the greedy trials see the recorded screens again while they follow the oracle, so they
    # add only 2 prompts: the screen after TASKS[1]'s wrong tap, and the bluetooth task's screen after its
    # last expert action (a click, which does not end the episode)
    assert sum(len(ep.actions) for ep in episodes) == 9
    assert memo.misses == 9 + 2


def test_sampled_calls_pass_through_and_keys_separate_budgets():
    inner = ScriptedPolicy()
    memo = GreedyMemo(inner)
    episodes = list(generate_episodes(TASKS[:1], resolution=(112, 252), progress=False))
    prompt = ([{"role": "user", "content": [{"type": "text", "text": f"Goal: {TASKS[0].goal}\nUI: x"}]}], [])
    memo.generate([prompt, prompt], temperature=1.0, seed=0)
    memo.generate([prompt, prompt], temperature=1.0, seed=0)
    assert inner.decoded == 4 and memo.hits == memo.misses == 0
    memo.generate([prompt, prompt], temperature=0.0, seed=0)
    memo.generate([prompt], temperature=0.0, seed=5)  # greedy: the seed does not matter
    assert inner.decoded == 5 and (memo.hits, memo.misses) == (2, 1)
    assert prompt_key(prompt, None) != prompt_key(prompt, 8)
    img = np.zeros((2, 2, 3), np.uint8)
    assert prompt_key((prompt[0], [img]), None) != prompt_key((prompt[0], [img + 1]), None)
    assert memo.plans is inner.plans  # other attributes delegate
    assert len(episodes) == 1
