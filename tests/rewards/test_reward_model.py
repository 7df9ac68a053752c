"""The reward model: prompt layout, batched = one-by-one scores, HF round trip, label-token training."""
import dataclasses

import jax
import ml_collections
import numpy as np
import pytest

from gui_jax.core.types import Action
from gui_jax.rewards import data_engine as de
from gui_jax.rewards.rm_scoring import (QUESTION, RewardModelConfig, RewardScorer, label_ids, rm_messages,
                                         rm_sample)
from gui_jax.rl.agent import Agent
from gui_jax.rl.batch import build_batch
from gui_jax.rl.prompting import PromptConfig
from gui_jax.train.config_blocks import model_block
from gui_jax.train.rm_training import balance_plan, check_rm_train_block, reward_model_block, train_reward_model

from support.fake_policy import UI_PROMPT, make_episode

UI = UI_PROMPT
SHOT = PromptConfig(observation="screenshot", target="coordinate", system_prompt=False)


def _agent(seed=0):
    m = model_block()
    m.num_hidden_layers, m.vision_depth = 2, 2
    return Agent(ml_collections.ConfigDict({"model": m}), seed=seed)


@pytest.fixture(scope="module")
def data():
    eps = [make_episode("Turn on Wi-Fi", n=8, size=(112, 252)), make_episode("Open the clock", n=3, size=(112, 252))]
    lookup = {e.episode_id: e for e in eps}
    recs = []
    for ep in eps:
        recs += de.expert_records(ep)
        recs += de.rule_verified_records(ep, 1, [Action("click", x=300, y=900),
                                                 Action("type", text="hello")])
        recs += de.truncation_records(ep, [1])
    return eps, lookup, recs


@pytest.fixture(scope="module")
def agent():
    return _agent()


def _texts(messages):
    return [c["text"] for m in messages for c in (m["content"] if isinstance(m["content"], list) else [])
            if c.get("type") == "text"]


def test_prompt_keeps_five_screenshots_and_older_steps_as_text(data):
    eps, lookup, _ = data
    ep = eps[0]  # 8 steps
    rec = de.RewardRecord("step", ep.goal, tuple(de.StepRef(ep.episode_id, t) for t in range(8)), True, "expert")
    messages, images = rm_messages(rec, lookup, SHOT, RewardModelConfig())
    assert len(images) == 6                                 # 5 history screenshots + the current one
    np.testing.assert_array_equal(images[-1], ep.observations[7].screenshot)   # current = scored step's screen
    np.testing.assert_array_equal(images[0], ep.observations[2].screenshot)    # oldest shown = step 2
    text = "".join(_texts(messages))
    assert "Earlier steps:\n1. " in text and "\n2. " in text and "\n3. " not in text  # steps 0, 1 as text
    assert text.count("Action: ") == 5 and "Step 3:" in text and "Step 7:" in text and "Step 8:" not in text
    assert "Candidate action:" in text and text.endswith(QUESTION)
    # 2 screenshots configured; a record shorter than the window shows all its history
    _, few = rm_messages(rec, lookup, SHOT, RewardModelConfig(history_images=2))
    assert len(few) == 3
    short = de.RewardRecord("step", ep.goal, tuple(de.StepRef(ep.episode_id, t) for t in range(3)), True, "expert")
    m3, im3 = rm_messages(short, lookup, SHOT, RewardModelConfig())
    assert len(im3) == 3 and "Earlier steps" not in "".join(_texts(m3))


def test_outcome_prompt_claims_terminate_after_the_whole_trajectory(data):
    eps, lookup, _ = data
    ep = eps[1]  # 3 clicks, final screen = observations[3]
    out = [r for r in de.expert_records(ep) if r.kind == "outcome"][0]
    messages, images = rm_messages(out, lookup, SHOT, RewardModelConfig())
    assert len(images) == 4
    np.testing.assert_array_equal(images[-1], ep.observations[3].screenshot)  # the screen after the last step
    text = "".join(_texts(messages))
    assert '"terminate"' in text.split("Candidate action:")[1] and text.count("Action: ") == 3
    # ui_text prompts: candidate clicks are written as element indices, no image
    m, im = rm_messages(out, lookup, UI, RewardModelConfig())
    assert im == [] and '"element": 2' in "".join(_texts(m))


def test_label_tokens_are_single_ids_and_the_mask_covers_one_token(agent, data):
    _, lookup, recs = data
    pos, neg = label_ids(agent.tokenizer, RewardModelConfig())
    assert (pos, neg) == (617, 443)
    with pytest.raises(ValueError, match="label_pos"):
        label_ids(agent.tokenizer, RewardModelConfig(label_pos=" correct"))
    samples = [rm_sample(agent, r, lookup, UI, RewardModelConfig(history_images=1)) for r in recs]
    assert [int(s.response_ids[0]) for s in samples] == [pos if r.label else neg for r in recs]
    batch = build_batch(samples, agent.model_config, pad_id=agent.tokenizer.pad_id, rows=len(samples) + 2)
    np.testing.assert_array_equal(batch["loss_mask"].sum(1), [1.0] * len(samples) + [0.0, 0.0])
    # rationale variant: the rationale and "\nVerdict:" end the prompt (untrained), the label stays one token
    plain = rm_sample(agent, recs[0], lookup, UI, RewardModelConfig(history_images=1))
    with_r = rm_sample(agent, recs[0], lookup, UI, RewardModelConfig(history_images=1, rationale=True),
                       rationale="item 0 is the target")
    tail = agent.tokenizer.encode("item 0 is the target\nVerdict:")
    np.testing.assert_array_equal(with_r.prompt_ids, np.concatenate([plain.prompt_ids, tail]))
    np.testing.assert_array_equal(with_r.response_ids, [pos])


def test_batched_scores_equal_one_by_one(agent, data):
    eps, lookup, recs = data
    rcfg = RewardModelConfig(history_images=0, batch_size=len(recs))
    sc = RewardScorer(agent, lookup, UI, rcfg)
    batched = sc.score(recs)
    assert batched.shape == (len(recs),) and np.all((batched > 0) & (batched < 1))
    picks = [0, 9, len(recs) - 1]  # a step, a rule-verified step, an outcome record
    single = np.array([sc.score([recs[i]], batch_size=1)[0] for i in picks])
    np.testing.assert_allclose(batched[picks], single, atol=1e-5, rtol=0)
    # with screenshots (vision tower + M-RoPE per row)
    sc_img = RewardScorer(agent, lookup, SHOT, RewardModelConfig(history_images=1, batch_size=2))
    few = [recs[1], recs[-1]]
    np.testing.assert_allclose(sc_img.score(few), [sc_img.score([r], batch_size=1)[0] for r in few],
                               atol=1e-5, rtol=0)


def test_hf_directory_round_trip_is_bitwise_and_scores_the_same(agent, data, tmp_path):
    from gui_jax.jobs.export import export_agent
    _, lookup, recs = data
    noisy = jax.tree.map(lambda x: x + 0.01 * jax.random.normal(jax.random.key(3), x.shape, x.dtype), agent.params)
    trained = _agent()
    trained.set_params(noisy)
    export_agent(trained, str(tmp_path / "rm"))
    m = model_block()
    m.checkpoint = str(tmp_path / "rm")
    back = Agent(ml_collections.ConfigDict({"model": m}), seed=1)
    for a, b in zip(jax.tree.leaves(trained.params), jax.tree.leaves(back.params)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    rcfg = RewardModelConfig(history_images=0, batch_size=4)
    np.testing.assert_array_equal(RewardScorer(trained, lookup, UI, rcfg).score(recs[:4]),
                                  RewardScorer(back, lookup, UI, rcfg).score(recs[:4]))


def test_balance_plans():
    mk = lambda kind, label: de.RewardRecord(kind, "g", (de.StepRef("e", 0),), label, "expert")
    recs = [mk("step", True)] * 3 + [mk("step", False)] + [mk("outcome", True)] * 2 + [mk("outcome", False)] * 2
    idx, w = balance_plan(recs, "reweight")
    assert idx == list(range(8)) and np.isclose(np.mean(w), 1.0)
    assert w[0] == pytest.approx(2 / 3) and w[3] == pytest.approx(2.0) and w[4] == pytest.approx(1.0)
    idx, w = balance_plan(recs, "sample")
    assert len(idx) == 12 and sorted(idx).count(3) == 3 and set(w) == {1.0}
    with pytest.raises(ValueError, match="balance"):
        balance_plan(recs, "oversample")


@pytest.mark.parametrize("option,value", [("packing", True), ("grounding_fraction", 0.2),
                                          ("group_by_length", True), ("copy_warmup_steps", 100)])
def test_rm_training_refuses_sft_only_options(option, value, tmp_path):
    """An SFT option on the shared block that RM training does not implement is refused by name, before any
    work (agent and records are never touched), instead of being silently ignored."""
    cfg = reward_model_block()
    cfg[option] = value
    with pytest.raises(ValueError, match=f"rm.train: {option}={value!r}"):
        train_reward_model(None, [], {}, PromptConfig(), RewardModelConfig(), cfg, workdir=str(tmp_path))
    cfg[option] = reward_model_block()[option]
    check_rm_train_block(cfg)  # the defaults pass


def test_training_lowers_the_label_loss(data, tmp_path):
    _, lookup, recs = data
    rm = _agent()
    rcfg = RewardModelConfig(history_images=0, batch_size=8)
    recs = recs[:4] + [r for r in recs if not r.label][:4]
    cfg = reward_model_block()
    cfg.num_steps, cfg.batch_size, cfg.micro_batch_size, cfg.learning_rate = 12, 8, 8, 3e-3
    cfg.warmup_steps, cfg.checkpoint_every = 1, 100

    class Log:
        rows = []

        def write(self, step, metrics, prefix=""):
            self.rows.append(metrics)
    log = Log()
    train_reward_model(rm, recs, lookup, UI, rcfg, cfg, workdir=str(tmp_path), logger=log)
    losses = [r["loss"] for r in log.rows]
    # vocab cross-entropy starts near log |V| and drops as the label tokens take the mass
    assert len(losses) == 12 and losses[0] > 0.9 * np.log(4096) and losses[-1] < 0.5 * losses[0]
    assert all(np.isfinite(r["label_acc"]) for r in log.rows)


def test_rm_writes_label_clicks_as_their_element_or_as_the_policy_wrote_them():
    from gui_jax.core.types import Action
    from gui_jax.envs.sim import PhoneSim, make_task
    from gui_jax.rewards.data_engine import StepRef
    from gui_jax.rewards.rm_scoring import action_text
    from gui_jax.rl.prompting import PromptConfig
    pcfg = PromptConfig(observation="ui_text", target="element", system_prompt=False)
    obs = PhoneSim(render=False).reset(make_task("settings.wifi_on", 0))
    clock = next(e.index for e in obs.ui_elements if "Clock" in (e.text, e.content_desc))
    ref = StepRef("live", 0, Action("click", text="Clock"))
    assert action_text({}, ref, ref.action, obs, pcfg) == ('<think></think>\n<action>{"action": "click", "element": %d}'
                                                           '</action>' % clock)
    nowhere = StepRef("live", 0, Action("click", text="$137.0"))
    assert action_text({}, nowhere, nowhere.action, obs, pcfg) == ('<think></think>\n<action>{"action": "click", '
                                                                   '"text": "$137.0"}</action>')
    offscreen = StepRef("live", 0, Action("click", x=-5.0, y=-5.0))  # a sampled point on no element
    point = '<think></think>\n<action>{"action": "click", "coordinate": [-5, -5]}</action>'
    assert action_text({}, offscreen, offscreen.action, obs, pcfg) == point
    # the same point kept in a beam's history (a ref without its own action reads the episode's)
    from gui_jax.core.types import Episode
    from gui_jax.rewards.rm_scoring import step_action
    live = {"live": Episode("live", "goal", [obs, obs], [offscreen.action, ref.action])}
    kept = StepRef("live", 0)
    assert action_text(live, kept, step_action(live, kept), obs, pcfg) == point


def test_described_targets_name_the_clicked_element():
    from gui_jax.envs.sim import PhoneSim
    from gui_jax.tasks import make_task
    from gui_jax.tasks.generate import generate_episode
    ep = generate_episode(make_task("clock.alarm_toggle", 0), PhoneSim(render=False))  # open, click, terminate
    lookup = {ep.episode_id: ep}
    pc = PromptConfig(observation="ui_text", target="element", history_turns=0, history_mode="compact",
                      system_prompt=False, max_ui_lines=30)
    step, outcome = de.expert_records(ep)[1], de.expert_records(ep)[-1]
    on = RewardModelConfig(history_images=0, describe_targets=True, system_prompt=False)
    text = "".join(_texts(rm_messages(step, lookup, pc, on)[0]))
    # description + text of element 11 (the text alone, "ON", is only the switch's state)
    assert text.endswith('Candidate action: <think></think>\n<action>{"action": "click", "element": 11}</action>'
                         ' → 08:30 Call mom ON\n' + QUESTION)
    text = "".join(_texts(rm_messages(outcome, lookup, pc, on)[0]))
    # an earlier step's line is its description (PhoneSim's expert steps carry one) ...
    assert "\nEarlier steps:\n1. open Clock\n2. switch off '08:30 Call mom' in Clock\n" in text
    # ... and without one, the raw action with its target's label
    bare = {ep.episode_id: dataclasses.replace(ep, actions=[a.replace(action_desc=None) for a in ep.actions])}
    assert "\n2. click(x=950.0, y=485.0) → 08:30 Call mom ON\n" in "".join(_texts(rm_messages(outcome, bare, pc,
                                                                                             on)[0]))
    assert text.split("Candidate action: ")[1].startswith('<think></think>\n<action>{"action": "terminate"')
    shown = "".join(_texts(rm_messages(outcome, lookup, pc, RewardModelConfig(history_images=1, describe_targets=True,
                                                                              system_prompt=False))[0]))
    assert '{"action": "click", "element": 11}</action> → 08:30 Call mom ON\n' in shown  # and shown steps
    off = "".join(_texts(rm_messages(outcome, lookup, pc, RewardModelConfig(history_images=1,
                                                                            system_prompt=False))[0]))
    assert "→" not in off
