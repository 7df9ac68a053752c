"""pretrain.history: goals with the agent's "Earlier steps:" lines, half of them already done (→ terminate)."""
import dataclasses as dc
import re

import numpy as np
import pytest

from gui_jax.train.pretrain_apps import PAGE_APP
from gui_jax.train.pretrain_data import Difficulty, PretrainSource, quickstart_prompt_config
from gui_jax.train.pretrain_launch import APPS

TERMINATE = '{"action": "terminate", "status": "success"}'
_STEPS = re.compile(r"Earlier steps:\n((?:\d+\. [^\n]*\n?)+)")


def _source(history: float, mix=None, **kw) -> PretrainSource:
    return PretrainSource(quickstart_prompt_config(40), mix or {"tap": 1.0, "read": 1.0},
                          Difficulty(min_lines=8, max_lines=40, shared_word_prob=1.0), seed=3, goals_per_screen=3,
                          app_pages=0.5, page_answers=True, history=history, **kw)


def _goals(item):
    """(prompt text of the goal, its target, done, label) for the first goal and each later turn."""
    first = item["messages"][-1]["content"][0]["text"]
    return [(first, item["target"], item["done"], item["label"])] + [
        (t["message"], t["target"], t["done"], t["label"]) for t in item["turns"]]


def _ui_line(ui: str, k: int) -> str:
    return next(line for line in ui.splitlines() if line.startswith(f"[{k}]"))


def test_history_zero_leaves_the_stream_unchanged():
    plain, zero = PretrainSource(quickstart_prompt_config(40), {"tap": 1.0, "read": 1.0},
                                 Difficulty(8, 40, 1.0), seed=3, goals_per_screen=3, app_pages=0.5,
                                 page_answers=True), _source(0.0)
    for i in range(12):
        a, b = plain[i], zero[i]
        assert (a["messages"], a["target"], a["turns"][0]["target"] if a["turns"] else None) == \
               (b["messages"], b["target"], b["turns"][0]["target"] if b["turns"] else None)
        assert "Earlier steps" not in str(b["messages"]) and not b["done"]


def test_every_goal_opens_its_app_first_and_a_done_goal_ends_with_its_own_action():
    src, n_done, n_goals = _source(1.0), 0, 0
    for i in range(40):
        item = src[i]
        ui = item["ui_text"]
        for prompt, target, done, label in _goals(item):
            steps = [s.split(". ", 1)[1] for s in _STEPS.search(prompt).group(1).strip().split("\n")]
            app = PAGE_APP.get(item["layout"])
            assert re.fullmatch(r"open\(text='([^']*)'\)", steps[0]).group(1) in ((app,) if app else APPS)
            n_goals, n_done = n_goals + 1, n_done + done
            assert len(steps) == (2 if done else 1)
            if not done:
                assert TERMINATE not in target
                continue
            assert target.endswith(f"<action>{TERMINATE}</action>")
            if item["objective"] == "tap":   # the click already made was on the goal's own line
                k = int(re.fullmatch(r"click\(element=(\d+)\)", steps[1]).group(1))
                assert label in _ui_line(ui, k)
            else:                            # the answer already given is the goal's value, shown on the screen
                value = re.fullmatch(r"answer\(text='([^']*)'\)", steps[1]).group(1).strip()
                assert value and value in ui.split(label, 1)[1]
    assert n_goals >= 100 and 0.35 <= n_done / n_goals <= 0.65   # HISTORY_DONE_SHARE 0.5


def test_the_first_goals_history_is_written_as_the_quickstart_agent_writes_it():
    """The compact history line of the agent's prompt (rl/prompting.build_messages) after its expert opened Music."""
    from gui_jax.core.dialects import format_response
    from gui_jax.core.types import Action
    from gui_jax.rl.prompting import build_messages
    src = _source(1.0, mix={"tap": 1.0})
    item = next(src[i] for i in range(60) if src[i]["layout"] == "songs")
    agent, _ = build_messages(item["goal"], [(None, format_response(Action("open", text="Music"), "ui_s1"))],
                              item["observation"], src.cfg)
    head = agent[-1]["content"][0]["text"]
    assert head.startswith("Goal: ") and "\nEarlier steps:\n1. open(text='Music')\n" in head
    assert item["messages"][-1]["content"][0]["text"].startswith(head.split("2. ")[0].rstrip("\n"))


def test_pointers_skip_the_goals_answered_by_terminate():
    from types import SimpleNamespace

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.attention_pointers import HOPS
    from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
    tok = tiny_tokenizer()
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(tok, ImageProcessor())))
    pcfg = dc.replace(quickstart_prompt_config(40), answer_spaced=True)
    stream = CurriculumStream(agent, pcfg, parse_curriculum("8-40@1"), parse_mix("tap:1,toggle:1"), batch_size=4,
                              seed=5, goals_per_screen=3, pointers=True, toggle_pointers=True, history=1.0)
    seen = {"all done": 0, "mixed": 0}
    for i in range(40):
        item, sample = stream.sources[0][i], stream[i]
        acting = [t for t in [item, *item["turns"]] if not t["done"]]
        if not acting:
            assert sample.pointers is None
            seen["all done"] += 1
            continue
        seen["mixed"] += len(acting) <= len(item["turns"])
        match = sample.pointers[sample.pointers[:, 0] == HOPS.index("match")]
        assert len(match) == sum(len(str(t["target_element"])) for t in acting)   # one row per written digit
    assert seen["all done"] >= 1 and seen["mixed"] >= 10


def test_decision_weight_weighs_the_one_token_that_decides_stop_or_act_and_reaches_the_loss_mask():
    """decision_weight: an item with earlier steps weighs the first response token where terminate and the goal's
    action differ (the action name) by the weight, every other token 1; items without earlier steps and the
    default weight 1 carry no token weights; the batch's loss mask is the sample weight times them."""
    from types import SimpleNamespace

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.qwen2_5_vl import tiny
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.batch import build_batch
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
    tok = tiny_tokenizer()
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(tok, ImageProcessor())))
    pcfg = dc.replace(quickstart_prompt_config(40), answer_spaced=True)
    make = lambda w: CurriculumStream(agent, pcfg, parse_curriculum("8-24@1"), parse_mix("tap:1,read:1"),  # noqa: E731
                                      batch_size=4, seed=5, goals_per_screen=3, history=0.5, history_alone=True,
                                      decision_weight=w)
    stream, plain = make(30.0), make(1.0)
    seen = {"done": 0, "acting": 0, "none": 0}
    for i in range(24):
        item, sample = stream.sources[0][i], stream[i]
        assert plain[i].token_weights is None
        np.testing.assert_array_equal(sample.response_ids, plain[i].response_ids)
        if "Earlier steps" not in item["messages"][-1]["content"][0]["text"]:
            assert sample.token_weights is None
            seen["none"] += 1
            continue
        w = sample.token_weights
        assert w.shape == sample.response_ids.shape and sorted(set(w.tolist())) == [1.0, 30.0]
        k = int(np.flatnonzero(w == 30.0)[0])
        before, at = tok.decode(sample.response_ids[:k].tolist()), tok.decode(sample.response_ids[k:k + 1].tolist())
        assert before.endswith('{"action": "')   # the action name's first token, nothing earlier
        want = "terminate" if item["done"] else {"tap": "click", "read": "answer"}[item["objective"]]
        assert want.startswith(at) and at
        seen["done" if item["done"] else "acting"] += 1
    assert min(seen.values()) >= 3
    samples = [stream[i] for i in range(8)]
    batch = build_batch(samples, tiny(), pad_id=tok.pad_id, rows=8)
    for row, s in enumerate(samples):
        resp = batch["target_positions"][row][batch["target_valid"][row]]
        want = np.ones(s.response_ids.size) if s.token_weights is None else s.token_weights
        np.testing.assert_array_equal(batch["loss_mask"][row][resp], want)


def test_action_weight_weighs_every_goals_action_name_token_and_nothing_else():
    """action_weight: in every item, each goal's action name (the token after `{"action": "`: click, answer,
    open, terminate) weighs the weight, every other response token 1; with decision_weight too, the two multiply."""
    from types import SimpleNamespace

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
    tok = tiny_tokenizer()
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(tok, ImageProcessor())))
    pcfg = dc.replace(quickstart_prompt_config(40), answer_spaced=True)
    make = lambda **kw: CurriculumStream(agent, pcfg, parse_curriculum("8-24@1"),  # noqa: E731
                                         parse_mix("tap:1,read:1,launch:1"), batch_size=4, seed=5,
                                         goals_per_screen=3, history=0.5, history_alone=True, **kw)
    stream, both = make(action_weight=4.0), make(action_weight=4.0, decision_weight=30.0)
    names = {"click", "answer", "open", "terminate"}
    from gui_jax.jobs.pretrain import token_weights_line   # the card says what was weighted
    assert token_weights_line({"action_weight": 4.0, "decision_weight": 30.0}) == \
        "its stop-or-act token weighs 30; every action-name token weighs 4; "
    assert token_weights_line({}) == ""
    for i in range(16):
        item, sample = stream.sources[0][i], stream[i]
        words = [tok.decode([int(t)]) for t in sample.response_ids]
        heavy = {k for k, w in enumerate(sample.token_weights) if w == 4.0}
        assert set(sample.token_weights.tolist()) == {1.0, 4.0}
        assert heavy == {k for k in range(4, len(words)) if words[k - 4:k] == ['{"', 'action', '":', ' "']}
        assert {words[k] for k in heavy} <= names and len(heavy) == 1 + len(item["turns"])
        if item.get("earlier_steps"):   # asked alone: its one action name is the stop-or-act token, 4 x 30
            assert sorted(set(both[i].token_weights.tolist())) == [1.0, 120.0]
        else:
            np.testing.assert_array_equal(both[i].token_weights, sample.token_weights)


def test_history_alone_asks_an_item_with_earlier_steps_one_goal():
    """history_alone: an item whose first goal has earlier steps has no later turns (the agent's prompt has one
    goal); an item without them keeps its later turns, none of which carries earlier steps."""
    plain, alone = _source(0.0), _source(0.5, history_alone=True)
    seen = {"alone": 0, "turns": 0}
    for i in range(40):
        item = alone[i]
        has_steps = "Earlier steps" in item["messages"][-1]["content"][0]["text"]
        if has_steps:
            assert item["turns"] == []
            seen["alone"] += 1
        else:
            assert all("Earlier steps" not in t["message"] and not t["done"] for t in item["turns"])
            seen["turns"] += bool(item["turns"])
    assert seen["alone"] >= 10 and seen["turns"] >= 10
    # off by default: the history stream keeps its later turns and their own earlier steps
    mixed = _source(1.0)
    assert any("Earlier steps" in t["message"] for i in range(10) for t in mixed[i]["turns"])
    assert plain[0]["messages"] == _source(0.0, history_alone=True)[0]["messages"]


def test_bad_history_settings_are_refused():
    with pytest.raises(ValueError, match=r"history must be a probability in \[0, 1\], got 1.5"):
        _source(1.5)
    full = dc.replace(quickstart_prompt_config(40), history_mode="full")
    with pytest.raises(ValueError,
                       match="history > 0 writes the compact history lines; prompt_cfg.history_mode is 'full'"):
        PretrainSource(full, {"tap": 1.0}, Difficulty(8, 40, 1.0), history=0.5)
    assert np.isclose(_source(0.25).history, 0.25)
