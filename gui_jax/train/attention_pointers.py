"""Supervised attention pointers: the look-up's attention hops as auxiliary targets.

A from-scratch decoder does not find the screen line a goal names from the answer's loss alone (one supervised
token per screen stays at chance; experiments/results/lookup_probe.md). Telling chosen heads where to look
makes the look-up learnable in a few hundred steps. A pointer is (hop, query position, key range lo..hi): the
hop's head should attend from the query uniformly over keys lo..hi. On the agent's UI text (lines
"[k] flags; label", the goal after the screen, the answer `"element": k`) the hops are

    index_first  every screen label token  -> the first digit token of its line's index
    index_last   every screen label token  -> the last digit token of its line's index (two-digit indices)
    label_bag    every label token (screen and goal) -> all tokens of its label up to itself
    goal         each position that predicts an answer digit -> the goal's label tokens
    match        each position that predicts an answer digit -> the last token of the target line's label

or, with the two digits of an index copied by two heads (one head copying both sends the same vector to both
digit positions, so neither can be read off it directly):

    index_next   every screen label token  -> the token after its index's first digit (the second digit, or
                 the "]" that ends a one-digit index)
    match_first  the position that predicts the first digit -> the target line's last label token; the position
                 after it -> itself (nothing to copy there)
    match_next   the position after the first digit (it predicts the second digit or the closing token) -> the
                 target line's last label token; the position before it -> itself

so the target line's last label token carries its words and index (layer 0), the answer position carries the
goal's words, and the last hop copies the matched line's index. Reading a value (`"text": "v"`, v on one of the
lines after the goal's row) takes a third hop, as the value's line cannot see its row's label by itself:

    row          each token of the value's line (to its "\n")  -> the last token of its row's label
    prev_token   each token of the value's line                 -> the token before it
    read_match   each position that predicts a token of v (or the closing quote) -> the screen tokens of the
                 same characters of v (the line's "\n" for the closing quote)

so a value token's key holds its row's words and its predecessor, and the answer position, holding the goal's
words (the goal hop) and the token it just wrote, finds the next token of the value. With a `read_goal` hop in
the layout, a read answer's goal rows train that head instead of the goal hop's:

    read_goal    each position that predicts a token of v -> the goal's label tokens

as a layer-0 query there is a value token of any identity, and on the head the goal hop shares with label_bag the
same token on a screen line must gather its own label instead (a base trained on taps alone, goal on label_bag's
head, attended to the goal in ~30 % of its read answers' positions; one with the goal on a head of its own, ~98 %).
Each hop is placed on one (layer, head) by a layout string (DEFAULT_LAYOUT: every hop but the match in layer 0,
the match in layer 1; layer -1 = the last; READ_LAYOUT adds the reading hops in layers 1 and 2).
Both hops in the first two layers: in the look-up probe a 4-layer stack with the match hop in its last layer
stayed at chance, with it in layer 1 it learnt as fast as a 2-layer one (experiments/results/lookup_probe.md).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from gui_jax.models.qwen2_5_vl.layers import dense

HOPS = ("index_first", "index_last", "label_bag", "goal", "match", "row", "prev_token", "read_match", "index_next",
        "match_first", "match_next", "read_goal")
DEFAULT_LAYOUT = "index_first=0.0,label_bag=0.1,index_last=0.2,goal=0.3,match=1.0"
# three layers: the tap hops as above, and reading: each value token gathers its row's label and its predecessor
# (layer 1), so the layer-2 match can find the value of the goal's row token by token
READ_LAYOUT = DEFAULT_LAYOUT + ",row=1.1,prev_token=1.2,read_match=2.0"
_STATUS_TAG = re.compile(r"\s+\([^()]*\)$")
READ_WINDOW = 3          # a value sits at most this many lines after its row's label (a row's sub line between)
# (hop, hop): the first builds what the second's keys or queries read, so it must sit in an earlier layer
_ORDER = (("goal", "match"), ("label_bag", "match"), ("label_bag", "row"), ("goal", "read_match"),
          ("read_goal", "read_match"),
          ("row", "read_match"), ("prev_token", "read_match"), ("goal", "match_first"), ("goal", "match_next"),
          ("label_bag", "match_first"), ("label_bag", "match_next"), ("index_first", "match_first"),
          ("index_next", "match_next"))
_TEXT = re.compile(r'"text":\s*"([^"\\]*)"')
_LINE = re.compile(r"\[(\d+)\][^\n;]*; ([^\n]*)")
_ELEMENT = re.compile(r'"element":\s*(\d+)')


def parse_layout(spec: str, num_layers: int, num_heads: int) -> dict[str, tuple[int, int]]:
    """'hop=layer.head,…' → {hop: (layer, head)} with negative layers counted from the end; every hop once."""
    out = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, where = part.partition("=")
        layer, _, head = where.partition(".")
        name = name.strip()
        if name not in HOPS:
            raise ValueError(f"pointer layout entry {part!r}: unknown hop {name!r}; hops: {', '.join(HOPS)}")
        try:
            layer_i, head_i = int(layer), int(head)
        except ValueError:
            raise ValueError(f"pointer layout entry {part!r}: write hop=layer.head, e.g. goal=1.0") from None
        layer_i = layer_i + num_layers if layer_i < 0 else layer_i
        if not (0 <= layer_i < num_layers and 0 <= head_i < num_heads):
            raise ValueError(f"pointer layout entry {part!r}: layer {layer_i} head {head_i} outside the model's "
                             f"{num_layers} layers x {num_heads} heads")
        if name in out:
            raise ValueError(f"pointer layout names hop {name!r} twice")
        out[name] = (layer_i, head_i)
    taken = [where for name, where in out.items() if not (name == "goal" and where == out.get("label_bag"))]
    if len(set(taken)) != len(taken):
        raise ValueError(f"pointer layout {spec!r} puts two hops on one head (only goal may share label_bag's)")
    if "match" in out and ("match_first" in out or "match_next" in out):
        raise ValueError(f"pointer layout {spec!r}: match copies every digit; use it or match_first + match_next")
    for before, after in _ORDER:
        if before in out and after in out and out[before][0] >= out[after][0]:
            raise ValueError(f"pointer layout {spec!r}: the {before} hop must sit in an earlier layer than the "
                             f"{after} hop")
    return out


def _char_starts(pieces: Sequence[str]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)


def _tokens_in(starts: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
    """First and last token overlapping chars [lo, hi) (starts: char offset of each token, then the end)."""
    first = int(np.searchsorted(starts, lo, side="right")) - 1
    last = int(np.searchsorted(starts, hi, side="left")) - 1
    return first, last


def item_pointers(pieces: Sequence[str], prompt_len: int, where: str = "", read: bool = False,
                  named: Optional[Sequence[str]] = None) -> np.ndarray:
    """int32 [K, 4] rows (hop index in HOPS, query, key lo, key hi) for one tap/home item, or (read=True) one
    read item, or (named given) one toggle item.

    pieces: the decoded text of every token of prompt + response (their concatenation is the exact text);
    prompt_len: tokens in the prompt. Screen lines are found in the UI text after the last "UI:" header of the
    prompt. Tap: each `"element": k` of the response (one per goal, later goals as further chat turns) is an
    answer whose goal is the last "Goal:" before it, and that goal must name line [k]'s label. Read: each
    `"text": "v"` is an answer whose goal names a line's label, and v is the label of one of the next
    READ_WINDOW lines (the value's line). Toggle: the clicked switch / checkbox line shows more than the goal
    names ("15:45 Wake up OFF" for "Turn on the 15:45 alarm."); named[i] is the part of answer i's line its goal
    names, and the goal and match hops point at that part (its last token in the line) instead of the whole
    label. `where` names the item in errors."""
    starts = _char_starts(pieces)
    text = "".join(pieces)
    prompt_end = int(starts[prompt_len])
    ui_at, goal_at = text.rfind("\nUI:", 0, prompt_end), text.rfind("Goal:", 0, prompt_end)
    if ui_at < 0 or goal_at < ui_at:
        raise ValueError(f"{where}: the prompt has no UI text followed by a goal (prompt.goal_last must be True "
                         "for attention pointers)")
    rows: list[tuple[int, int, int, int]] = []
    lines: list[_Line] = []
    for m in _LINE.finditer(text, ui_at, goal_at):
        first_digit = _tokens_in(starts, m.start(1), m.start(1) + 1)[0]
        last_digit = _tokens_in(starts, m.end(1) - 1, m.end(1))[1]
        # a trailing status tag ("Jonas Rossi (new)") is not part of the name a goal uses
        label = _STATUS_TAG.sub("", m.group(2).rstrip())
        if not label:
            continue
        lo, hi = _tokens_in(starts, m.start(2), m.start(2) + len(label))
        if lo <= last_digit:
            raise ValueError(f"{where}: line {m.group(0)!r} shares a token between its index and its label")
        after_first = first_digit + 1          # the second digit, or the "]" of a one-digit index
        for q in range(lo, hi + 1):
            rows += [(0, q, first_digit, first_digit), (1, q, last_digit, last_digit), (2, q, lo, q),
                     (8, q, after_first, after_first)]
        lines.append(_Line(int(m.group(1)), label, m.start(2), hi))
    rows += (_read_rows(text, starts, prompt_end, lines, where) if read
             else _tap_rows(text, starts, prompt_end, lines, where, named))
    return np.asarray(rows, np.int32).reshape(-1, 4)


@dataclasses.dataclass(frozen=True)
class _Line:
    element: int
    label: str
    at: int                 # char offset of the label
    last: int               # its last token


def _goal_label_rows(text, starts, answer_at: int, label: str, where: str, what: str):
    """(goal label token range, label_bag rows of the goal's label) for the goal before char `answer_at`."""
    goal_at = text.rfind("Goal:", 0, answer_at)
    label_at = text.rfind(label, goal_at, answer_at)
    if label_at < 0:
        raise ValueError(f"{where}: the goal before answer {what} does not name its label {label!r}")
    g_lo, g_hi = _tokens_in(starts, label_at, label_at + len(label))
    return (g_lo, g_hi), [(2, q, g_lo, q) for q in range(g_lo, g_hi + 1)]


def _tap_rows(text, starts, prompt_end, lines, where, named=None):
    by_element = {ln.element: ln for ln in lines}
    answers = list(_ELEMENT.finditer(text, prompt_end))
    if not answers:
        raise ValueError(f"{where}: the response writes no \"element\": k")
    if named is not None and len(named) != len(answers):
        raise ValueError(f"{where}: {len(named)} named labels for {len(answers)} answers")
    rows = []
    for i, a in enumerate(answers):
        element = int(a.group(1))
        if element not in by_element:
            raise ValueError(f"{where}: no UI line has the answer's element [{element}]")
        line = by_element[element]
        label, key = line.label, line.last
        if named is not None:   # the goal names part of the line: the match keys on that part's last token
            label = named[i]
            at = line.label.find(label)
            if not label or at < 0:
                raise ValueError(f"{where}: line [{element}] {line.label!r} does not show the named {label!r}")
            key = _tokens_in(starts, line.at + at, line.at + at + len(label))[1]
        (g_lo, g_hi), bag = _goal_label_rows(text, starts, a.start(), label, where, f"[{element}]")
        rows += bag
        d_lo, d_hi = _tokens_in(starts, a.start(1), a.end(1))
        for t in range(d_lo, d_hi + 1):
            rows += [(3, t - 1, g_lo, g_hi), (4, t - 1, key, key)]
        first, after = d_lo - 1, d_lo          # the queries of the first digit and of what follows it
        rows += [(9, first, key, key), (9, after, after, after),
                 (10, after, key, key), (10, first, first, first)]
    return rows


def _named_in(goal: str, label: str) -> bool:
    """Whether `label` occurs in `goal` as whole words."""
    return re.search(rf"(?<!\w){re.escape(label)}(?!\w)", goal) is not None


def _read_rows(text, starts, prompt_end, lines, where):
    answers = list(_TEXT.finditer(text, prompt_end))
    if not answers:
        raise ValueError(f"{where}: the response writes no \"text\": \"…\"")
    rows = []
    for a in answers:
        written = a.group(1)
        value = written.lstrip(" ")
        lead = len(written) - len(value)   # prompt.answer_spaced: " v" copies the cell's " v" (the space before it)
        goal_at = text.rfind("Goal:", 0, a.start())
        goal_end = text.find("<|im_end|>", goal_at, a.start())
        goal = text[goal_at + len("Goal:"):goal_end if goal_end >= 0 else a.start()]
        found = None   # the longest label the goal names that has the value within READ_WINDOW lines after it
        for i in sorted(range(len(lines)), key=lambda i: -len(lines[i].label)):
            if not _named_in(goal, lines[i].label):
                continue
            window = lines[i + 1:i + 1 + READ_WINDOW]
            after = [ln.at for ln in window if ln.label == value] or [   # else a part of a line: the priority
                ln.at + m.start() for ln in window                       # in "Due 2026-05-03, High priority"
                for m in [re.search(rf"(?<!\w){re.escape(value)}(?!\w)", ln.label)] if m]
            if after:
                found = (lines[i], after[0])
                break
        if found is None:
            raise ValueError(f"{where}: no UI line named in the goal {goal.strip()!r} has the answer's value "
                             f"{value!r} on one of the {READ_WINDOW} lines after it")
        row, cell_at = found
        base = cell_at - lead     # the screen char a response char offset 0 stands for
        if text[base:cell_at] != written[:lead]:
            raise ValueError(f"{where}: the answer {written!r} starts with a space its value {value!r} lacks on "
                             "the screen")
        (g_lo, g_hi), bag = _goal_label_rows(text, starts, a.start(), row.label, where, repr(value))
        rows += bag
        v_lo, _ = _tokens_in(starts, cell_at, cell_at + 1)
        end = _tokens_in(starts, cell_at + len(value), cell_at + len(value) + 1)[0]   # the line's "\n" (or rest)
        for q in range(v_lo, end + 1):          # the value's tokens carry its row's label and their predecessor
            rows += [(5, q, row.last, row.last), (6, q, q - 1, q - 1)]
        # each response token of the value (and the one closing it) is predicted from the token before it
        t_lo, t_hi = _tokens_in(starts, a.start(1), a.end(1) + 1)
        for t in range(t_lo, t_hi + 1):
            c0 = max(int(starts[t]), a.start(1)) - a.start(1)
            c1 = min(int(starts[t + 1]), a.end(1) + 1) - a.start(1)
            lo = _tokens_in(starts, base + c0, base + c0 + 1)[0]
            hi = _tokens_in(starts, base + c1 - 1, base + c1)[1] if c1 <= len(written) else end
            rows += [(3, t - 1, g_lo, g_hi), (7, t - 1, lo, hi)]
    return rows


class PiecePointers:
    """`pointers(sample, where)`: item_pointers of a TrainSample through a tokenizer
    (each id's text decoded once and cached; no token may decode to part of a character)."""

    def __init__(self, tokenizer, hops: Optional[Sequence[str]] = None):
        """hops: keep only the rows of these hops (a layout's), as the loss scores no other row; with read_goal
        among them, read items' goal rows become read_goal rows."""
        self.tokenizer, self.pieces = tokenizer, {}
        self.keep = None if hops is None else np.asarray([HOPS.index(h) for h in hops], np.int32)
        self.read_goal = hops is not None and "read_goal" in hops

    def __call__(self, sample, where: str = "", read: bool = False,
                 named: Optional[Sequence[str]] = None) -> np.ndarray:
        ids = [int(t) for t in sample.prompt_ids] + [int(t) for t in sample.response_ids]
        for t in ids:
            if t not in self.pieces:
                self.pieces[t] = self.tokenizer.decode([t])
        pieces = [self.pieces[t] for t in ids]
        if any("\ufffd" in p for p in pieces):   # a byte token of a split character: offsets would drift
            raise ValueError(f"{where}: a token decodes to part of a character; attention pointers need "
                             "token-aligned text")
        rows = item_pointers(pieces, len(sample.prompt_ids), where, read, named)
        if read and self.read_goal:   # a read item's goal rows are its answers': the read_goal head's (module doc)
            rows[rows[:, 0] == HOPS.index("goal"), 0] = HOPS.index("read_goal")
        return rows if self.keep is None else rows[np.isin(rows[:, 0], self.keep)]


def layer_qk(layer, layer_input, cos, sin):
    """(q [B, L, heads, hd], k [B, L, kv heads, hd]) of a text DecoderLayer with M-RoPE applied, recomputed from
    its input [B, L, H] (the residual stream before its norm) and cos/sin [B, L, hd]."""
    from gui_jax.models.qwen2_5_vl.layers import apply_rope
    x, att = layer.input_layernorm(layer_input), layer.self_attn
    b, length, _ = x.shape
    q = apply_rope(att.q_proj(x).reshape(b, length, att.num_heads, att.head_dim), cos, sin)
    k = apply_rope(att.k_proj(x).reshape(b, length, att.num_kv, att.head_dim), cos, sin)
    return q, k


def head_log_attention(layer, layer_input, cos, sin, head: int = 0, segment_ids=None, qk=None):
    """Log-softmax scores [B, L, L] of query head `head` of a text DecoderLayer, recomputed from its input
    [B, L, H] (or from `qk`, its `layer_qk`), M-RoPE cos/sin [B, L, hd] and segment_ids [B, L] (0 = padding;
    None: every position one segment): causal within a segment, as the layer attends."""
    qk = qk if qk is not None else layer_qk(layer, layer_input, cos, sin)
    every = jnp.broadcast_to(jnp.arange(qk[0].shape[1]), qk[0].shape[:2])
    return head_log_attention_rows(layer, qk, head, segment_ids, every)


def head_log_attention_rows(layer, qk, head: int, segment_ids, rows):
    """The rows `rows` int32 [B, K] (query positions) of head_log_attention: [B, K, L], computed for those queries
    alone (a pointer batch asks for a few hundred of a row's queries). qk: the layer's `layer_qk`; segment_ids
    [B, L] (0 = padding; None: one sequence per row)."""
    att = layer.self_attn
    q, k = qk
    if segment_ids is None:   # one sequence per row, no padding
        segment_ids = jnp.ones(q.shape[:2], jnp.int32)
    q_rows = jnp.take_along_axis(q[:, :, head], rows[..., None], axis=1)                     # [B, K, hd]
    scores = jnp.einsum("bqd,bkd->bqk", q_rows, k[:, :, head // (att.num_heads // att.num_kv)])
    scores = scores.astype(jnp.float32) * att.head_dim ** -0.5
    keys = jnp.arange(q.shape[1])
    seg_rows = jnp.take_along_axis(segment_ids, rows, axis=1)                                 # [B, K]
    allowed = ((keys[None, None] <= rows[..., None]) & (segment_ids[:, None, :] == seg_rows[..., None])
               & (segment_ids[:, None, :] > 0))
    return jax.nn.log_softmax(jnp.where(allowed, scores, -1e30), -1)


READOUT_HOPS = ("index_first", "index_last", "index_next", "match_first", "match_next")
READOUT_SCALES = ("own", "residual")
# read out against the answer token the query predicts (the copied digit), not the token at the key
_ANSWER_READOUTS = ("match_first", "match_next")


def pointer_ce(layers, layer_inputs, cos, sin, pointers, segment_ids, layout: dict[str, tuple[int, int]],
               readout=None, readout_scale: str = "own", value_readout=None):
    """Per-hop mean cross-entropy {hop: scalar} and entry counts {hop: scalar} of `pointers` int32 [B, K, 4]
    (hop, query, lo, hi; hop −1 = padding) against the heads of `layout`; layer_inputs[l]: the input of
    layer l [B, L, H]. Target: uniform over keys lo..hi, so the cross-entropy is −mean log a(q, lo..hi).

    readout (input_ids [B, L], readout_ids int32 [D], unembed: [B, K, H] → logits [B, K, D]): also
    {"readout_<hop>": ...} for the READOUT_HOPS in `layout`: the cross-entropy of what the hop's head adds to
    the residual at each query, unembedded over the tokens `readout_ids`, against the token at its key lo (the
    index digit), so the first half of the copy circuit is learnt directly, not only through the match hop; for
    match_first / match_next against the token after the query (the digit the copy writes; their rows that point
    a query at itself are not read out), so the copy's second half is learnt directly too. Rows whose target is
    not among `readout_ids` (the "]" of a one-digit index) are skipped.
    readout_scale: "own" unembeds the head's output normalised by its own RMS (unembed(h)), which teaches its
    direction only; "residual" divides it by the RMS of the residual stream it joins (the next layer's input for
    the index hops, the last layer's output for the copy hops; unembed(h, rms)), i.e. the head's direct share of
    the logits there, so the copied digit must also be large beside everything else the stream carries.
    value_readout (input_ids [B, L], unembed_all: [B, K, H] → logits [B, K, V] over the whole vocabulary, with
    the optional rms as above): also {"readout_read_match": ...} when `layout` places read_match: what its head
    adds at each query, against the token after the query (the value token the copy writes), so a read value's
    copy is learnt directly, as the index digits' is (a value token can be any token, hence the whole vocabulary)."""
    if readout_scale not in READOUT_SCALES:
        raise ValueError(f"readout_scale {readout_scale!r}: one of {', '.join(READOUT_SCALES)}")
    hop, q, lo, hi = (pointers[..., i] for i in range(4))
    keys = jnp.arange(layer_inputs[0].shape[1])
    in_range = (keys[None, None] >= lo[..., None]) & (keys[None, None] <= hi[..., None])     # [B, K, L]
    width = jnp.maximum(hi - lo + 1, 1).astype(jnp.float32)
    ce, count, values = {}, {}, {}
    qk = {l: layer_qk(layers[l], layer_inputs[l], cos, sin) for l in sorted({l for l, _ in layout.values()})}
    for name, (layer, head) in layout.items():   # q/k projected once per layer, not once per hop
        rows = head_log_attention_rows(layers[layer], qk[layer], head, segment_ids, q.clip(0))   # [B, K, L]
        per = -jnp.where(in_range, rows, 0.0).sum(-1) / width
        sel = (hop == HOPS.index(name)).astype(jnp.float32)
        n = sel.sum()
        ce[name], count[name] = (per * sel).sum() / jnp.maximum(n, 1.0), n
        value = name == "read_match" and value_readout is not None
        if (readout is not None and name in READOUT_HOPS) or value:
            if value:
                input_ids, unembed = value_readout
            else:
                input_ids, readout_ids, unembed = readout
            if layer not in values:                  # both index hops share layer 0's values
                values[layer] = _layer_values(layers[layer], layer_inputs[layer])
            answer = value or name in _ANSWER_READOUTS
            out = _head_output_rows(layers[layer], None, rows, head, values[layer])                 # [B, K, H]
            if readout_scale == "own":
                logits = unembed(out)                                                       # [B, K, D or V]
            else:
                joins = layer_inputs[-1 if answer else layer + 1]
                at_q = jnp.take_along_axis(joins, q.clip(0)[..., None], axis=1).astype(jnp.float32)
                logits = unembed(out, jnp.sqrt(jnp.mean(at_q * at_q, axis=-1, keepdims=True) + 1e-6))
            at = jnp.minimum(q + 1, input_ids.shape[1] - 1) if answer else lo.clip(0)
            token = jnp.take_along_axis(input_ids, at, axis=1)                                        # [B, K]
            if value:   # every token is a class: no row is skipped
                target = jax.nn.one_hot(token, logits.shape[-1], dtype=jnp.bool_)
            else:
                target = token[..., None] == readout_ids                                              # [B, K, D]
            valid = sel * target.any(-1) * ((lo != q) if answer else True)
            nll = -(jax.nn.log_softmax(logits.astype(jnp.float32)) * target).sum(-1)
            ce[f"readout_{name}"] = (nll * valid).sum() / jnp.maximum(valid.sum(), 1.0)
    return ce, count


def _layer_values(layer, layer_input):
    """v [B, L, kv heads, hd] of a text DecoderLayer, recomputed from its input [B, L, H]."""
    att = layer.self_attn
    x = layer.input_layernorm(layer_input)
    return att.v_proj(x).reshape(*x.shape[:2], att.num_kv, att.head_dim)


def _head_output_rows(layer, layer_input, rows, head: int, values=None):
    """What query head `head` of a text DecoderLayer adds to the residual [B, K, H] at K query rows, given their
    log-attention rows [B, K, L] and the layer's input [B, L, H] (or its `_layer_values`)."""
    att = layer.self_attn
    v = values if values is not None else _layer_values(layer, layer_input)
    v = v[:, :, head // (att.num_heads // att.num_kv)]
    mixed = jnp.einsum("bkl,bld->bkd", jnp.exp(rows).astype(v.dtype), v)
    w_o = att.o_proj.kernel[...][head * att.head_dim:(head + 1) * att.head_dim]
    return dense(mixed, w_o.astype(mixed.dtype))
