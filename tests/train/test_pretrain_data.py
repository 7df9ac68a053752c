"""Pretraining data stream: determinism, the agent's prompt format, distractor similarity, disjoint label pools
free of PhoneSim words, objective mix frequencies, token masks, reading evaluation and config errors."""
import importlib.util
import pathlib
import re
import types

import numpy as np
import pytest

from gui_jax.core.dialects import parse_response
from gui_jax.envs.sim.phonesim import build_instance
from gui_jax.envs.sim.templates import TEMPLATES
from gui_jax.envs.sim.ui import UI
from gui_jax.envs.sim.widgets import PageRef
from gui_jax.rl.prompting import PromptConfig, word_spaced
from gui_jax.train.pretrain_data import (Difficulty, ObjectiveMix, PretrainSource, encode_item,
                                         quickstart_prompt_config, reading_eval_items, score)
from gui_jax.train.pretrain_labels import (FORMAT_WORDS, contains_label, label_pool, label_words,
                                           phonesim_words, word_forms)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CFG = quickstart_prompt_config(max_ui_lines=40)
WORD = re.compile(r"[A-Za-z]+")


def _lines(item) -> dict[int, str]:
    """UI-text lines by element index."""
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d+)\] (.*)$", item["ui_text"], re.M)}


def _items(n, seed=0, **kw):
    mix = kw.pop("mix", None)
    src = PretrainSource(CFG, mix, Difficulty(**kw), seed=seed)
    return [src[i] for i in range(n)]


def test_item_is_a_pure_function_of_seed_and_index():
    a, b = PretrainSource(CFG, seed=3), PretrainSource(CFG, seed=3)
    idx = [5, 0, 2 ** 39 + 7, 17, 1]
    got_b = {i: b[i] for i in reversed(idx)}  # another order of access, another instance
    for i in idx:
        assert a[i] == got_b[i]
    other = PretrainSource(CFG, seed=4)
    assert sum(a[i]["messages"] != other[i]["messages"] for i in idx) >= 4
    assert len(a) == 2 ** 40
    with pytest.raises(IndexError):
        a[2 ** 40]


def test_click_items_name_the_element_whose_line_shows_the_label():
    items = _items(150, mix={"tap": 1, "home": 1, "screen_text": 1}, min_lines=3, max_lines=40)
    assert {it["objective"] for it in items} == {"tap", "home", "screen_text"}
    for it in items:
        k, lines = it["target_element"], _lines(it)
        assert contains_label(lines[k], it["label"]), (lines[k], it["label"])
        assert [j for j, line in lines.items() if contains_label(line, it["label"])] == [k]  # only there
        _, action = parse_response(it["target"], CFG.dialect)
        assert action.type == "click" and action.element == k
        assert len(lines) == it["n_lines"] and 3 <= it["n_lines"] <= 40
        # the goal names the label (word_tokens writes a space after an opening quote)
        assert it["label"] in it["messages"][-1]["content"][-1]["text"].replace("' ", "'")
        m, c, s, e = it["ui_span"]
        assert it["messages"][m]["content"][c]["text"][s:e] == it["ui_text"]
        assert it["prompt_loss_weight"] == (1.0 if it["objective"] == "screen_text" else 0.0)


def test_read_items_answer_the_value_shown_with_the_named_row():
    items = _items(120, mix={"read": 1}, min_lines=3, max_lines=30)
    assert len({it["layout"] for it in items}) == 5
    for it in items:
        lines, order = _lines(it), sorted(_lines(it))
        lab, val = it["label_element"], it["value_element"]
        assert contains_label(lines[lab], it["label"])
        assert lines[val].split(";", 1)[1].strip() == it["answer"]     # the value line shows exactly the answer
        assert 0 < order.index(val) - order.index(lab) <= 2              # beside or below its label
        _, action = parse_response(it["target"], CFG.dialect)
        assert action.type == "answer" and action.text == " " + it["answer"]  # spaced, as the base writes it


def test_read_imperative_writes_read_goals_as_commands_of_goal_words_only():
    """read_imperative=1: every generic read goal is a command without "?" that names the label and is answered,
    of words the goal phrasings already had (so the label pools are unchanged); 0 leaves the stream as it was."""
    from gui_jax.train.pretrain_labels import (READ_GOALS, READ_IMPERATIVE, READ_IMPERATIVE_BY_KIND, READ_WHERE,
                                               goal_words)
    commands = {*READ_IMPERATIVE, *(t for v in READ_IMPERATIVE_BY_KIND.values() for t in v)}
    questions = {*(t for v in READ_GOALS.values() for t in v), *(t for v in READ_WHERE.values() for t in v)}
    assert all("?" not in t and t.endswith(".") for t in commands)
    assert {w for t in commands for w in WORD.findall(t.lower())} - {"l"} <= \
        {w for t in questions for w in WORD.findall(t.lower())}   # no new word: goal_words (and pools) unchanged
    assert {"read", "show", "value"} <= goal_words()
    base = PretrainSource(CFG, {"read": 1}, Difficulty(min_lines=3, max_lines=30), seed=2)
    off = PretrainSource(CFG, {"read": 1}, Difficulty(min_lines=3, max_lines=30), seed=2, read_imperative=0.0)
    on = PretrainSource(CFG, {"read": 1}, Difficulty(min_lines=3, max_lines=30), seed=2, read_imperative=1.0)
    assert all(base[i] == off[i] for i in range(20))
    goals = [on[i] for i in range(60)]
    assert sum(it["goal"] in {t.format(L=it["label"]) for t in commands} for it in goals) == 60
    for it in goals:
        _, action = parse_response(it["target"], CFG.dialect)
        assert action.type == "answer" and action.text == " " + it["answer"]
        assert it["label"] in it["goal"] and it["goal"] in it["messages"][-1]["content"][-1]["text"]
    assert {it["goal"].split()[0] for it in goals} == {"Read", "Show"}


def test_state_answers_agree_with_the_flags():
    items = _items(150, mix={"state": 1}, min_lines=3, max_lines=20)
    assert {it["answer"] for it in items} == {"yes", "no"}
    for it in items:
        goal, lines = it["goal"], _lines(it)
        if "selected" in goal:  # a tab: its chip is the label element
            line = lines[it["label_element"]]
        else:                   # a switch or checkbox: the checkable line that carries the label
            line = next(ln for ln in lines.values()
                        if contains_label(ln, it["label"]) and "check" in ln.split(";")[0])
        flags = line.split(";")[0].split(",")
        state = ("sel" if "selected" in goal else "on") in flags
        asked = not re.search(r"\b(off|disabled|unchecked|not done)\b", goal)
        assert it["answer"] == ("yes" if state == asked else "no"), (goal, line)


def test_toggle_items_click_the_named_rows_switch_or_checkbox_toward_the_other_state():
    src = PretrainSource(CFG, {"toggle": 1}, Difficulty(min_lines=3, max_lines=30, shared_word_prob=0.5), seed=0,
                         goals_per_screen=3)
    items = [src[i] for i in range(120)]
    assert {it["layout"] for it in items} == {"settings", "checklist"}
    turns = [(it, t["goal"], t["target_element"], t["label"]) for it in items for t in it["turns"]]
    assert len(turns) > 60
    for it, goal, k, label in [(it, it["goal"], it["target_element"], it["label"]) for it in items] + turns:
        lines = _lines(it)
        line = lines[k]
        flags = line.split(";")[0].split(",")
        assert "click" in flags and "check" in flags and contains_label(line, label), (goal, line)
        # the title line also shows the label, but is not what a toggle goal clicks
        titles = [j for j, ln in lines.items() if contains_label(ln, label) and "check" not in ln.split(";")[0]]
        assert len(titles) == 1 and titles[0] != k, (goal, lines)
        wants_on = not re.search(r"\b(off|Disable|Uncheck|Untick|not done)\b", goal)
        assert ("on" in flags) != wants_on, (goal, line)
        assert label in goal.replace("' ", "'")
    it = items[0]
    _, action = parse_response(it["target"], CFG.dialect)
    assert action.type == "click" and action.element == it["target_element"]
    title = next(j for j, ln in _lines(it).items() if contains_label(ln, it["label"]) and j != it["target_element"])
    assert score(it, it["target"])
    assert not score(it, it["target"].replace(f": {it['target_element']}", f": {title}"))


def test_shared_words_put_the_targets_words_in_other_lines():
    def sharing(it):
        words = set(label_words(it["label"]))
        own = {it["label_element"], it["target_element"], it["value_element"]}
        return sum(bool(words & set(label_words(line))) for k, line in _lines(it).items() if k not in own
                   and not contains_label(line, it["label"]))
    shared = _items(60, mix={"tap": 1, "read": 1}, min_lines=8, max_lines=16, shared_word_prob=1.0)
    plain = _items(60, mix={"tap": 1, "read": 1}, min_lines=8, max_lines=16, shared_word_prob=0.0)
    assert all(len(label_words(it["label"])) >= 2 for it in shared)
    assert all(sharing(it) >= 2 for it in shared)
    assert np.mean([sharing(it) for it in shared]) > 4 * np.mean([sharing(it) for it in plain]) + 2


def _phonesim_screen_words(seeds=(0, 1)) -> set[str]:
    """Words of PhoneSim goals, task parameters and every app's main page (all rows, not just the visible ones)."""
    texts = []
    for seed in seeds:
        for name in sorted(TEMPLATES):
            dev, spec = build_instance(name, seed)
            texts += [spec.goal, *map(str, spec.params.values())]
        for key, app in dev.apps.items():
            ref = PageRef(key, app.main_page)
            ui = UI(dev, ref, key)
            getattr(app, "page_" + app.main_page)(ui, ref)
            texts += [n.text + " " + n.desc for n in ui.bar]
            texts += [n.text + " " + n.desc for h, make in ui.items for n in make(0).walk()]
    return {w.lower() for t in texts for w in WORD.findall(t)}


def test_pools_are_disjoint_and_free_of_phonesim_words():
    train, held = label_pool("train"), label_pool("reading_eval")
    assert not train.words() & held.words()
    assert len(train.content_words) + len(held.content_words) >= 1500 and len(held.content_words) >= 300
    sim = phonesim_words()
    assert {"quiet", "fire", "neon", "bowling", "alice"} <= sim  # the static scan sees PhoneSim's pools
    seen = _phonesim_screen_words()
    for pool in (train, held):
        forms = {f for w in pool.words() for f in word_forms(w)}
        assert not forms & sim and not forms & seen, sorted(forms & (sim | seen))[:10]
    # the screens use their pool only: labels, values and fillers (PhoneSim chrome words aside)
    chrome = {"navigate", "up", "done", "clear", "on", "off"} | FORMAT_WORDS
    for it in reading_eval_items(40, lines_range=(6, 20), shared_word_prob=0.5, seed=2):
        words = {w.lower() for w in WORD.findall(it["ui_text"] + " " + it["label"])}
        assert set(label_words(it["label"])) <= held.words()
        assert not words & train.words() and words - chrome <= held.words() | {"click", "long", "check", "sel"}


def test_pieces_labels_cover_the_vocabulary_without_phonesim_or_other_pool_words():
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.train.pretrain_labels import excluded_words, pool_of, vocabulary_pieces
    tok, rng = tiny_tokenizer(), np.random.default_rng(0)
    letter_ids = [i for i in range(tok.vocab_size) if tok.id_to_token(i).lstrip("\u2581").isalpha()
                  and tok.id_to_token(i).isascii() or tok.id_to_token(i).startswith("\u2581")
                  and tok.id_to_token(i)[1:].isascii() and tok.id_to_token(i)[1:].isalpha()]
    assert len(vocabulary_pieces()) > 2000
    seen, excluded = set(), excluded_words()
    for name in ("train", "reading_eval"):
        pool = label_pool(name)
        for _ in range(3000 if name == "train" else 300):
            label = pool.label(rng, "pieces")
            for w in WORD.findall(label):
                assert pool_of(w) == name and not word_forms(w) & excluded, (name, label)
            if name == "train":
                seen.update(tok.encode("x " + label))
    covered = len(seen & set(letter_ids)) / len(letter_ids)
    # the tokens PhoneSim's own words split into are trained (inside made-up words); the words never are
    sim = {t for w in phonesim_words() for t in tok.encode("x " + w.capitalize())[1:]}
    sim_covered = len(seen & sim) / len(sim)
    assert covered > 0.75 and sim_covered > 0.9, (covered, sim_covered)   # 0.82 and 0.94 at seed 0
    assert "garcia" in excluded


def test_token_labels_train_the_look_up_on_the_whole_vocabulary_of_word_start_tokens():
    """At the curricula's shared-word probability 1 every target is a multi-word label: with `tokens` in the
    label kinds the screens reach nearly every word-start token (PhoneSim's one-token names among them), without it
    only the word lists' few hundred."""
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.train.pretrain_labels import excluded_words, first_token, pool_of, vocabulary_word_tokens
    tok, starts = tiny_tokenizer(), {i for i, _ in vocabulary_word_tokens()}
    assert len(starts) > 1200 and tok.token_to_id("\u2581Garcia") in starts

    def seen(kinds, n=300):
        src = PretrainSource(CFG, {"tap": 1.0}, Difficulty(min_lines=20, max_lines=40, shared_word_prob=1.0,
                                                           label_kinds=kinds), seed=4, app_pages=0.5)
        return {t for i in range(n) for t in tok.encode(src[i]["ui_text"])} & starts
    base = {"words": 0.3, "name": 0.1, "phrase": 0.06, "number": 0.04, "pieces": 0.39}
    without, with_tokens = seen(base), seen({**base, "tokens": 0.4})
    assert len(without) < 300 and len(with_tokens) > 650, (len(without), len(with_tokens))   # 157 / 887 measured
    pool, rng, excluded = label_pool("train"), np.random.default_rng(1), excluded_words()
    for _ in range(200):
        label = pool.label(rng, "tokens")
        for w in label.split(" "):
            assert first_token(w) in starts and pool_of(w) == "train" and not word_forms(w) & excluded, label
        two = pool.token_label(rng, 2)
        other = pool.similar(rng, two, "tokens")
        assert len(set(two.split()) & set(other.split())) == 1 and other != two


def test_token_values_make_answers_write_word_start_tokens_no_word_list_has():
    """token_values: phrase / words values (messages, row subtitles) become sentences of 2-5 token words of the
    item's pool, sometimes with a number and a closing ? or !; read answers then write several times the word-start
    tokens, and the two pools' sentences share no word."""
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.train.pretrain_labels import first_token, pool_of, vocabulary_word_tokens
    tok, starts = tiny_tokenizer(), {i for i, _ in vocabulary_word_tokens()}
    rng, words = np.random.default_rng(3), {"train": set(), "reading_eval": set()}
    ends = set()
    for name in words:
        for _ in range(200):
            sentence = label_pool(name).token_sentence(rng)
            ends.add(sentence[-1] if sentence[-1] in "?!" else "")
            parts = sentence.rstrip("?!").split(" ")
            made = [w for w in parts if not w.replace(",", "").isdigit()]
            assert 2 <= len(made) <= 5 and len(parts) - len(made) <= 1, sentence
            for w in made:
                assert first_token(w) in starts and pool_of(w) == name, (name, sentence)
            words[name] |= {w.lower() for w in made}
    assert ends == {"", "?", "!"} and not words["train"] & words["reading_eval"]

    def written(share, n=240):
        src = PretrainSource(CFG, {"read": 1.0}, Difficulty(min_lines=12, max_lines=40, shared_word_prob=0.5),
                             seed=2, app_pages=0.5, token_values=share)
        items = [src[i] for i in range(n)]
        return {t for it in items for t in tok.encode(" " + it["answer"])} & starts, items
    (plain, _), (mixed, mixed_items) = written(0.0), written(0.5)
    assert len(mixed) > 3 * len(plain), (len(plain), len(mixed))   # 48 / 366 measured
    for it in mixed_items:   # the answer is still the text the named row's value line shows
        assert _lines(it)[it["value_element"]].split(";", 1)[1].strip().endswith(it["answer"]), it["index"]


def test_objective_mix_frequencies():
    weights = {"tap": 0.45, "read": 0.25, "state": 0.1, "home": 0.1, "screen_text": 0.1}
    items = _items(2000, seed=9, mix=weights, min_lines=3, max_lines=8)
    for name, w in weights.items():
        assert abs(sum(it["objective"] == name for it in items) / 2000 - w) < 0.03, name


def test_forty_line_screens_need_and_fill_max_ui_lines():
    items = _items(20, min_lines=40, max_lines=40)
    assert all(it["n_lines"] == 40 and len(_lines(it)) == 40 for it in items)
    with pytest.raises(ValueError, match="max_ui_lines"):
        PretrainSource(quickstart_prompt_config(24), None, Difficulty(max_lines=40))


def _stub_agent():
    """An agent whose policy encodes like JaxPolicy.encode, without a model."""
    from gui_jax.models.chat import build_inputs
    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.policy import Generation
    tok, proc = tiny_tokenizer(), ImageProcessor()

    class Policy:
        def encode(self, prompt, response):
            inputs = build_inputs(prompt[0], list(prompt[1]), tok, proc, add_generation_prompt=True)
            resp = np.asarray(tok.encode(response) + [tok.im_end_id], np.int32)
            return Generation(response, inputs["input_ids"], resp, np.zeros(resp.shape, np.float32))

    return types.SimpleNamespace(policy=Policy()), tok


def test_encode_item_masks_the_ui_text_tokens():
    agent, tok = _stub_agent()
    for it in _items(6, seed=1, mix={"screen_text": 1, "read": 1}):
        enc = encode_item(agent.policy, it)
        ids = enc.sample.prompt_ids
        assert tok.decode(ids[enc.ui_mask].tolist()).strip() == it["ui_text"].strip()
        assert "Goal" in tok.decode(ids[~enc.ui_mask].tolist())
        assert tok.decode(enc.sample.response_ids[:-1].tolist()) == it["target"]
        assert enc.prompt_loss_weight == it["prompt_loss_weight"] and enc.objective == it["objective"]


@pytest.mark.parametrize("mix", [{"tap": 1, "home": 1}, {"read": 1}, {"state": 1}])
def test_more_goals_per_screen_ask_about_other_unique_labels(mix):
    diff = Difficulty(min_lines=8, max_lines=30, shared_word_prob=0.5)
    one, four = (PretrainSource(CFG, mix, diff, seed=2, goals_per_screen=k) for k in (1, 4))
    n_turns = []
    for i in range(40):
        a, b = one[i], four[i]
        # the first goal is the single-goal item's: a run with goals_per_screen=1 keeps its stream
        assert a["turns"] == [] and {k: v for k, v in b.items() if k != "turns"} == {
            k: v for k, v in a.items() if k != "turns"}
        lines = _lines(b)
        labels = [b["label"]] + [t["label"] for t in b["turns"]]
        assert len(set(labels)) == len(labels) <= 4
        n_turns.append(len(b["turns"]))
        for t in b["turns"]:
            assert t["message"] == f"Goal: {word_spaced(t['goal'])}" and t["label"] in t["goal"]
            hits = [j for j, line in lines.items() if contains_label(line, t["label"])]
            assert hits, t["label"]   # a label on the screen that names nothing else there
            _, action = parse_response(t["target"], CFG.dialect)
            if t["target_element"] is not None:
                assert action.type == "click" and action.element == t["target_element"] and len(hits) == 1
                assert contains_label(lines[t["target_element"]], t["label"])
            else:
                assert action.type == "answer" and action.text == " " + t["answer"]
    assert max(n_turns) == 3 and np.mean(n_turns) > 1.5


def test_multi_goal_items_train_every_answer_in_the_chat_template():
    agent, tok = _stub_agent()
    src = PretrainSource(CFG, {"tap": 1}, Difficulty(min_lines=10, max_lines=20), seed=1, goals_per_screen=3)
    item = next(it for it in (src[i] for i in range(20)) if len(it["turns"]) == 2)
    single = encode_item(agent.policy, {**item, "turns": []}).sample
    sample = encode_item(agent.policy, item).sample
    assert np.array_equal(sample.prompt_ids, single.prompt_ids)
    text = tok.decode(sample.response_ids.tolist())
    t1, t2 = item["turns"]
    assert text == (f"{item['target']}<|im_end|>\n<|im_start|>user\n{t1['message']}<|im_end|>\n"
                    f"<|im_start|>assistant\n{t1['target']}<|im_end|>\n<|im_start|>user\n{t2['message']}"
                    f"<|im_end|>\n<|im_start|>assistant\n{t2['target']}<|im_end|>")


def test_reading_eval_items_and_score():
    items = reading_eval_items(30, lines_range=(4, 12), shared_word_prob=0.5, seed=1)
    assert items == reading_eval_items(30, lines_range=(4, 12), shared_word_prob=0.5, seed=1)
    assert {it["objective"] for it in items} == {"tap", "read"} and {it["pool"] for it in items} == {"reading_eval"}
    for it in items:
        assert score(it, it["target"]) and not score(it, "no action here")
        if it["target_element"] is not None:
            k = it["target_element"]
            wrong = it["target"].replace(f'"element": {k}', f'"element": {k + 1}')
            assert not score(it, wrong)
        else:
            assert score(it, it["target"].replace(it["answer"], f"  {it['answer'].upper()}. "))  # normalised
            assert not score(it, it["target"].replace(it["answer"], it["answer"] + "0"))


def test_quickstart_prompt_config_matches_the_recipe():
    spec = importlib.util.spec_from_file_location("quickstart_recipe", ROOT / "configs" / "quickstart.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert PromptConfig(**mod.get_config().prompt.to_dict()) == quickstart_prompt_config(24)


def test_unlabelled_lines_count_too():
    cfg = PromptConfig(observation="ui_text", target="element", max_ui_lines=30)  # containers shown, classes on
    src = PretrainSource(cfg, None, Difficulty(min_lines=3, max_lines=30, shared_word_prob=0.3), seed=5)
    for i in range(80):
        it = src[i]
        assert len(_lines(it)) == it["n_lines"] and score(it, it["target"])


@pytest.mark.parametrize("make, field", [
    (lambda: ObjectiveMix({"tapp": 1.0}), "tapp"),
    (lambda: ObjectiveMix({"tap": 0.0}), r"mix\['tap'\]"),
    (lambda: ObjectiveMix({"read": -1}), r"mix\['read'\]"),
    (lambda: Difficulty(min_lines=2), "difficulty.min_lines"),
    (lambda: Difficulty(max_lines=41), "difficulty.max_lines"),
    (lambda: Difficulty(min_lines=10, max_lines=5), "difficulty.min_lines"),
    (lambda: Difficulty(shared_word_prob=1.5), "difficulty.shared_word_prob"),
    (lambda: Difficulty(layouts=("carousel",)), "difficulty.layouts"),
    (lambda: Difficulty(label_kinds={"emoji": 1.0}), "difficulty.label_kinds"),
    (lambda: PretrainSource(CFG, {"tap": 1}, Difficulty(layouts=("home",))), "difficulty.layouts"),
    (lambda: PretrainSource(CFG, {"state": 1}, Difficulty(max_lines=10, layouts=("dialog",))), "difficulty.layouts"),
    (lambda: PretrainSource(CFG, pool="test"), "pool"),
    (lambda: PretrainSource(CFG, goals_per_screen=0), "goals_per_screen"),
    (lambda: PretrainSource(CFG, token_values=1.5), "token_values"),
    (lambda: PretrainSource(CFG, read_imperative=-0.1), "read_imperative"),
    (lambda: PretrainSource(PromptConfig(observation="both", target="element")), "prompt_cfg.observation"),
    (lambda: PretrainSource(PromptConfig(observation="ui_text", target="coordinate")), "prompt_cfg.target"),
    (lambda: PretrainSource(quickstart_prompt_config(dialect="uitars")), "prompt_cfg.dialect"),
])
def test_bad_config_names_the_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()
