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


def test_described_thoughts_name_the_target_in_its_ui_token_form():
    from gui_jax.envs.sim import make_task
    from gui_jax.tasks.generate import generate_episodes
    from gui_jax.train.reasoning_sft import described_thoughts
    [ep] = list(generate_episodes([make_task("music.play", 3)], resolution=(112, 252), progress=False))
    got = described_thoughts([ep, make_episode("g1", n=2)])
    song = ep.goal.split("'")[1]   # "Play the song 'Neon Road'."
    # PhoneSim's descriptions, quotes dropped: "tap 'X' in Music" → "tap X in Music"
    assert [got[(0, t)] for t in range(len(ep.actions))] == ["open Music", f"tap {song} in Music",
                                                             "declare the task done"]
    assert got[(1, 0)] == "tap item 0" and got[(1, 1)] == "tap item 1"


def test_described_round_then_sampled_round_and_resume_without_resampling(tmp_path, monkeypatch):
    import ml_collections

    import gui_jax.train.reasoning_sft as rs
    trained = []
    monkeypatch.setattr(rs, "train_sft", lambda agent, eps, pcfg, cfg, *, workdir, thoughts, **kw: trained.append(
        (workdir, [e.goal for e in eps], dict(thoughts))))
    eps = [make_episode("g1", n=2), make_episode("g2", n=1)]
    pcfg = PromptConfig(observation="screenshot", history_turns=8)

    def script(goal, msgs, text):
        t = sum(m["role"] == "assistant" for m in msgs)
        return click_response(t, correct=(goal == "g1"), thought=f"my thought {t}")
    agent = types.SimpleNamespace(policy=ScriptedPolicy(script))
    cfg = ml_collections.ConfigDict({"rounds": 2, "samples_per_step": 2, "temperature": 1.0, "seed": 0,
                                     "seed_thoughts": "describe", "sft": {"num_steps": 5}})
    hist = rs.reasoning_bootstrap(agent, eps, pcfg, cfg, workdir=str(tmp_path))
    assert [(h["source"], h["kept_steps"]) for h in hist] == [("described", 3), ("sampled", 2)]
    assert trained[0][1:] == (["g1", "g2"], {(0, 0): "tap item 0", (0, 1): "tap item 1", (1, 0): "tap item 0"})
    # round 1: only g1's sampled actions match the expert; its episodes are renumbered from 0
    assert trained[1][1:] == (["g1"], {(0, 0): "my thought 0", (0, 1): "my thought 1"})
    assert len(agent.policy.calls) == 2          # round 0 sampled nothing; round 1 asked twice for g2's step
    again = rs.reasoning_bootstrap(agent, eps, pcfg, cfg, workdir=str(tmp_path))
    assert again == hist and len(agent.policy.calls) == 2   # a re-run reads the saved thoughts
    assert [t[1:] for t in trained[2:]] == [t[1:] for t in trained[:2]]
