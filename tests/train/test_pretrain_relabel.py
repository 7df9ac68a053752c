"""pretrain.relabel: a read item's label words swapped for fresh made-up words, the same word for the same word
everywhere in the item, never a word of any pool; other objectives and relabel 0 unchanged."""
import dataclasses as dc
import re
from types import SimpleNamespace

import numpy as np
import pytest

from gui_jax.models.processor import ImageProcessor
from gui_jax.models.tokenizer import tiny_tokenizer
from gui_jax.rl.jax_policy import ChatEncoder
from gui_jax.train.attention_pointers import HOPS
from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
from gui_jax.train.pretrain_data import score
from gui_jax.train.pretrain_labels import POOLS, label_pool
from gui_jax.train.pretrain_relabel import known_words, relabel_item, ui_label_words

TOK = tiny_tokenizer()


def _stream(relabel=None, mix: str = "read:1,tap:1"):
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(TOK, ImageProcessor())))
    from gui_jax.train.pretrain_data import quickstart_prompt_config
    pcfg = dc.replace(quickstart_prompt_config(40), answer_spaced=True)
    kw = {} if relabel is None else {"relabel": relabel}
    return CurriculumStream(agent, pcfg, parse_curriculum("8-40@1"), parse_mix(mix), batch_size=4, seed=3,
                            goals_per_screen=4, pointers=True, read_pointers=True, app_pages=0.5,
                            page_answers=True, part_answers=True, **kw)


def _ui(item) -> str:
    m, c, start, end = item["ui_span"]
    return item["messages"][m]["content"][c]["text"][start:end]


def _line(ui: str, element: int) -> str:
    return next(line.partition(";")[2].strip() for line in ui.split("\n") if line.startswith(f"[{element}]"))


def test_a_relabelled_read_item_is_the_same_item_with_fresh_words():
    stream = _stream(0.0, mix="read:1")
    every_pool_word = set().union(*(label_pool(p).words() for p in POOLS))
    for i in range(12):
        item = stream.sources[0][i]
        new = relabel_item(item, np.random.default_rng(i))
        ui_old, ui_new = _ui(item), _ui(new)
        # the lines keep their indices and flags; each label word maps to one fresh word, distinct to distinct
        old_lines, new_lines = ui_old.split("\n"), ui_new.split("\n")
        assert [ln.partition(";")[0] for ln in old_lines] == [ln.partition(";")[0] for ln in new_lines]
        table = {}
        for a, b in zip(old_lines, new_lines):
            wa, wb = (re.findall(r"[A-Za-z]+|[^A-Za-z]+", x.partition(";")[2]) for x in (a, b))
            assert len(wa) == len(wb)
            for x, y in zip(wa, wb):
                if x.isalpha():
                    assert table.setdefault(x, y) == y
                else:
                    assert x == y           # digits, spaces, punctuation stay
        fresh = {y for x, y in table.items() if x != y}
        assert len(set(table.values())) == len(table) and fresh
        assert not {w.lower() for w in fresh} & (every_pool_word | known_words())   # no word of any pool
        assert all(x[:1].isupper() == y[:1].isupper() for x, y in table.items())
        # goals, answers and turns rewritten with the same table, the answer still on the value's line
        swap = lambda text: re.sub(r"[A-Za-z]+", lambda m: table.get(m.group(0), m.group(0)), text)  # noqa: E731
        assert new["goal"] == swap(item["goal"]) and new["answer"] == swap(item["answer"])
        assert new["answer"] in _line(ui_new, new["value_element"]) and score(new, new["target"])
        assert [t["target"] for t in new["turns"]] == [swap(t["target"]) for t in item["turns"]]
        assert [t["message"] for t in new["turns"]] == [swap(t["message"]) for t in item["turns"]]
        assert ui_label_words(ui_old) <= set(table)


def test_the_stream_relabels_read_items_only_and_their_pointers_follow():
    plain, swapped = _stream(0.0), _stream(1.0)
    reads = 0
    for i in range(16):
        item = plain.sources[0][i + plain.offset]
        a, b = plain[i], swapped[i]
        if item["objective"] != "read":          # tap items: not a token changed
            assert np.array_equal(a.prompt_ids, b.prompt_ids) and np.array_equal(a.pointers, b.pointers)
            continue
        reads += 1
        assert not np.array_equal(a.prompt_ids, b.prompt_ids)
        # every hop of the plain item points in the relabelled one, as many rows of read answers
        assert set(a.pointers[:, 0].tolist()) == set(b.pointers[:, 0].tolist())
        goal = HOPS.index("read_goal") if "read_goal" in HOPS else HOPS.index("goal")
        assert (a.pointers[:, 0] == goal).any() == (b.pointers[:, 0] == goal).any()
        text = TOK.decode(b.response_ids.tolist())
        assert text.count('"action": "answer"') == TOK.decode(a.response_ids.tolist()).count('"action": "answer"')
    assert reads >= 5


def test_relabel_zero_leaves_the_stream_unchanged_and_a_bad_probability_is_refused():
    before, zero = _stream(), _stream(0.0)
    for i in range(6):
        assert np.array_equal(before[i].prompt_ids, zero[i].prompt_ids)
        assert np.array_equal(before[i].response_ids, zero[i].response_ids)
    with pytest.raises(ValueError, match=r"pretrain.relabel = 1.5: expected a probability in \[0, 1\]"):
        _stream(1.5)


def test_the_card_names_the_relabelling():
    from gui_jax.jobs.pretrain import read_items_line
    assert read_items_line({"relabel": 0.5}) == "read items relabelled with fresh made-up words with probability 0.5; "
    assert read_items_line({}) == ""
    assert read_items_line({"relabel": 1.0, "read_imperative": 0.3}) == (
        "read items relabelled with fresh made-up words with probability 1; "
        "read goals written as commands (no question mark) with probability 0.3; ")
