"""Relabelling a pretraining item: every word of the screen's labels and values swapped for a fresh made-up word,
the same word for the same word wherever it occurs (screen, goals, earlier steps, answers), one draw per item.

Why: the base read rows labelled with words of its pretraining pool at 0.93 and rows of held-out words at 0.85
(experiments/results/pretrain_m1.md, section "Memorised words"), also when both are made-up `tokens` words,
whose pool is fixed by a hash of the whole word: a two-token word's token pair then belongs to one pool only,
so what the model learnt leans on which token sequences form a label. A fresh word here is 1-3 letter pieces
of the vocabulary drawn uniformly (no pool hash), so every pair of pieces occurs and no label repeats: the
look-up and the copy are all that answer the item.

No leakage: a fresh word is never a word of any pool's lists (either case, plural folded), a goal or PhoneSim
word, or a month / AM/PM word. What stays: the goal phrasings, the action JSON, the UI lines' index and flags
(the text before each line's ";"), digits and punctuation, so the item's attention pointers are its own.
"""
from __future__ import annotations

import copy
import functools
import re

import numpy as np

from gui_jax.train import pretrain_words as W
from gui_jax.train.pretrain_labels import FORMAT_WORDS, excluded_words, vocabulary_pieces, word_forms

WORD = re.compile(r"[A-Za-z]+")
# words of the response formats and prompt headers a label word must never rename (lower case)
STRUCTURE = frozenset("think earlier steps goal ui action answer text element terminate open type swipe status "
                      "direction app press navigate back home wait click long check on sel".split())


@functools.lru_cache(maxsize=1)
def known_words() -> frozenset[str]:
    """Lower-case words a fresh word may not be: every pool's words and names (all forms), goal / PhoneSim words,
    month and AM/PM words, STRUCTURE."""
    lists = (*W.ADJECTIVES, *W.NOUNS, *W.VERBS, *W.FIRST_NAMES, *W.LAST_NAMES)
    real = {f.lower() for w in lists for f in word_forms(w.lower())}
    return frozenset(real | kept_words())


@functools.lru_cache(maxsize=1)
def kept_words() -> frozenset[str]:
    """Lower-case words never relabelled: goal / PhoneSim words, month and AM/PM words, STRUCTURE."""
    return frozenset({w.lower() for w in excluded_words()} | FORMAT_WORDS | STRUCTURE)


def _cased(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def ui_label_words(ui_text: str) -> set[str]:
    """Words of the UI lines' labels and values (the text after each line's first ";")."""
    return {w for line in ui_text.split("\n") for w in WORD.findall(line.partition(";")[2])}


def fresh_words(rng: np.random.Generator, olds: list[str], taken: set[str]) -> dict[str, str]:
    """{old: fresh} for the words `olds` (sorted, for a stream that is a function of the seed), each fresh word
    1-3 vocabulary pieces, none known (known_words) or in `taken` (lower case), all distinct, case as the old."""
    pieces, known, used = vocabulary_pieces(), known_words(), {t.lower() for t in taken}
    out = {}
    for old in olds:
        for _ in range(200):
            n = int(rng.choice(3, p=[0.35, 0.45, 0.2])) + 1
            w = "".join(pieces[int(rng.integers(len(pieces)))] for _ in range(n)).lower()
            if len(w) >= 2 and w not in known and w not in used:
                break
        else:
            raise RuntimeError(f"relabel: no fresh word for {old!r} in 200 draws")
        used.add(w)
        out[old] = _cased(w, old)
    return out


def relabel_item(item: dict, rng: np.random.Generator) -> dict:
    """A copy of a PretrainSource item (tap / read / state / toggle: one with `ui_span`) whose label words are
    fresh (module doc): messages, targets, goals, turns and the answer rewritten alike; ui_span recomputed. The
    drawn screen object (`observation`) is left as drawn: the encoding and the pointers read the texts only."""
    from gui_jax.train.pretrain_data import ui_span
    m, c, start, end = item["ui_span"]
    ui = item["messages"][m]["content"][c]["text"][start:end]
    olds = sorted(w for w in ui_label_words(ui) if w.lower() not in kept_words())
    if not olds:
        return item
    every = {w for msg in item["messages"] for part in msg["content"] for w in WORD.findall(part.get("text", ""))}
    table = fresh_words(rng, olds, every)
    swap = functools.partial(WORD.sub, lambda hit: table.get(hit.group(0), hit.group(0)))
    out = copy.deepcopy(item)
    for msg in out["messages"]:
        for part in msg["content"]:
            if "text" in part:
                part["text"] = swap(part["text"])
    for holder in (out, *out["turns"]):
        for key in ("target", "goal", "message", "label", "answer"):
            if isinstance(holder.get(key), str):
                holder[key] = swap(holder[key])
    if isinstance(out.get("ui_text"), str):
        out["ui_text"] = swap(out["ui_text"])
    out["ui_span"] = ui_span(out["messages"])
    return out
