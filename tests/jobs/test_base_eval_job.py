"""The base_eval job: greedy reading accuracy on held-out synthetic screens and clicks on held-out PhoneSim
screens, counted exactly, with Wilson intervals; refuses to run without weights unless asked."""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gui_jax.config_check import RunError
from gui_jax.core.dialects import format_response
from gui_jax.core.types import Action
from gui_jax.eval.metrics import wilson_interval
from gui_jax.jobs import base_eval, base_eval_misses, common, episode_cache
from gui_jax.rl.policy import Generation
from gui_jax.rl.prompting import PromptConfig, build_messages
from gui_jax.rl.semi_online_rollout import expert_element
from gui_jax.train.pretrain_data import quickstart_prompt_config, reading_eval_items

REPO = Path(__file__).resolve().parents[2]
N = 8


def tiny_config(**eval_fields):
    spec = importlib.util.spec_from_file_location("recipe_base_eval", REPO / "configs" / "base_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = mod.get_config()
    c.base_eval.n = N
    c.data.templates = ("music.play", "tasks.complete")
    c.data.num_test_episodes = 2
    c.model.checkpoint, c.model.num_hidden_layers = "", 1
    c.model.max_new_tokens = 4   # the random model never stops early; 4 tokens keep the test short
    for k, v in eval_fields.items():
        c.eval[k] = v
    return c


def _key(messages) -> str:
    return json.dumps(messages, sort_keys=True)


def _expected(results, name, successes, n):
    r = results["objectives"][name]
    assert (r["n"], r["successes"]) == (n, successes), (name, r["n"], r["successes"])
    assert r["accuracy"] == pytest.approx(successes / n)
    assert r["wilson95"] == pytest.approx(list(wilson_interval(successes, n)))


class LookupPolicy:
    """Answers each prompt from a table (prompt → response); records the sampling settings it was asked for."""

    def __init__(self, table):
        self.table, self.calls, self.batch_size = table, [], 5   # 5: chunks that do not divide the items

    def generate(self, prompts, *, temperature, seed, max_new_tokens=None):
        self.calls.append((len(prompts), temperature, max_new_tokens))
        return [Generation(text=self.table[_key(messages)], prompt_ids=np.zeros(1, np.int32),
                           response_ids=np.zeros(1, np.int32), logprobs=np.zeros(1, np.float32))
                for messages, _ in prompts]


def test_refuses_without_weights_before_any_work(tmp_path):
    with pytest.raises(RunError, match="eval.untrained=True"):
        base_eval.run(tiny_config(), str(tmp_path))
    with pytest.raises(RunError, match="contradicts eval.checkpoint_dir"):
        base_eval.run(tiny_config(untrained=True, checkpoint_dir=str(tmp_path)), str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_comma_string_of_objectives_is_refused_with_the_tuple_spelling():
    config = tiny_config(untrained=True)
    config.base_eval.objectives = ("tap,read",)     # what --config.base_eval.objectives=tap,read parses to
    with pytest.raises(RunError, match=r"\('tap,read',\).*--config.base_eval.objectives=\"\('tap','read'\)\""):
        base_eval.settings(config)


def test_app_pages_draw_the_reading_items_on_phonesims_app_pages():
    """base_eval.app_pages reaches the items: at 1 every toggle item is on an alarms or tasks page, at 0 none is;
    a value outside [0, 1] is refused by name."""
    config = tiny_config(untrained=True)
    config.base_eval.objectives, config.base_eval.n = ("toggle",), 12
    plain = base_eval.reading_items(base_eval.settings(config), PromptConfig(**config.prompt.to_dict()))
    config.base_eval.app_pages = 1.0
    s = base_eval.settings(config)
    assert s["app_pages"] == 1.0
    paged = base_eval.reading_items(s, PromptConfig(**config.prompt.to_dict()))
    assert {it["layout"] for it in paged["toggle"]} <= {"alarms", "tasks"} and len(paged["toggle"]) == 12
    assert not {it["layout"] for it in plain["toggle"]} & {"alarms", "tasks"}
    config.base_eval.app_pages = 1.5
    with pytest.raises(RunError, match=r"config.base_eval.app_pages = 1.5: expected a probability in \[0, 1\]"):
        base_eval.settings(config)


def test_label_pool_draws_the_reading_items_from_the_named_pool():
    """base_eval.label_pool reaches the items: every word of a `train` item's target label is a train-pool word
    and every word of a default item's a reading_eval word; another name is refused by name."""
    from gui_jax.train.pretrain_labels import FORMAT_WORDS, pool_of
    config = tiny_config(untrained=True)
    config.base_eval.objectives, config.base_eval.n = ("tap",), 12
    pcfg = PromptConfig(**config.prompt.to_dict())
    held_out = base_eval.reading_items(base_eval.settings(config), pcfg)["tap"]
    config.base_eval.label_pool = "train"
    s = base_eval.settings(config)
    assert s["label_pool"] == "train"
    own = base_eval.reading_items(s, pcfg)["tap"]

    def pools(items):   # the pools of the target labels' words (values hash as wholes: left out)
        return {pool_of(w.strip("'()-").lower()) for it in items for w in it["label"].split()
                if w.isalpha() and w.lower() not in FORMAT_WORDS}
    assert pools(own) == {"train"} and pools(held_out) == {"reading_eval"}
    config.base_eval.label_pool = "test"
    with pytest.raises(RunError, match=r"config.base_eval.label_pool = 'test': expected one of train, reading_eval"):
        base_eval.settings(config)


def test_hits_are_counted_exactly_when_the_response_is_right(tmp_path, monkeypatch, capsys):
    """Scripted responses: the expert's for items 0, 3, 6, ..., a wrong element / value for 1, 4, 7, ...,
    unparsable text for the rest; the counts and Wilson bounds must follow exactly."""
    config = tiny_config(untrained=True)
    pcfg = PromptConfig(**config.prompt.to_dict())
    table, want, bad = {}, {}, {base_eval.PHONESIM: 0}
    # reading: the documented items, built here from pretrain_data (held-out pool, 24-40 lines, p = 1)
    reading_cfg = quickstart_prompt_config(max_ui_lines=40, dialect=pcfg.dialect)
    for obj in ("tap", "read"):
        items = reading_eval_items(N, (24, 40), 1.0, seed=0, prompt_cfg=reading_cfg, objectives=(obj,))
        assert all(it["pool"] == "reading_eval" and 24 <= it["n_lines"] <= 40 for it in items)
        for i, it in enumerate(items):
            if i % 3 == 0:
                # read: the answer in another case with a final period still counts (normalize_answer)
                text = it["target"] if obj == "tap" else format_response(
                    Action("answer", text=f" {it['answer'].upper()}."), pcfg.dialect)
            elif i % 3 == 1:
                text = format_response(Action("click", element=it["target_element"] + 1) if obj == "tap"
                                       else Action("answer", text=it["answer"] + " 7"), pcfg.dialect)
            else:
                text = "I would tap it"
            table[_key(it["messages"])] = text
        want[obj] = (len(range(0, N, 3)), N)
        bad[obj] = len(range(2, N, 3))            # "I would tap it" parses to no action
    # PhoneSim: the held-out episodes through the job helpers (the job reads the same cache)
    _, _, _, eps = common.prepare(config, str(tmp_path), sides=("test",))
    clicks = [(ep, t) for ep in eps for t, a in enumerate(ep.actions)
              if a.type == "click" and expert_element(ep, t) is not None]
    assert clicks, "the held-out episodes should hold expert clicks"
    for i, (ep, t) in enumerate(clicks):
        k = expert_element(ep, t)
        text = (format_response(Action("click", element=k), pcfg.dialect) if i % 2 == 0
                else format_response(Action("click", element=k + 1), pcfg.dialect))
        table[_key(build_messages(ep.goal, [], ep.observations[t], pcfg)[0])] = text
    want[base_eval.PHONESIM] = (len(range(0, len(clicks), 2)), len(clicks))
    # the first steps that open an app: the right app (in lower case: names compare case-blind), another
    # app, then a click on the home screen
    opens = [ep for ep in eps if ep.actions[0].type == "open"]
    assert len(opens) == 2, "both held-out episodes start on the home screen"
    responses = [Action("open", text=opens[0].actions[0].text.lower()), Action("open", text="Nowhere")]
    for ep, action in zip(opens, responses):
        table[_key(build_messages(ep.goal, [], ep.observations[0], pcfg)[0])] = format_response(action, pcfg.dialect)
    want[base_eval.PHONESIM_OPEN], bad[base_eval.PHONESIM_OPEN] = (1, 2), 0

    policy = LookupPolicy(table)
    source = {"kind": "untrained", "path": None, "step": None, "preset": "stub", "seed": 0}
    monkeypatch.setattr(base_eval, "load_agent", lambda config, tasks: (SimpleNamespace(policy=policy), source))
    base_eval.run(config, str(tmp_path))

    results = json.loads((tmp_path / "results.json").read_text())
    assert list(results["objectives"]) == ["tap", "read", base_eval.PHONESIM, base_eval.PHONESIM_OPEN]
    for name, (k, n) in want.items():
        _expected(results, name, k, n)
    assert {(temp, m) for _, temp, m in policy.calls} == {(0.0, config.model.max_new_tokens)}   # greedy
    ps = results["objectives"][base_eval.PHONESIM]
    assert ps["episodes"] == 2 and sorted(ps["templates"]) == ["music.play", "tasks.complete"]
    assert sum(r["n"] for r in ps["per_template"].values()) == ps["n"]
    md = (tmp_path / "base_eval.md").read_text()
    out = capsys.readouterr().out
    for name, (k, n) in want.items():
        assert f"| {name} | {k / n:.3f} | {k}/{n} | {bad[name]} |" in md
        assert results["objectives"][name]["malformed"] == bad[name]
    for template, t in ps["per_template"].items():
        assert t["malformed"] == 0 and f"| {base_eval.PHONESIM}: {template} | " in md
    assert "| objective | accuracy | successes/n | malformed | 95 % Wilson | screens |" in out
    assert "model: UNTRAINED stub model" in md and "24-40 lines" in md
    taps = results["objectives"]["tap"]["taps"]   # the misses' breakdown adds up to the counts above
    assert taps["outcomes"]["right"] == want["tap"][0] and taps["outcomes"]["malformed"] == bad["tap"]
    assert sum(taps["outcomes"].values()) == N and sum(n for _, n in taps["by_target_quarter"]) == N
    assert sum(h for h, _ in taps["by_target_quarter"]) == want["tap"][0]
    assert "taps" not in results["objectives"]["read"]
    reads = results["objectives"]["read"]["reads"]
    assert reads["outcomes"]["right"] == want["read"][0] and reads["outcomes"]["malformed"] == bad["read"]
    assert sum(reads["outcomes"].values()) == N and sum(h for h, _ in reads["by_target_quarter"]) == want["read"][0]
    assert results["objectives"]["tap"]["hits"] == "".join("1" if i % 3 == 0 else "0" for i in range(N))
    assert results["objectives"][base_eval.PHONESIM]["hits"] == "".join(
        "1" if i % 2 == 0 else "0" for i in range(len(clicks)))
    assert "tap: misses " in md
    assert "first steps (open an app) of 2 of 2 episodes" in md
    # both templates click a row the goal names (the song, the task): the named subset is every click
    named = ps["named"]
    assert named["mask"] == "1" * len(clicks) and (named["n"], named["successes"]) == (ps["n"], ps["successes"])
    assert f"| {base_eval.PHONESIM}: the goal names the element | {ps['accuracy']:.3f} |" in md
    # responses.jsonl: every item once per part, in item order, its hit as in `hits`, the stub's very text
    rows = [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()]
    for name, r in results["objectives"].items():
        part = [row for row in rows if row["objective"] == name]
        assert [row["item"] for row in part] == list(range(r["n"]))
        assert "".join("1" if row["hit"] else "0" for row in part) == r["hits"]
    assert len(rows) == sum(r["n"] for r in results["objectives"].values())
    clicks_rows = [row for row in rows if row["objective"] == base_eval.PHONESIM]
    assert {row["template"] for row in clicks_rows} == {"music.play", "tasks.complete"}
    assert all(row["response"] == row["target"] for row in clicks_rows[::2])
    assert all(row["response"] != row["target"] for row in clicks_rows[1::2])


def test_a_click_counts_as_named_only_when_a_task_slot_is_in_the_goal_and_the_label():
    alarm = (("on", "False"), ("time", "15:15"))
    assert base_eval.names_element("Turn off the 15:15 alarm.", "15:15 Gym ON", alarm)
    assert not base_eval.names_element("Turn off the 15:15 alarm.", "15:45 Wake up ON", alarm)
    # the slot (the model number) is the answer, not in the goal: "About phone" is a navigation step
    model = (("model", "PS-612B"),)
    assert not base_eval.names_element("What is the model number of this phone?", "About phone", model)
    assert base_eval.names_element("Play the song 'Falling Fire'.", "falling fire", (("title", "Falling Fire"),))
    assert not base_eval.names_element("Open my conversation with Quinn Ueda.", "Quinn Ueda", ())


def test_answer_steps_are_scored_by_the_value_they_state(tmp_path, monkeypatch):
    """An answer template's held-out episodes: each expert answer step is one phonesim_answer item, a hit when
    the response states the value (case and a final period aside); another value or a click is a miss."""
    config = tiny_config(untrained=True)
    config.data.templates, config.base_eval.objectives = ("music.artist",), ()
    pcfg = PromptConfig(**config.prompt.to_dict())
    _, _, _, eps = common.prepare(config, str(tmp_path), sides=("test",))
    answers = [(ep, t) for ep in eps for t, a in enumerate(ep.actions) if a.type == "answer"]
    assert len(answers) == 2 and all(ep.actions[0].type == "open" for ep in eps)
    table = {_key(build_messages(ep.goal, [], ep.observations[0], pcfg)[0]):
             format_response(ep.actions[0], pcfg.dialect) for ep in eps}
    said = [Action("answer", text=f" {answers[0][0].actions[answers[0][1]].text.upper()}."),
            Action("answer", text="Nobody")]
    for (ep, t), action in zip(answers, said):
        table[_key(build_messages(ep.goal, [], ep.observations[t], pcfg)[0])] = format_response(action, pcfg.dialect)
    policy = LookupPolicy(table)
    source = {"kind": "untrained", "path": None, "step": None, "preset": "stub", "seed": 0}
    monkeypatch.setattr(base_eval, "load_agent", lambda config, tasks: (SimpleNamespace(policy=policy), source))
    base_eval.run(config, str(tmp_path))
    results = json.loads((tmp_path / "results.json").read_text())
    assert list(results["objectives"]) == [base_eval.PHONESIM_OPEN, base_eval.PHONESIM_ANSWER]
    _expected(results, base_eval.PHONESIM_ANSWER, 1, 2)
    assert results["objectives"][base_eval.PHONESIM_ANSWER]["hits"] == "10"
    _expected(results, base_eval.PHONESIM_OPEN, 2, 2)
    assert "answers of 2 of 2 episodes" in (tmp_path / "base_eval.md").read_text()
    assert base_eval_misses.answers_value(Action("answer", text="Echo Park."), "echo park")
    assert not base_eval_misses.answers_value(Action("click", element=3), "3")


def test_the_stop_decision_is_scored_with_the_expert_history(tmp_path, monkeypatch):
    """base_eval.stops: every step after the first, prompted with the expert's earlier steps, a hit when the
    response stops (terminate) exactly where the expert does; the stopping and going-on steps are subsets."""
    from gui_jax.train.sft import expert_history
    config = tiny_config(untrained=True)
    config.data.templates, config.base_eval.objectives, config.base_eval.stops = ("music.artist",), (), True
    pcfg = PromptConfig(**config.prompt.to_dict())
    _, _, _, eps = common.prepare(config, str(tmp_path), sides=("test",))
    assert [[a.type for a in ep.actions] for ep in eps] == [["open", "answer", "terminate"]] * 2
    table = {}
    for ep in eps:   # the no-history parts (open, answer): the expert's own responses
        for t in (0, 1):
            table[_key(build_messages(ep.goal, [], ep.observations[t], pcfg)[0])] = format_response(
                ep.actions[t], pcfg.dialect)
    stop, answer = Action("terminate", status="success"), Action("answer", text="x")
    said = {(0, 1): answer, (0, 2): stop, (1, 1): stop, (1, 2): answer}   # episode 1: stops early, then answers
    for (e, t), action in said.items():
        ep = eps[e]
        table[_key(build_messages(ep.goal, expert_history(ep, t, pcfg), ep.observations[t], pcfg)[0])] = \
            format_response(action, pcfg.dialect)
    policy = LookupPolicy(table)
    source = {"kind": "untrained", "path": None, "step": None, "preset": "stub", "seed": 0}
    monkeypatch.setattr(base_eval, "load_agent", lambda config, tasks: (SimpleNamespace(policy=policy), source))
    base_eval.run(config, str(tmp_path))
    results = json.loads((tmp_path / "results.json").read_text())
    assert list(results["objectives"]) == [base_eval.PHONESIM_OPEN, base_eval.PHONESIM_ANSWER, base_eval.PHONESIM_STOP]
    _expected(results, base_eval.PHONESIM_STOP, 2, 4)
    r = results["objectives"][base_eval.PHONESIM_STOP]
    assert r["hits"] == "1100"
    assert (r["stops"]["mask"], r["stops"]["successes"], r["stops"]["n"]) == ("0101", 1, 2)
    assert (r["goes_on"]["mask"], r["goes_on"]["successes"], r["goes_on"]["n"]) == ("1010", 1, 2)
    md = (tmp_path / "base_eval.md").read_text()
    assert f"| {base_eval.PHONESIM_STOP}: the expert stops | 0.500 | 1/2 | | " in md
    assert "2 steps where the expert goes on left out |" in md
    # paired with itself: each subset has its own pairing, nothing lost or gained
    paired = base_eval.paired_against(results, results)
    assert {k for k in paired if k.startswith(base_eval.PHONESIM_STOP)} == {
        base_eval.PHONESIM_STOP, f"{base_eval.PHONESIM_STOP}: stops", f"{base_eval.PHONESIM_STOP}: goes_on"}
    assert all((p["lost"], p["gained"]) == (0, 0) for p in paired.values())
    config.base_eval.phonesim, config.base_eval.objectives = False, ("tap",)
    with pytest.raises(RunError, match="stops = True"):
        base_eval.settings(config)


def test_tiny_random_model_end_to_end(tmp_path, capsys):
    """The real job on the untrained tiny model: every objective, n as asked, accuracy = successes / n."""
    base_eval.run(tiny_config(untrained=True), str(tmp_path))
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["model"]["kind"] == "untrained" and results["temperature"] == 0.0
    objectives = results["objectives"]
    assert set(objectives) == {"tap", "read", base_eval.PHONESIM, base_eval.PHONESIM_OPEN}
    assert objectives[base_eval.PHONESIM_OPEN]["n"] == 2
    assert objectives["tap"]["n"] == objectives["read"]["n"] == N
    eps = episode_cache.verify_episode_folder(str(tmp_path / "episodes" / "test"),
                                       episode_cache.read_cache_key(str(tmp_path / "episodes" / "test"))["task_ids"])
    clicks = sum(a.type == "click" and expert_element(ep, t) is not None
                 for ep in eps for t, a in enumerate(ep.actions))
    assert objectives[base_eval.PHONESIM]["n"] == clicks and objectives[base_eval.PHONESIM]["episodes"] == 2
    for r in objectives.values():
        assert r["accuracy"] == pytest.approx(r["successes"] / r["n"])
        assert r["wilson95"] == pytest.approx(list(wilson_interval(r["successes"], r["n"])))
    assert "UNTRAINED tiny model" in capsys.readouterr().out
    md = (tmp_path / "base_eval.md").read_text().splitlines()
    templates = sum(len(objectives[k]["per_template"]) for k in (base_eval.PHONESIM, base_eval.PHONESIM_OPEN))
    # header, rule, objectives, the named-click row, templates
    assert sum(line.startswith("|") for line in md) == 2 + 4 + 1 + templates
    copy = objectives["read"]["reads"]["copy"]   # the real tokenizer: every item by its value's length
    assert sum(n for _, n in copy["by_value_tokens"]) == N
    assert sum(h for h, _ in copy["by_value_tokens"]) == objectives["read"]["successes"]
    assert any(line.startswith("read: token by token") for line in md)
    by_length = objectives["tap"]["taps"]["by_label_tokens"]   # every tap item by its label's length in tokens
    assert sum(n for _, n in by_length) == N and sum(h for h, _ in by_length) == objectives["tap"]["successes"]
    assert any(line.startswith("tap: right by the label's length in tokens ") for line in md)
    for part in ("by_screen_lines", "by_label_words"):   # every tap item by its screen's lines, its label's words
        counts = objectives["tap"]["taps"][part]
        assert sum(n for _, n in counts) == N and sum(h for h, _ in counts) == objectives["tap"]["successes"]
    assert any(line.startswith("tap: right by the screen's lines ") for line in md)


def test_tap_outcomes_name_where_each_miss_went():
    """A hand-built screen: each response lands in exactly one outcome; the target's quarter of the screen."""
    ui = "\n".join(["[2] ; Quiet Fire", "[3] click; Quiet Letters", "[5] ; Midnight Sun", "[7] ; 4:24 AM",
                    "[8] ; Golden Road", "[9] ; Midnight Fire", "[11] ; Blue Lake", "[12] ; Quiet Bay"])
    item = {"ui_text": ui, "target_element": 9, "dialect": "ui_s1"}
    click = lambda k: format_response(Action("click", element=k), "ui_s1")
    cases = {click(9): "right", click(2): "shares a word", click(5): "shares a word", click(8): "no shared word",
             click(7): "no shared word", click(4): "index not on screen", click(40): "index not on screen",
             format_response(Action("answer", text="Midnight Fire"), "ui_s1"): "not a click",
             "tap it": "malformed"}
    assert {text: base_eval_misses.tap_outcome(item, text) for text in cases} == cases
    assert base_eval_misses.ui_labels(ui)[3] == "Quiet Letters" and base_eval_misses.target_quarter(item) == 2
    assert base_eval_misses.target_quarter({**item, "target_element": 2}) == 0
    assert base_eval_misses.target_quarter({**item, "target_element": 12}) == 3
    got = base_eval_misses.breakdown([item] * 3, [click(9), click(2), "tap it"], kind="tap")
    assert got["outcomes"] == {"right": 1, "shares a word": 1, "no shared word": 0, "index not on screen": 0,
                               "not a click": 0, "malformed": 1}
    assert got["by_target_quarter"] == [[0, 0], [0, 0], [1, 3], [0, 0]] and "by_label_tokens" not in got
    pieces = {" Midnight Fire": 4, " Quiet Fire": 7}   # a stand-in tokenizer: the label's length in tokens
    two = [{**item, "label": "Midnight Fire"}, {**item, "label": "Quiet Fire"}]
    got = base_eval_misses.breakdown(two * 2, [click(9), click(9), click(2), "tap it"], kind="tap",
                                     encode=lambda text: [0] * pieces[text])
    assert got["by_label_tokens"] == [[1, 2], [0, 0], [1, 2], [0, 0], [0, 0]]
    assert got["by_screen_lines"] == [[2, 4], [0, 0], [0, 0], [0, 0], [0, 0]]      # 8 lines
    long = {**item, "label": "Red Midnight Fire", "ui_text": ui + "".join(f"\n[{k}] ; Row {k}" for k in range(20, 52))}
    got = base_eval_misses.breakdown([long, *two], [click(2), click(9), click(9)], kind="tap")
    assert got["by_screen_lines"] == [[2, 2], [0, 0], [0, 0], [0, 0], [0, 1]]      # 8, 8 and 40 lines
    assert got["by_label_words"] == [[0, 0], [2, 2], [0, 1]] and "by_label_tokens" not in got
    assert [base_eval_misses.bucket_name(*b) for b in base_eval_misses.SCREEN_LINE_BUCKETS] == [
        "1-15", "16-23", "24-31", "32-39", "40+"]


def test_read_outcomes_tell_a_wrong_row_from_a_garbled_copy():
    """A hand-built read item (value "6:52 PM" on line [6]): each response lands in exactly one outcome."""
    ui = "\n".join(["[2] ; Quiet Fire", "[3] ; 4:24 AM", "[5] ; Midnight Fire", "[6] ; 6:52 PM", "[8] ; Blue Lake",
                    "[9] ; 7:10 PM"])
    item = {"ui_text": ui, "value_element": 6, "answer": "6:52 PM", "dialect": "ui_s1"}
    say = lambda t: format_response(Action("answer", text=t), "ui_s1")
    cases = {say("6:52 pm."): "right", say("7:10 PM"): "another line's text", say("Midnight Fire"): "another line's text",
             say("6:52 AM"): "part of the value", say("9:99 XM"): "other text",
             format_response(Action("click", element=6), "ui_s1"): "not an answer", "read it": "malformed"}
    assert {text: base_eval_misses.read_outcome(item, text) for text in cases} == cases
    got = base_eval_misses.breakdown([item] * 4, [say("6:52 PM"), say("7:10 PM"), say("6:52 PM"), "?"], kind="read")
    assert got["outcomes"] == {"right": 2, "another line's text": 1, "part of the value": 0, "other text": 0,
                               "not an answer": 0, "malformed": 1}
    assert got["by_target_quarter"] == [[0, 0], [0, 0], [2, 4], [0, 0]]   # line 4 of 6


def test_a_second_model_is_paired_item_by_item_with_an_earlier_results_file(tmp_path, monkeypatch):
    """compare_to: the same tap items answered right on a scripted set by two stub models; lost, gained and the
    exact McNemar p follow the sets; other items (another seed) or a missing file are one-line errors."""
    from gui_jax.eval.metrics import mcnemar_exact
    config = tiny_config(untrained=True)
    config.base_eval.objectives, config.base_eval.phonesim = ("tap",), False
    pcfg = PromptConfig(**config.prompt.to_dict())
    items = reading_eval_items(N, (24, 40), 1.0, seed=0, prompt_cfg=quickstart_prompt_config(40, pcfg.dialect),
                               objectives=("tap",))
    wrong = lambda it: format_response(Action("click", element=it["target_element"] + 1), pcfg.dialect)
    first, second = {0, 1, 2}, {2, 3, 4, 5, 6}          # lost: 0, 1; gained: 3, 4, 5, 6
    source = {"kind": "untrained", "path": None, "step": None, "preset": "stub", "seed": 0}
    for name, right in (("a", first), ("b", second)):
        table = {_key(it["messages"]): it["target"] if i in right else wrong(it) for i, it in enumerate(items)}
        monkeypatch.setattr(base_eval, "load_agent",
                            lambda config, tasks, t=table: (SimpleNamespace(policy=LookupPolicy(t)), source))
        config.base_eval.compare_to = str(tmp_path / "a") if name == "b" else ""
        base_eval.run(config, str(tmp_path / name))
    paired = json.loads((tmp_path / "b" / "results.json").read_text())["paired"]
    before, after = [i in first for i in range(N)], [i in second for i in range(N)]
    assert paired["parts"]["tap"] == {"before": 3 / N, "after": 5 / N, "lost": 2, "gained": 4,
                                      "p": pytest.approx(mcnemar_exact(before, after))}
    assert mcnemar_exact(before, after) == pytest.approx(22 / 32)      # 2·P(X ≤ 2), X ~ Bin(6, 1/2)
    assert "paired against " in (tmp_path / "b" / "base_eval.md").read_text()
    assert "lost 2, gained 4, p = 0.69" in (tmp_path / "b" / "base_eval.md").read_text()
    config.base_eval.seed = 1
    with pytest.raises(RunError, match="its 'tap' items differ from these"):
        base_eval.run(config, str(tmp_path / "c"))
    old = json.loads((tmp_path / "a" / "results.json").read_text())
    del old["objectives"]["tap"]["hits"]                  # a results file from before per-item hits were kept
    (tmp_path / "old.json").write_text(json.dumps(old))
    config.base_eval.seed, config.base_eval.compare_to = 0, str(tmp_path / "old.json")
    with pytest.raises(RunError, match="it has no per-item hits for 'tap'"):
        base_eval.run(config, str(tmp_path / "e"))
    config.base_eval.compare_to = str(tmp_path / "nowhere")
    with pytest.raises(RunError, match="cannot read a results.json there"):
        base_eval.run(config, str(tmp_path / "d"))


def test_the_attention_part_scores_the_layouts_hops_on_the_tap_items(tmp_path):
    """pointer_layout: each layer-0 hop of the 1-layer model is scored on every pointer row of the tap items (the
    rows PiecePointers makes), reported in results.json and the table; a hop outside the model is named first."""
    from gui_jax.rl.agent import Agent
    from gui_jax.train.attention_pointers import HOPS, PiecePointers
    from gui_jax.train.pretrain_data import encode_item
    config = tiny_config(untrained=True)
    config.base_eval.objectives, config.base_eval.phonesim, config.base_eval.attention_items = ("tap",), False, 3
    config.base_eval.pointer_layout = "index_first=0.0,label_bag=0.1,index_last=0.2,goal=0.3"
    base_eval.run(config, str(tmp_path / "a"))
    attention = json.loads((tmp_path / "a" / "results.json").read_text())["attention"]
    agent = Agent(config, seed=config.seed)
    pcfg = base_eval.reading_prompt_config(PromptConfig(**config.prompt.to_dict()), (24, 40))
    items = reading_eval_items(N, (24, 40), 1.0, seed=0, prompt_cfg=pcfg, objectives=("tap",))[:3]
    pointers = PiecePointers(agent.tokenizer, ("index_first", "label_bag", "index_last", "goal"))
    rows = np.concatenate([pointers(encode_item(agent.policy, it).sample) for it in items])
    assert attention["items"] == {"tap": 3}
    assert {h: v["rows"] for h, v in attention["hops"].items()} == {
        HOPS[h]: int((rows[:, 0] == h).sum()) for h in set(rows[:, 0].tolist())}
    assert all(0 <= v["found"] <= v["rows"] for v in attention["hops"].values())
    assert "attention, teacher-forced on 3 tap items" in (tmp_path / "a" / "base_eval.md").read_text()
    config.base_eval.attention_items = -1
    with pytest.raises(RunError, match=r"config.base_eval.attention_items = -1: expected an int ≥ 0"):
        base_eval.run(config, str(tmp_path / "c"))
    config.base_eval.attention_items, config.base_eval.pointer_layout = 200, "index_first=0.0,match=1.0"
    with pytest.raises(RunError, match=r"config.base_eval.pointer_layout: .*match=1.0.*outside the model's 1 layers"):
        base_eval.run(config, str(tmp_path / "b"))


def test_the_named_clicks_pair_on_their_own_subset():
    def part(hits, mask):
        k = [h for h, m in zip(hits, mask) if m == "1"]
        return {"hits": hits, "accuracy": hits.count("1") / len(hits),
                "named": {"mask": mask, "accuracy": k.count("1") / len(k)}}
    before = {"objectives": {base_eval.PHONESIM: part("110010", "111100")}}
    after = {"objectives": {base_eval.PHONESIM: part("011011", "111100")}}
    paired = base_eval.paired_against(after, before)
    assert (paired[base_eval.PHONESIM]["lost"], paired[base_eval.PHONESIM]["gained"]) == (1, 2)
    named = paired[f"{base_eval.PHONESIM}: named"]   # items 0-3 only: 1100 -> 0110
    assert (named["lost"], named["gained"], named["before"], named["after"]) == (1, 1, 0.5, 0.5)
    assert named["p"] == 1.0


def test_copy_profile_splits_the_look_up_from_the_copy():
    """Characters as tokens: a hit, a wrong first token, a copy that fails at token 2, one that stops early, one
    that runs on past the end, and a non-answer; every count exact."""
    encode = lambda text: [ord(c) for c in text]
    values = ["abcd", "abcd", "abcd", "abcd", "ab", "xyz"]
    answers = ["abcd", "zbcd", "abxd", "abc", "abc", None]
    got = base_eval_misses.copy_profile(values, answers, [True] + [False] * 5, encode)
    assert got["first_token"] == [4, 5]            # every answer but "zbcd" starts right
    # later tokens reached with a right prefix (right / reached): the hit 3/3, "abxd" 1/2 (b, then x for c),
    # "abc" for "abcd" 2/3 (b, c, then the end token for d), "abc" for "ab" 1/1 (b); "zbcd" reaches none
    assert got["continuation"] == [3 + 1 + 2 + 1, 3 + 2 + 3 + 1]
    assert got["end"] == [1, 2]                    # the hit stops right; "abc" for "ab" does not
    assert got["first_wrong"] == {0: 1, 2: 1, 3: 1, "end": 1}
    assert got["by_value_tokens"][:4] == [[0, 0], [0, 1], [0, 1], [1, 4]]
    assert base_eval.copy_line(got).startswith("token by token (the expert's answer text encoded alone): first token 0.800 (4/5), "
                                                "each later token 0.778 (7/9), the end 0.500 (1/2)")


def test_spaced_and_plain_answers_digest_as_the_same_items():
    """A base pretrained with prompt.answer_spaced pairs with a plain one on the same screens; any other change of
    an expert response is another item."""
    say = lambda t: format_response(Action("answer", text=t), "ui_s1")
    prompts = [[{"role": "user", "content": "Goal: What is under Red Sun?"}]]
    plain = base_eval.items_digest(prompts, [say("5:02")])
    assert base_eval.items_digest(prompts, [say(" 5:02")]) == plain
    assert base_eval.items_digest(prompts, [say("5:03")]) != plain
    assert base_eval.items_digest(prompts, [say("  5:02")]) != plain
