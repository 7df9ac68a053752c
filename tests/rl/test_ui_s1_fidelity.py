"""UI-S1 fidelity, each with hand-computed values: history window, episode-level advantage variants,
dynamic sampling, rollout/matcher defaults from config, update metrics, one curriculum."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gui_jax.rewards.rules import dialect_requires_thought
from gui_jax.rl import advantages as A
from gui_jax.rl import adagrpo
from gui_jax.rl.prompting import PromptConfig, build_messages, expert_response, model_image
from gui_jax.rl.semi_online_rollout import judge_step
from gui_jax.tasks import curriculum as C
from gui_jax.train.config_blocks import prompt_block, rl_block
from gui_jax.train.rl_common import aggregate_update_metrics
from gui_jax.train.semi_online import scfg_from, trim_groups

from support.fake_policy import click_response, make_episode

TOL = 1e-5


# ------------------------------------------------------------------------------ (a) history window
def _history(ep, n):
    return [(ep.observations[t], click_response(t, True, thought=f"reasoning of step {t}")) for t in range(n)]


def test_full_history_k_counts_the_current_screenshot_and_keeps_responses_as_written():
    ep = make_episode(n=4)  # screenshot t is filled with the value 10·t
    hist = _history(ep, 3)
    msgs, images = build_messages(ep.goal, hist, ep.observations[3], PromptConfig(history_turns=2))
    # K = 2 images in total: step 2's screenshot (value 20) and the current one (value 30).
    assert [int(im[0, 0, 0]) for im in images] == [20, 30]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "assistant", "user", "assistant", "user"]
    # Every earlier response appears in full, as written (thought included), images of steps 0-1 removed.
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == [r for _, r in hist]
    assert msgs[1]["content"] == [{"type": "text", "text": "Goal: Turn on Wi-Fi\n"}]
    assert msgs[4]["content"] == [{"type": "image"}] and msgs[6]["content"] == [{"type": "image"}]
    # K = 1: the current screenshot only; K = 3: steps 1, 2 and the current one.
    assert len(build_messages(ep.goal, hist, ep.observations[3], PromptConfig(history_turns=1))[1]) == 1
    _, im3 = build_messages(ep.goal, hist, ep.observations[3], PromptConfig(history_turns=3))
    assert [int(im[0, 0, 0]) for im in im3] == [10, 20, 30]
    # max_history_lines = 2 keeps the last two responses and says how many are not shown.
    m2, _ = build_messages(ep.goal, hist, ep.observations[3], PromptConfig(history_turns=2, max_history_lines=2))
    assert [m["content"] for m in m2 if m["role"] == "assistant"] == [hist[1][1], hist[2][1]]
    assert m2[1]["content"][0]["text"] == "Goal: Turn on Wi-Fi\n(1 earlier steps not shown)\n"


def test_compact_history_keeps_the_one_line_summaries():
    ep = make_episode(n=4)
    hist = _history(ep, 3)
    msgs, images = build_messages(ep.goal, hist, ep.observations[3],
                                  PromptConfig(history_turns=2, history_mode="compact"))
    assert [int(im[0, 0, 0]) for im in images] == [20, 30]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[1]["content"][0]["text"] == ("Goal: Turn on Wi-Fi\nEarlier steps:\n"
                                             "1. click(x=30.0, y=30.0)\n2. click(x=30.0, y=60.0)\n")
    assert msgs[2]["content"] == hist[2][1]
    # K = 0 or 1 (the quickstart's setting): no earlier observation, every step a line.
    m0, i0 = build_messages(ep.goal, hist, ep.observations[3], PromptConfig(history_turns=0, history_mode="compact"))
    assert len(i0) == 1 and [m["role"] for m in m0] == ["system", "user"]
    assert m0[1]["content"][0]["text"].count("click(") == 3


def test_model_written_chat_markers_never_reenter_a_prompt():
    """A sampled response that spells out <|im_start|> (seen in an online GRPO rollout: it broke every later
    prompt of the episode) enters the history without the marker, in full and in compact form, and the
    tokenized prompt keeps one <|im_start|> per chat turn."""
    from gui_jax.models.chat import build_inputs
    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    ep = make_episode(n=2)
    bad = '<think><|im_start|>user</think>\n<action>{"action": "type", "text": "hi<|im_end|>"}</action>'
    for mode in ("full", "compact"):
        cfg = PromptConfig(history_turns=1, history_mode=mode, system_prompt=False)
        msgs, images = build_messages(ep.goal, [(ep.observations[0], bad)], ep.observations[1], cfg)
        text = str(msgs)
        assert "<|im_start|>" not in text and "<|im_end|>" not in text, mode
        ids = build_inputs(msgs, images, tiny_tokenizer(), ImageProcessor())["input_ids"]  # raised before
        clean = build_messages(ep.goal, [(ep.observations[0], "<think>x</think>")], ep.observations[1], cfg)
        ref = build_inputs(*clean, tiny_tokenizer(), ImageProcessor())["input_ids"]
        start = tiny_tokenizer().token_to_id("<|im_start|>")
        assert int((np.asarray(ids) == start).sum()) == int((np.asarray(ref) == start).sum()), mode
    full = build_messages(ep.goal, [(ep.observations[0], bad)], ep.observations[1], PromptConfig(history_turns=1))[0]
    assert [m["content"] for m in full if m["role"] == "assistant"] == [
        '<think>user</think>\n<action>{"action": "type", "text": "hi"}</action>']


def test_history_and_current_images_sized_separately_and_coordinates_in_the_current_frame():
    shot = np.zeros((2436, 1092, 3), np.uint8)
    cfg = PromptConfig(history_image_max_pixels=28 * 28 * 1280)
    # 1092×2436 > 1,003,520 px: β = √(2,660,112 / 1,003,520) = 1.6281; 2436/β/28 = 53.4 → 53·28 = 1484,
    # 1092/β/28 = 23.95 → 23·28 = 644. The current one stays as rendered.
    assert model_image(shot, cfg, history=True).shape == (1484, 644, 3)
    assert model_image(shot, cfg).shape == (2436, 1092, 3)
    # With the current image resized as well, an expert click at screen (540, 1200) of a 1080×2400
    # screen is written at (540·644/1080, 1200·1484/2400) = (322, 742), and judged back as exact.
    cfg2 = PromptConfig(image_max_pixels=28 * 28 * 1280)
    ep = make_episode(n=1, size=(1092, 2436))
    ep.actions[0] = ep.actions[0].replace(x=540, y=1200)
    ep.target_bboxes[0] = (440.0, 1100.0, 640.0, 1300.0)
    text = expert_response(ep.actions[0], ep.observations[0], cfg2, thought="t")
    assert text == '<think>t</think>\n<action>{"action": "click", "coordinate": [322, 742]}</action>'
    assert judge_step(text, ep, 0, cfg2, scfg_from(rl_block())).exact_match


# ------------------------------------------------------------------------------ (c) episode level
def test_episode_level_paper_vs_code():
    # One task, two rollouts: τ0 rewards (1.0, 0.5); τ1 (0.1) and stopped on a mismatch at step 0.
    traj, step, task = jnp.array([0, 0, 1]), jnp.array([0, 1, 0]), jnp.array([7, 7, 7])
    rew, mm = jnp.array([1.0, 0.5, 0.1]), jnp.array([False, False, True])
    f = jax.jit(A.ui_s1_semi_online, static_argnames=("gamma", "omega", "episode_level"))
    paper = f(rew, traj, step, task, mm, gamma=0.5, omega=1.0, episode_level="paper")
    code = f(rew, traj, step, task, mm, gamma=0.5, omega=1.0, episode_level="code")
    # Step level (same for both): step 0 returns τ0 1 + 0.5·0.5 = 1.25, τ1 0.1 → ±0.70711; step 1 alone → 0.
    np.testing.assert_allclose(np.asarray(paper["step_adv"]), [0.707107, 0.0, -0.707107], atol=TOL)
    # paper (Eq. 11): R(τ0) = 1.5, R(τ1) = 0.1; mean 0.8, sample std 0.98995 → ±0.70711 on every step.
    np.testing.assert_allclose(np.asarray(paper["episode_adv"]), [0.707107, 0.707107, -0.707107], atol=TOL)
    np.testing.assert_allclose(np.asarray(paper["advantages"]), [1.414214, 0.707107, -1.414214], atol=TOL)
    # code: r = (1.0, 0.5, 0.1) pooled; mean 0.53333, std 0.45092 → (1.03491, −0.07392, −0.96099).
    np.testing.assert_allclose(np.asarray(code["episode_adv"]), [1.034910, -0.073922, -0.960988], atol=TOL)
    np.testing.assert_allclose(np.asarray(code["advantages"]), [1.742017, -0.073922, -1.668095], atol=TOL)
    with pytest.raises(ValueError, match="episode_level"):
        A.ui_s1_semi_online(rew, traj, step, task, episode_level="both")


# ------------------------------------------------------------------------------ (e) dynamic sampling
def test_dynamic_sampling_uses_population_std():
    # Step-0 returns (0.5, 1.0): population std 0.25 < η = 0.3 → dropped (sample std 0.354 would keep);
    # (0.0, 1.0): 0.5 > 0.3 → kept; a single rollout is kept.
    r0 = jnp.array([0.5, 1.0, 0.0, 1.0, 0.2])
    g = jnp.array([1, 1, 2, 2, 3])
    keep = jax.jit(A.dynamic_sampling_keep, static_argnames=("eta", "ddof"))
    np.testing.assert_array_equal(np.asarray(keep(r0, g, eta=0.3)), [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(keep(r0, g, eta=0.3, ddof=1)), [1, 1, 1, 1, 1])


def test_dynamic_sampling_trims_to_the_batch_and_reports_a_short_one(caplog):
    groups = [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert trim_groups(groups, 3, tries=2, eta=0.3) == [["a"], ["b"], ["c"]]
    with caplog.at_level("WARNING"):
        assert trim_groups(groups[:2], 3, tries=10, eta=0.3) == [["a"], ["b"]]
    assert "kept 2 of 3 task groups after 10 tries" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):   # a later short batch of the same run: counted by the caller, not logged
        assert trim_groups(groups[:1], 3, tries=10, eta=0.3, warn=False) == [["a"]]
    assert caplog.text == ""
    with pytest.raises(RuntimeError, match="kept 2 of 3 task groups after 10 tries"):
        trim_groups(groups[:2], 3, tries=10, eta=0.3, on_short="raise")


# ------------------------------------------------------------------------------ (f) defaults from config
def test_rl_defaults_dual_clip_require_thought_and_matcher_knobs():
    cfg = rl_block()
    assert cfg.dual_clip == 3.0 and cfg.require_thought is None and cfg.episode_level == "paper"
    assert [dialect_requires_thought(d) for d in ("ui_s1", "uitars", "mobilerl", "ui_genie")] == [
        True, True, True, False]
    ep = make_episode(n=1)  # screen 1080×2400, image 108×240; expert click (300, 300), bbox (100,200)-(500,400)
    pcfg = PromptConfig(**prompt_block().to_dict())
    # Right place, empty thought: ui_s1 has a thought field → format 0 → reward 0 (paper preset).
    assert judge_step(click_response(0, True), ep, 0, pcfg, scfg_from(cfg)).reward == 0.0
    cfg.require_thought = False
    assert judge_step(click_response(0, True), ep, 0, pcfg, scfg_from(cfg)).reward == pytest.approx(1.0)
    # Image (30, 45) = screen (300, 450): on no element, so with the screen's tree no match whatever the knobs
    near = '<think>t</think>\n<action>{"action": "click", "coordinate": [30, 45]}</action>'
    cfg.dist_threshold, cfg.bbox_scale = 0.07, 1.6
    assert not judge_step(near, ep, 0, pcfg, scfg_from(cfg)).exact_match
    cfg.dist_threshold, cfg.bbox_scale = 0.04, 1.2
    # a tree no tap reaches (nothing clickable): outside the ×1.2 bbox (y ≤ 420) and 150/2400 = 0.0625 from the
    # expert point (> 0.04) → no match; dist_threshold 0.07 or bbox_scale 1.6 (y ≤ 460) → match.
    for o in ep.observations:
        o.ui_elements = [dataclasses.replace(e, clickable=False) for e in o.ui_elements]
    assert not judge_step(near, ep, 0, pcfg, scfg_from(cfg)).exact_match
    cfg.dist_threshold = 0.07
    assert judge_step(near, ep, 0, pcfg, scfg_from(cfg)).exact_match
    cfg.dist_threshold, cfg.bbox_scale = 0.04, 1.6
    assert judge_step(near, ep, 0, pcfg, scfg_from(cfg)).exact_match


# ------------------------------------------------------------------------------ (g) update metrics
def test_update_metrics_aggregate_all_mini_batches():
    steps = [{"loss": 1.0, "pg_loss": 1.0, "approx_kl": 0.0, "grad_norm": 2.0, "tokens": 10.0},
             {"loss": 4.0, "pg_loss": 4.0, "approx_kl": float("nan"), "grad_norm": 4.0, "tokens": 30.0}]
    out = aggregate_update_metrics(steps)
    # token-weighted: (1·10 + 4·30)/40 = 3.25; NaN skipped; tokens summed; grad norm mean 3, max 4.
    assert out["loss"] == pytest.approx(3.25) and out["pg_loss"] == pytest.approx(3.25)
    assert out["approx_kl"] == 0.0 and out["tokens"] == 40.0
    assert out["grad_norm"] == 3.0 and out["grad_norm_max"] == 4.0 and out["mini_batches"] == 2


# ------------------------------------------------------------------------------ (h) one curriculum
def test_one_curriculum_advancing_one_stage_per_evaluation():
    assert adagrpo.Curriculum is C.Curriculum
    assert [C.stage_at(s, (10, 20)) for s in (0, 9, 10, 19, 20, 500)] == [0, 0, 1, 1, 2, 2]
    cur = C.Curriculum(switch_iterations=(10, 20))
    assert [cur.update(i) for i in (9, 10, 19)] == [0, 1, 1]
    late = C.Curriculum(switch_iterations=(10, 20))
    assert [late.update(100), late.update(100), late.update(100)] == [1, 2, 2]  # one stage per call
    thr = C.Curriculum(switch_iterations=(50, 100), success_threshold=0.6)
    assert [thr.update(1, 0.59), thr.update(2, 0.6), thr.update(3, 0.9)] == [0, 1, 2]
    Task = type("Task", (), {})
    tasks = []
    for d in ("easy", "medium", "hard"):
        t = Task()
        t.difficulty = d
        tasks.append(t)
    assert [t.difficulty for t in C.Curriculum(switch_iterations=(10, 20)).filter(tasks)] == ["easy"]
    assert C.DEFAULT_SWITCH_ITERATIONS == (50, 100) and C.stage_at(49) == 0 and C.stage_at(50) == 1
    with pytest.raises(ValueError, match="strictly increasing"):
        C.Curriculum(switch_iterations=(20, 20))


def test_quickstart_rewards_the_whole_answer_only():
    """configs/quickstart.py sets rl.text_match='exact': on a messages.last_message answer step the expert's
    answer earns the full paper reward (1.0) and a truncation of it the type reward only (0.5); under UI-S1's
    substring rule (the rl block's default) the truncation earned 1.0 too."""
    from gui_jax.envs.sim import make_task
    from gui_jax.jobs import load_config
    from gui_jax.tasks.generate import generate_episodes
    config = load_config("configs/quickstart.py")
    assert config.rl.text_match == "exact" and rl_block().text_match == "substring"
    pcfg = PromptConfig(**config.prompt.to_dict())
    (ep,) = list(generate_episodes([make_task("messages.last_message", 1000)], resolution=(112, 252)))
    t = next(s for s, a in enumerate(ep.actions) if a.type == "answer")
    answer = ep.actions[t].text
    assert len(answer.split()) >= 2
    whole = '<think></think>\n<action>{"action": "answer", "text": "%s"}</action>' % answer
    piece = '<think></think>\n<action>{"action": "answer", "text": "%s"}</action>' % answer.split()[0]
    paper_rule = config.rl.copy_and_resolve_references()
    paper_rule.text_match = "substring"
    rewards = {name: [judge_step(r, ep, t, pcfg, scfg_from(cfg)).reward for r in (whole, piece)]
               for name, cfg in (("exact", config.rl), ("substring", paper_rule))}
    assert rewards == {"exact": [1.0, 0.5], "substring": [1.0, 1.0]}
