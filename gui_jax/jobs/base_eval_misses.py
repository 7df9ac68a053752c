"""Where a base's greedy answers go wrong (job base_eval): each tap's and read's miss named (a shared-word row,
another line's text, a garbled copy, ...), hits by the target's quarter of the screen, and a read's copy token
by token (`copy_profile`: the look-up's first token against the copy that follows it)."""
from __future__ import annotations

import re
from typing import Callable, Optional, Sequence


def parsed_action(text: str, dialect: str):
    """The action a response writes under the dialect's parser, None when it cannot be parsed (malformed)."""
    from gui_jax.core.dialects import ActionParseError, parse_response
    try:
        return parse_response(text, dialect)[1]
    except ActionParseError:
        return None


def clicks_element(action, element: int) -> bool:
    """Whether a parsed response (None: unparsable, a miss) clicks `element`."""
    return action is not None and action.type == "click" and action.element is not None \
        and int(action.element) == int(element)


def opens_app(action, app: str) -> bool:
    """Whether a parsed response (None: unparsable, a miss) opens `app` (names compare case-blind)."""
    return action is not None and action.type == "open" and action.text is not None \
        and str(action.text).strip().lower() == app.strip().lower()


def answers_value(action, value: str) -> bool:
    """Whether a parsed response (None: unparsable, a miss) answers `value` (equal after `normalize_answer`)."""
    from gui_jax.train.pretrain_data import normalize_answer
    return action is not None and action.type == "answer" and action.text is not None \
        and normalize_answer(str(action.text)) == normalize_answer(value)


TAP_OUTCOMES = ("right", "shares a word", "no shared word", "index not on screen", "not a click", "malformed")
_UI_LINE = re.compile(r"^\[(\d+)\][^;\n]*;(.*)$", re.M)


def ui_labels(ui_text: str) -> dict[int, str]:
    """element index -> its label, from the UI text's '[k] flags; label' lines."""
    return {int(m.group(1)): m.group(2).strip() for m in _UI_LINE.finditer(ui_text)}


def action_of_kind(item: dict, text: str, kind: str, other: str):
    """(the parsed action, None) when the response is a `kind` action with its argument (a click's element, an
    answer's text); else (None, "malformed") when unparsable, (None, `other`) for any other action."""
    action = parsed_action(text, item["dialect"])
    if action is None:
        return None, "malformed"
    if action.type != kind or (action.element if kind == "click" else action.text) is None:
        return None, other
    return action, None


def tap_outcome(item: dict, text: str) -> str:
    """What a response to an item with a target element did, one of TAP_OUTCOMES: right; a click on another line
    whose label shares a word with the target's (case-blind), or shares none; a click on an index the screen does
    not show; another action; unparsable."""
    action, miss = action_of_kind(item, text, "click", "not a click")
    if miss:
        return miss
    picked, target = int(action.element), int(item["target_element"])
    if picked == target:
        return "right"
    labels = ui_labels(item["ui_text"])
    if picked not in labels:
        return "index not on screen"
    words = lambda label: set(label.lower().split())
    return "shares a word" if words(labels[picked]) & words(labels.get(target, "")) else "no shared word"


def target_quarter(item: dict, key: str = "target_element") -> int:
    """Which quarter (0-3) of the screen's lines holds the item's element `key` (the tap's target, a read's value)."""
    shown = list(ui_labels(item["ui_text"]))
    return min(4 * shown.index(int(item[key])) // len(shown), 3)


READ_OUTCOMES = ("right", "another line's text", "part of the value", "other text", "not an answer", "malformed")


def read_outcome(item: dict, text: str) -> str:
    """What a response to a read item did, one of READ_OUTCOMES: right; an answer equal to another line's whole
    text (a wrong row's value, a label: the look-up failed); one sharing a word with the value but not equal (the
    copy failed); any other answer; another action; unparsable. Answers compare after `normalize_answer`."""
    from gui_jax.train.pretrain_data import normalize_answer
    action, miss = action_of_kind(item, text, "answer", "not an answer")
    if miss:
        return miss
    said, value = normalize_answer(action.text), normalize_answer(item["answer"])
    if said == value:
        return "right"
    others = {normalize_answer(label) for k, label in ui_labels(item["ui_text"]).items()
              if k != int(item["value_element"])}
    if said in others:
        return "another line's text"
    return "part of the value" if set(said.split()) & set(value.split()) else "other text"


LABEL_TOKEN_BUCKETS = ((1, 4), (5, 5), (6, 7), (8, 9), (10, 10 ** 6))   # a tap label's length in tokens
SCREEN_LINE_BUCKETS = ((1, 15), (16, 23), (24, 31), (32, 39), (40, 10 ** 6))   # UI lines on a tap's screen
LABEL_WORD_BUCKETS = ((1, 1), (2, 2), (3, 10 ** 6))   # words in a tap's target label


# breakdown's per-bucket counts of taps: key -> (what the note says, its buckets)
TAP_BUCKETS = {"by_screen_lines": ("the screen's lines", SCREEN_LINE_BUCKETS),
               "by_label_words": ("the label's words", LABEL_WORD_BUCKETS),
               "by_label_tokens": ("the label's length in tokens", LABEL_TOKEN_BUCKETS)}


def bucket_name(lo: int, hi: int) -> str:
    """'5', '6-7', '10+' (hi beyond 99: open-ended)."""
    return f"{lo}{'+' if hi > 99 else '' if lo == hi else f'-{hi}'}"


def _bucket_hits(items: Sequence[dict], rights: Sequence[bool], buckets, size: Callable[[dict], int]) -> list:
    """[[hits, items] per (lo, hi) bucket of `size(item)`]."""
    out = [[0, 0] for _ in buckets]
    for item, right in zip(items, rights):
        n = size(item)
        b = out[next(i for i, (lo, hi) in enumerate(buckets) if lo <= n <= hi)]
        b[0] += bool(right)
        b[1] += 1
    return out


def breakdown(items: Sequence[dict], texts: Sequence[str], *, kind: str,
              encode: Optional[Callable[[str], list]] = None) -> dict:
    """{'outcomes': {outcome: count}, 'by_target_quarter': [[hits, items] per quarter of the screen]}: where a
    base's taps (kind 'tap': near misses on shared-word rows, index copies) or reads (kind 'read': a wrong line's
    text against a garbled copy) go wrong, and the target's (a read's value's) place on a long screen. Taps also
    count 'by_screen_lines' ([[hits, items] per SCREEN_LINE_BUCKETS]: misses grow with the screen),
    'by_label_words' (per LABEL_WORD_BUCKETS, items with a 'label': a three-word target among rows sharing two of
    its words is the hard case) and, with `encode` (the tokenizer's), 'by_label_tokens' (per LABEL_TOKEN_BUCKETS,
    the target label's length in tokens after a space: labels of few, whole-word tokens test rare tokens)."""
    outcome_of, names, key = ((tap_outcome, TAP_OUTCOMES, "target_element") if kind == "tap"
                              else (read_outcome, READ_OUTCOMES, "value_element"))
    outcomes = {k: 0 for k in names}
    quarters = [[0, 0] for _ in range(4)]
    rights = []
    for item, text in zip(items, texts):
        outcome = outcome_of(item, text)
        outcomes[outcome] += 1
        rights.append(outcome == "right")
        q = quarters[target_quarter(item, key)]
        q[0] += rights[-1]
        q[1] += 1
    out = {"outcomes": outcomes, "by_target_quarter": quarters}
    if kind == "tap":   # each item's outcome from the loop above, not parsed again
        out["by_screen_lines"] = _bucket_hits(items, rights, SCREEN_LINE_BUCKETS,
                                              lambda i: len(ui_labels(i["ui_text"])))
        if all("label" in item for item in items):
            out["by_label_words"] = _bucket_hits(items, rights, LABEL_WORD_BUCKETS,
                                                 lambda i: len(i["label"].split()))
        if encode is not None:
            out["by_label_tokens"] = _bucket_hits(items, rights, LABEL_TOKEN_BUCKETS,
                                                  lambda i: len(encode(" " + i["label"])))
    return out



def _first_wrong_token(said: list[int], value: list[int]) -> int:
    """Index of the first token where `said` leaves `value`; len(value) when `said` runs on past the value's end
    (the end token came late)."""
    for k, (a, b) in enumerate(zip(said, value)):
        if a != b:
            return k
    return len(said) if len(said) < len(value) else len(value)


BY_LENGTH_CAP = 8  # value lengths in tokens from this on share one bucket


def copy_profile(values: Sequence[str], answers: Sequence[Optional[str]], hits: Sequence[bool],
                 encode: Callable[[str], list[int]]) -> dict:
    """A read answer token by token against the expert's answer text `values` (each encoded on its own, so a first
    token can differ from the one in context): `first_token` [right, answered] (the look-up: the right row's first
    token), `continuation` [right, reached] over the value's later tokens reached with every earlier one right
    (the copy), `end` [right, reached] (stopping after the last token), `first_wrong` {token index or "end": misses},
    `by_value_tokens` [[hits, items] for 1, 2, ..., BY_LENGTH_CAP+ tokens]. A read's accuracy is about
    first_token x continuation^(tokens - 1) x end. Items whose answer is None (no answer) count only by length;
    a hit (right after normalize_answer) counts every position right."""
    first, cont, end = [0, 0], [0, 0], [0, 0]
    first_wrong: dict = {}
    by_length = [[0, 0] for _ in range(BY_LENGTH_CAP)]
    for value, said, hit in zip(values, answers, hits, strict=True):
        v = encode(value)
        bucket = by_length[min(max(len(v), 1), BY_LENGTH_CAP) - 1]
        bucket[0] += bool(hit)
        bucket[1] += 1
        if said is None and not hit:
            continue
        k = len(v) + 1 if hit else _first_wrong_token(encode(said), v)
        if not hit:
            key = "end" if k >= len(v) else k
            first_wrong[key] = first_wrong.get(key, 0) + 1
        first[0] += k > 0
        first[1] += 1
        reached = range(1, min(k, len(v) - 1) + 1)   # later tokens reached with a right prefix
        cont[1] += len(reached)
        cont[0] += sum(j < k for j in reached)
        if k >= len(v):
            end[1] += 1
            end[0] += k > len(v)
    return {"first_token": first, "continuation": cont, "end": end,
            "first_wrong": dict(sorted(first_wrong.items(), key=lambda kv: (kv[0] == "end", str(kv[0]).zfill(3)))),
            "by_value_tokens": by_length}


def answer_text(item: dict, text: str) -> Optional[str]:
    """The text an answer response gives (None for another action or an unparsable response)."""
    action, miss = action_of_kind(item, text, "answer", "not an answer")
    return None if miss else str(action.text)

