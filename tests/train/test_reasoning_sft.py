"""Reasoning-SFT bootstrap keeps exactly the sampled thoughts whose action matched the expert."""
import types

from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.reasoning_sft import collect_thoughts

from support.fake_policy import ScriptedPolicy, click_response, make_episode


def test_collect_thoughts_keeps_verified_only():
    eps = [make_episode("g1", n=3), make_episode("g2", n=2)]
    pcfg = PromptConfig(observation="screenshot", history_turns=8)

    def script(goal, msgs, text):
        t = sum(m["role"] == "assistant" for m in msgs)
        if goal == "g1" and t == 1:
            return click_response(t, correct=False, thought="wrong place")
        if goal == "g2" and t == 0:
            return click_response(t, correct=True, thought="")  # right action, no thought: not kept
        return click_response(t, correct=True, thought=f"tap item {t} of {goal}")
    agent = types.SimpleNamespace(policy=ScriptedPolicy(script))
    kept = collect_thoughts(agent, eps, pcfg, samples_per_step=2, temperature=1.0, seed=0)
    assert kept == {(0, 0): "tap item 0 of g1", (0, 2): "tap item 2 of g1", (1, 1): "tap item 1 of g2"}
    # Two sampling rounds: the second only re-asks the steps still missing a thought.
    assert [len(c) for c in agent.policy.calls] == [5, 2]


def test_collect_thoughts_chunks_prompts_for_progress():
    eps = [make_episode("g1", n=3), make_episode("g2", n=2)]
    pcfg = PromptConfig(observation="screenshot", history_turns=8)
    agent = types.SimpleNamespace(policy=ScriptedPolicy(lambda goal, msgs, text: click_response(
        sum(m["role"] == "assistant" for m in msgs), correct=True, thought="ok")))
    kept = collect_thoughts(agent, eps, pcfg, samples_per_step=1, temperature=1.0, seed=0, chunk_size=2,
                            progress=False)
    assert len(kept) == 5 and [len(c) for c in agent.policy.calls] == [2, 2, 1]


def test_zero_verified_thoughts_stops_with_clear_error(tmp_path):
    import ml_collections
    import pytest

    from gui_jax.train.reasoning_sft import NoVerifiedThoughtsError, reasoning_bootstrap
    eps = [make_episode("g1", n=3), make_episode("g2", n=2)]
    pcfg = PromptConfig(observation="screenshot", history_turns=8)
    agent = types.SimpleNamespace(policy=ScriptedPolicy(lambda goal, msgs, text: click_response(
        sum(m["role"] == "assistant" for m in msgs), correct=False, thought="guess")))
    cfg = ml_collections.ConfigDict({"rounds": 2, "samples_per_step": 3, "temperature": 1.0, "seed": 0,
                                     "sft": {"num_steps": 5}})
    with pytest.raises(NoVerifiedThoughtsError, match=r"round 0 kept 0 of 5 sampled steps"):
        reasoning_bootstrap(agent, eps, pcfg, cfg, workdir=str(tmp_path))
    assert len(agent.policy.calls) == 3  # every sample was tried before giving up
    assert not (tmp_path / "round_0").exists()  # nothing was trained
