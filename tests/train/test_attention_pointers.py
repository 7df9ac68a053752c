"""Supervised attention pointers: their positions on the agent's text, their batch layout, and their loss is the
model's own attention."""
import dataclasses as dc

import numpy as np
import pytest

from gui_jax.rl.batch import TrainSample, build_batch
from gui_jax.train.attention_pointers import HOPS, item_pointers, parse_layout

# one screen of two lines, the goal after it, the answer: one token per piece
PIECES = ["Goal", ":", " Tap", " Red", " Sun", "\nUI:", "\n", "[", "3", "]", " click", ";", " Blue", " Sun", "\n",
          "[", "1", "2", "]", ";", " Red", " Sun", "\n", "Goal", ":", " Tap", " Red", " Sun", "<|im_end|>",
          '{"', "element", '":', " ", "1", "2", "}"]
PROMPT_LEN = 29


def test_pointers_name_the_index_the_label_the_goal_and_the_match():
    rows = item_pointers(PIECES, PROMPT_LEN, "item 0")
    got = {(HOPS[h], q, lo, hi) for h, q, lo, hi in rows.tolist()}
    want = {("index_first", 12, 8, 8), ("index_last", 12, 8, 8), ("label_bag", 12, 12, 12),
            ("index_first", 13, 8, 8), ("index_last", 13, 8, 8), ("label_bag", 13, 12, 13),
            ("index_first", 20, 16, 16), ("index_last", 20, 17, 17), ("label_bag", 20, 20, 20),
            ("index_first", 21, 16, 16), ("index_last", 21, 17, 17), ("label_bag", 21, 20, 21),
            ("label_bag", 26, 26, 26), ("label_bag", 27, 26, 27),          # the goal's label, after the screen
            ("goal", 32, 26, 27), ("match", 32, 21, 21),                    # " " predicts "1"
            ("goal", 33, 26, 27), ("match", 33, 21, 21),                    # "1" predicts "2"
            # the two-head copy: after each index's first digit come "]" (line [3]) and "2" (line [12])
            ("index_next", 12, 9, 9), ("index_next", 13, 9, 9), ("index_next", 20, 17, 17),
            ("index_next", 21, 17, 17),
            ("match_first", 32, 21, 21), ("match_first", 33, 33, 33),      # the first digit's query; "1": itself
            ("match_next", 33, 21, 21), ("match_next", 32, 32, 32)}         # "1" predicts "2"; " ": itself
    assert got == want and len(rows) == len(want)


def test_pointers_name_what_is_wrong():
    with pytest.raises(ValueError, match=r"item 7: no UI line has the answer's element \[5\]"):
        item_pointers(PIECES[:33] + ["5", "}"], PROMPT_LEN, "item 7")
    other_goal = PIECES[:26] + [" Moon"] + PIECES[27:]
    with pytest.raises(ValueError, match="item 1: the goal before answer \\[12\\] does not name its label 'Red Sun'"):
        item_pointers(other_goal, PROMPT_LEN, "item 1")
    with pytest.raises(ValueError, match='item 2: the response writes no "element"'):
        item_pointers(PIECES[:30], PROMPT_LEN, "item 2")
    with pytest.raises(ValueError, match="unknown hop 'where'"):
        parse_layout("where=0.0", 4, 4)
    with pytest.raises(ValueError, match="earlier layer than the match hop"):
        parse_layout("goal=3.0,match=-1.1", 4, 4)
    with pytest.raises(ValueError, match="layer 4 head 0 outside"):
        parse_layout("goal=4.0", 4, 4)
    assert parse_layout("goal=1.0,match=-1.0", 4, 4) == {"goal": (1, 0), "match": (3, 0)}
    with pytest.raises(ValueError, match="puts two hops on one head"):
        parse_layout("index_first=0.0,label_bag=0.0,match=1.0", 3, 4)
    # the goal's label may be gathered by the head that gathers each screen label (disjoint query rows)
    assert parse_layout("label_bag=0.1,goal=0.1,match=1.0", 3, 4) == {"label_bag": (0, 1), "goal": (0, 1),
                                                                        "match": (1, 0)}
    with pytest.raises(ValueError, match="match copies every digit; use it or match_first \\+ match_next"):
        parse_layout("match=1.0,match_next=1.3", 3, 4)
    with pytest.raises(ValueError, match="the index_next hop must sit in an earlier layer than the match_next"):
        parse_layout("index_next=1.2,match_next=1.3", 3, 4)


def test_each_later_goal_points_at_its_own_label_and_line():
    turn = ["<|im_end|>", "Goal", ":", " Tap", " Blue", " Sun", "<|im_end|>", '{"', "element", '":', " ", "3", "}"]
    rows = item_pointers(PIECES + turn, PROMPT_LEN, "item 0").tolist()
    later = [r for r in rows if r[1] >= 36]
    assert later == [[2, 40, 40, 40], [2, 41, 40, 41], [3, 46, 40, 41], [4, 46, 13, 13],   # " " predicts "3"
                     [9, 46, 13, 13], [9, 47, 47, 47], [10, 47, 13, 13], [10, 46, 46, 46]]
    assert rows[:len(rows) - len(later)] == item_pointers(PIECES, PROMPT_LEN).tolist()


def test_packed_rows_shift_each_samples_pointers_by_its_offset():
    from gui_jax.models.qwen2_5_vl.config import tiny
    a = TrainSample(np.arange(5) + 10, np.asarray([20, 21]), pointers=np.asarray([[4, 6, 1, 2]]))
    b = TrainSample(np.arange(4) + 10, np.asarray([22]), pointers=np.asarray([[0, 3, 0, 0], [3, 4, 1, 3]]))
    c = TrainSample(np.arange(3) + 10, np.asarray([23]))                  # no pointers: contributes none
    batch = build_batch([a, b, c], tiny(), pad_id=0, packing=True, row_length=64)
    assert batch["pointers"].shape == (1, 64, 4)
    real = batch["pointers"][0][batch["pointers"][0, :, 0] >= 0].tolist()
    assert real == [[4, 6, 1, 2], [0, 10, 7, 7], [3, 11, 8, 10]]          # b starts at column 7
    assert (batch["pointers"][0, 3:] == [-1, 0, 0, -1]).all()
    assert "pointers" not in build_batch([c], tiny(), pad_id=0)


def _small_model(layers=2):
    from flax import nnx

    from gui_jax.models.qwen2_5_vl.config import tiny
    from gui_jax.models.qwen2_5_vl.model import Qwen25VLForConditionalGeneration
    base = tiny()
    text = dc.replace(base.text, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, mrope_section=(1, 1, 2))
    return Qwen25VLForConditionalGeneration(base.replace(text=text, vision=dc.replace(
        base.vision, out_hidden_size=32)), rngs=nnx.Rngs(0)), text


def _small_forward(seed: int):
    """(language model, ids [1, 8], its output with every layer's input, cos, sin, segment ids) of _small_model(2)
    on 8 random token ids."""
    import jax.numpy as jnp

    from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
    model, text = _small_model(2)
    ids = jnp.asarray(np.random.default_rng(seed).integers(100, 300, (1, 8)))
    positions = jnp.broadcast_to(jnp.arange(8)[None, None], (3, 1, 8))
    out = model(ids, position_ids=positions, output_hidden_states=True, compute_logits=False)
    return (model.language_model, ids, out, *mrope_cos_sin(positions, text), jnp.ones((1, 8), jnp.int32))


def test_supervised_heads_are_the_models_own_attention_in_packed_rows():
    """head_log_attention recomputes a head's pattern; weighting each head's values by it and projecting must give
    the layer's own attention output (also across packed segments), so the pointer loss trains what the model
    uses."""
    import jax.numpy as jnp

    from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
    from gui_jax.train.attention_pointers import head_log_attention
    model, text = _small_model(1)
    lm = model.language_model
    ids = jnp.asarray(np.random.default_rng(0).integers(100, 300, (2, 9)))
    x = lm.embed(ids) * 30.0                                   # far from uniform attention
    positions = jnp.broadcast_to(jnp.arange(9)[None, None], (3, 2, 9))
    cos, sin = mrope_cos_sin(positions, text)
    seg = jnp.asarray([[1, 1, 1, 1, 2, 2, 2, 2, 0], [1] * 9], jnp.int32)
    layer, att = lm.layers[0], lm.layers[0].self_attn
    want, _ = att(layer.input_layernorm(x), cos, sin, seg)
    v = att.v_proj(layer.input_layernorm(x)).reshape(2, 9, att.num_kv, att.head_dim)
    probs = [jnp.exp(head_log_attention(layer, x, cos, sin, h, seg)) for h in range(4)]
    got = att.o_proj(jnp.concatenate([jnp.einsum("bqk,bkd->bqd", p, v[:, :, h // 2]) for h, p in enumerate(probs)],
                                     -1))
    np.testing.assert_allclose(np.asarray(got)[:, :8], np.asarray(want)[:, :8], atol=1e-5)
    assert float(probs[0][0, 0, 1:].max()) == 0.0 and float(probs[0][0, 5, :4].max()) == 0.0  # causal, own segment


def test_pointer_loss_is_the_mean_log_attention_over_each_key_range():
    import jax.numpy as jnp

    from gui_jax.train.attention_pointers import head_log_attention, pointer_ce
    lm, ids, out, cos, sin, seg = _small_forward(1)
    pointers = jnp.asarray([[[3, 5, 1, 3], [3, 7, 6, 6], [4, 6, 2, 2], [-1, 0, 0, -1]]], jnp.int32)
    ce, count = pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg, {"goal": (0, 1), "match": (1, 2)})
    goal = head_log_attention(lm.layers[0], out.hidden_states[0], cos, sin, 1, seg)[0]
    match = head_log_attention(lm.layers[1], out.hidden_states[1], cos, sin, 2, seg)[0]
    want_goal = (-goal[5, 1:4].mean() - goal[7, 6]) / 2
    np.testing.assert_allclose(float(ce["goal"]), float(want_goal), rtol=1e-5)
    np.testing.assert_allclose(float(ce["match"]), float(-match[6, 2]), rtol=1e-5)
    assert float(count["goal"]) == 2 and float(count["match"]) == 1


def test_pointer_rows_equal_the_rows_of_the_whole_log_attention():
    """head_log_attention_rows (what pointer_ce computes: the pointed queries' rows only) equals the same rows of
    head_log_attention, with two packed segments and padding in the row."""
    import jax.numpy as jnp

    from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
    from gui_jax.train.attention_pointers import head_log_attention, head_log_attention_rows, layer_qk
    model, text = _small_model(2)
    lm = model.language_model
    ids = jnp.asarray(np.random.default_rng(2).integers(100, 300, (1, 10)))
    positions = jnp.asarray([0, 1, 2, 3, 4, 0, 1, 2, 0, 0])[None, None].repeat(3, 0)
    seg = jnp.asarray([[1, 1, 1, 1, 1, 2, 2, 2, 0, 0]], jnp.int32)
    out = model(ids, position_ids=positions, output_hidden_states=True, compute_logits=False)
    cos, sin = mrope_cos_sin(positions, text)
    rows = jnp.asarray([[3, 7, 5, 0]], jnp.int32)
    qk = layer_qk(lm.layers[1], out.hidden_states[1], cos, sin)
    for head in range(4):
        whole = head_log_attention(lm.layers[1], None, cos, sin, head, seg, qk=qk)
        got = head_log_attention_rows(lm.layers[1], qk, head, seg, rows)
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(whole[0, rows[0]]), rtol=1e-6, atol=1e-6)
    assert float(jnp.exp(got[0, 1, 5:8]).sum()) == pytest.approx(1.0, abs=1e-6)   # row 7 sees its segment only


def _stream(mix: str, answer_spaced: bool = False, **kw):
    """(tokenizer, the pretraining stream on 4-40-line screens, three goals per screen) with the tiny tokenizer."""
    from types import SimpleNamespace

    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.pretrain import CurriculumStream, parse_curriculum, parse_mix
    from gui_jax.train.pretrain_data import quickstart_prompt_config
    tok = tiny_tokenizer()
    agent = SimpleNamespace(policy=SimpleNamespace(encoder=ChatEncoder(tok, ImageProcessor())))
    pcfg = dc.replace(quickstart_prompt_config(40), answer_spaced=answer_spaced)
    return tok, CurriculumStream(agent, pcfg, parse_curriculum("4-40@1"), parse_mix(mix),
                                 batch_size=4, goals_per_screen=3, **kw)


def test_the_pretraining_stream_points_at_the_target_labels_tokens():
    tok, stream = _stream("tap:1,home:1,read:1", seed=5, pointers=True)
    n_tap = n_turns = 0
    for i in range(24):
        item, sample = stream.sources[0][i], stream[i]
        if item["target_element"] is None:
            assert sample.pointers is None
            continue
        n_tap, n_turns = n_tap + 1, n_turns + len(item["turns"])
        ids = np.concatenate([sample.prompt_ids, sample.response_ids])
        text = lambda lo, hi: tok.decode(ids[lo:hi + 1].tolist()).strip()
        rows = sample.pointers
        goal, match = rows[rows[:, 0] == HOPS.index("goal")], rows[rows[:, 0] == HOPS.index("match")]
        turns = [(item["label"], item["target_element"])] + [(t["label"], t["target_element"]) for t in item["turns"]]
        digits = "".join(str(k) for _, k in turns)
        assert len(goal) == len(match) == len(digits)
        assert "".join(text(q + 1, q + 1) for q in match[:, 1]) == digits       # queries predict the digits
        at = 0
        for label, k in turns:                                                  # each goal's label, its line's end
            n = len(str(k))
            assert {text(lo, hi) for _, _, lo, hi in goal[at:at + n]} == {label}
            assert tok.decode(ids[:match[at, 2] + 1].tolist()).endswith(label)
            at += n
    assert n_tap >= 8 and n_turns >= n_tap


# a toggle item: the switch line [4] shows "Red Sun OFF", its title line [3] "Red Sun"; the goal names "Red Sun"
TOGGLE_PIECES = ["Goal", ":", " Turn", " on", " Red", " Sun", "\nUI:", "\n", "[", "3", "]", ";", " Red", " Sun",
                 "\n", "[", "4", "]", " click", ";", " Red", " Sun", " OFF", "\n", "Goal", ":", " Turn", " on", " Red",
                 " Sun", "<|im_end|>", '{"', "element", '":', " ", "4", "}"]


def test_toggle_pointers_key_the_match_on_the_named_part_of_the_switch_line():
    rows = item_pointers(TOGGLE_PIECES, 31, "item 3", named=["Red Sun"])
    got = {(HOPS[h], q, lo, hi) for h, q, lo, hi in rows.tolist() if HOPS[h] in ("goal", "match", "match_first",
                                                                                      "match_next")}
    # " " (34) predicts "4": the goal's "Red Sun" (28-29) and the switch line's "Sun" (21), not its " OFF" (22)
    assert got == {("goal", 34, 28, 29), ("match", 34, 21, 21), ("match_first", 34, 21, 21),
                   ("match_first", 35, 35, 35), ("match_next", 35, 21, 21), ("match_next", 34, 34, 34)}
    # the screen's own hops are the tap item's: every label token to its index, its label bag from the label start
    assert ("label_bag", 22, 20, 22) in {(HOPS[h], q, lo, hi) for h, q, lo, hi in rows.tolist()}
    with pytest.raises(ValueError, match="the goal before answer \\[4\\] does not name its label 'Red Sun OFF'"):
        item_pointers(TOGGLE_PIECES, 31, "item 3")   # without named: a tap's whole-label rule
    with pytest.raises(ValueError, match="item 3: line \\[4\\] 'Red Sun OFF' does not show the named 'Blue'"):
        item_pointers(TOGGLE_PIECES, 31, "item 3", named=["Blue"])
    with pytest.raises(ValueError, match="item 3: 2 named labels for 1 answers"):
        item_pointers(TOGGLE_PIECES, 31, "item 3", named=["Red Sun", "Red"])


def test_the_pretraining_stream_points_toggle_goals_at_their_switch_lines():
    tok, stream = _stream("toggle:1", seed=2, pointers=True, toggle_pointers=True, app_pages=0.5)
    _, plain = _stream("toggle:1", seed=2, pointers=True, app_pages=0.5)
    layouts = set()
    for i in range(16):
        item, sample = stream.sources[0][i], stream[i]
        assert plain[i].pointers is None          # without toggle_pointers a toggle item has no hops
        layouts.add(item["layout"])
        ids = np.concatenate([sample.prompt_ids, sample.response_ids])
        rows = sample.pointers
        goal, match = rows[rows[:, 0] == HOPS.index("goal")], rows[rows[:, 0] == HOPS.index("match")]
        turns = [(item["label"], item["target_element"])] + [(t["label"], t["target_element"]) for t in item["turns"]]
        at = 0
        for label, k in turns:
            n = len(str(k))
            assert {tok.decode(ids[lo:hi + 1].tolist()).strip() for _, _, lo, hi in goal[at:at + n]} == {label}
            upto = tok.decode(ids[:match[at, 2] + 1].tolist())
            assert upto.endswith(label)                                      # the named part's last token
            line = upto[upto.rfind("\n"):]
            assert line.startswith(f"\n[{k}] ") and "check" in line        # on the clicked switch / checkbox line
            at += n
        assert at == len(goal)
    assert {"alarms", "tasks"} & layouts and {"settings", "checklist"} & layouts


# a read item: the value "5:02" on the line after its row "Red Sun"; the screen and the response tokenise it alike
READ_PIECES = ["Goal", ":", " Read", " Red", " Sun", "\nUI:", "\n", "[", "3", "]", ";", " Red", " Sun", "\n",
               "[", "4", "]", ";", " 5", ":", "0", "2", "\n", "Goal", ":", " Read", " Red", " Sun", "<|im_end|>",
               '{"', "text", '":', ' "', "5", ":", "0", "2", '"}']


def test_read_pointers_name_the_row_the_predecessor_and_the_value_token_by_token():
    rows = item_pointers(READ_PIECES, 29, "item 0", read=True)
    got = {(HOPS[h], q, lo, hi) for h, q, lo, hi in rows.tolist()}
    screen = {(hop, q, key, key) for q in (11, 12)
              for hop, key in (("index_first", 8), ("index_last", 8), ("index_next", 9))}
    screen |= {("label_bag", 11, 11, 11), ("label_bag", 12, 11, 12)}
    screen |= {(hop, q, 15, 15) for q in range(18, 22) for hop in ("index_first", "index_last")}
    screen |= {("index_next", q, 16, 16) for q in range(18, 22)}
    screen |= {("label_bag", q, 18, q) for q in range(18, 22)}
    want = screen | {("label_bag", 26, 26, 26), ("label_bag", 27, 26, 27)}
    want |= {("row", q, 12, 12) for q in range(18, 23)} | {("prev_token", q, q - 1, q - 1) for q in range(18, 23)}
    # ' "' predicts "5" (screen token 18) ... "2" predicts the closing '"}' (the value line's "\n", 22)
    want |= {("goal", q, 26, 27) for q in range(32, 37)}
    want |= {("read_match", 32 + k, 18 + k, 18 + k) for k in range(5)}
    assert got == want and len(rows) == len(want)


def test_read_pointers_span_every_screen_token_a_response_token_covers():
    # the response writes "5:" as one token: it is predicted from ' "' and points at both screen tokens
    pieces = READ_PIECES[:33] + ["5:", "0", "2", '"}']
    rows = item_pointers(pieces, 29, "item 0", read=True)
    match = sorted(tuple(r[1:]) for r in rows.tolist() if r[0] == HOPS.index("read_match"))
    assert match == [(32, 18, 19), (33, 20, 20), (34, 21, 21), (35, 22, 22)]


def test_a_spaced_answer_points_each_token_at_the_same_screen_token():
    """prompt.answer_spaced writes ' "', ' 5', ... : the response's ' 5' is the screen's ' 5' (token 18), so the rows
    equal the unspaced answer's; more spaces than the screen has before the value are named."""
    spaced = READ_PIECES[:33] + [" 5", ":", "0", "2", '"}']
    assert (item_pointers(spaced, 29, "item 0", read=True) == item_pointers(READ_PIECES, 29, "item 0", read=True)).all()
    doubled = READ_PIECES[:33] + [" ", " 5", ":", "0", "2", '"}']   # "  5:02": the screen has "; 5:02"
    with pytest.raises(ValueError, match="item 5: the answer '  5:02' starts with a space its value '5:02' lacks"):
        item_pointers(doubled, 29, "item 5", read=True)


def test_read_pointers_name_what_is_wrong():
    with pytest.raises(ValueError, match="item 3: no UI line named in the goal 'Read Red Sun' has the answer's "
                                         "value '5:03'"):
        item_pointers(READ_PIECES[:36] + ["3", '"}'], 29, "item 3", read=True)
    with pytest.raises(ValueError, match='item 4: the response writes no "text"'):
        item_pointers(READ_PIECES[:29] + ['{"', "element", '":', " ", "3", "}"], 29, "item 4", read=True)
    with pytest.raises(ValueError, match="the row hop must sit in an earlier layer than the read_match hop"):
        parse_layout("label_bag=0.1,row=1.1,read_match=1.0", 3, 4)


@pytest.mark.parametrize("answer_spaced", [False, True])
def test_the_pretraining_stream_reads_each_goals_value_from_its_row(answer_spaced):
    tok, stream = _stream("tap:1,read:2", seed=3, read_pointers=True, answer_spaced=answer_spaced)
    n_read = 0
    for i in range(24):
        item, sample = stream.sources[0][i], stream[i]
        if item["objective"] != "read":
            assert sample.pointers is None                 # tap pointers are off in this stream
            continue
        n_read += 1
        ids = np.concatenate([sample.prompt_ids, sample.response_ids]).tolist()
        pieces = [tok.decode([t]) for t in ids]
        rows = sample.pointers
        match, row = rows[rows[:, 0] == HOPS.index("read_match")], rows[rows[:, 0] == HOPS.index("row")]
        answers = [item["answer"]] + [t["answer"] for t in item["turns"]]
        labels = [item["label"]] + [t["label"] for t in item["turns"]]
        read = "".join("".join(pieces[lo:hi + 1]) for _, _, lo, hi in match)
        assert [v.strip() for v in read.split("\n")[:-1]] == answers    # the closing quote points at the "\n"
        for q in match[:, 1]:                                          # each query predicts the next response token
            assert q + 1 >= len(sample.prompt_ids)
        rows_of = [tok.decode(ids[:k + 1]) for k in dict.fromkeys(row[:, 2].tolist())]
        assert [any(r.endswith(label) for r in rows_of) for label in labels] == [True] * len(labels)
        assert len(rows_of) == len(set(labels))
    assert n_read >= 10
    if answer_spaced:   # the answers are written spaced: each copied value's first token is the screen's own
        assert all(f'"text": " {a}"' in tok.decode(ids) for a in answers)


def test_index_readout_is_the_heads_own_output_scored_against_the_key_token():
    """The readout of an index hop unembeds exactly what its head adds to the residual at the query (the heads'
    outputs sum to the layer's attention output) and scores it against the token at the pointer's key."""
    import jax
    import jax.numpy as jnp

    from gui_jax.train.attention_pointers import _head_output_rows, head_log_attention, pointer_ce
    lm, ids, out, cos, sin, seg = _small_forward(2)
    layer, x = lm.layers[0], out.hidden_states[0]
    rows = jnp.stack([head_log_attention(layer, x, cos, sin, h, seg)[:, 5:7] for h in range(4)])   # [4, 1, 2, 8]
    parts = sum(_head_output_rows(layer, x, rows[h], h) for h in range(4))
    want, _ = layer.self_attn(layer.input_layernorm(x), cos, sin, seg)
    np.testing.assert_allclose(np.asarray(parts), np.asarray(want[:, 5:7]), atol=1e-5)

    digits = jnp.asarray([int(ids[0, 1]), int(ids[0, 3]), 7], jnp.int32)     # key tokens 1 and 3 are "digits"
    table = lm.embed_tokens[...][digits]
    unembed = lambda h: jnp.dot(lm.norm(h), table.T)
    pointers = jnp.asarray([[[0, 5, 1, 1], [0, 6, 3, 3], [1, 6, 4, 4], [0, 4, 0, 0]]], jnp.int32)
    ce, _ = pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg,
                       {"index_first": (0, 2), "index_last": (1, 0)}, (ids, digits, unembed))
    # index_first rows at queries 5 and 6 -> keys 1 and 3 (digits 0 and 1); the key at 0 is no digit: no readout
    first = unembed(_head_output_rows(layer, x, rows[2], 2))[0]
    want_first = -(jax.nn.log_softmax(first[0])[0] + jax.nn.log_softmax(first[1])[1]) / 2
    np.testing.assert_allclose(float(ce["readout_index_first"]), float(want_first), rtol=1e-5)
    assert float(ce["readout_index_last"]) == 0.0          # its key (token 4) is not a digit: nothing to read

    # match_first reads its head's output against the token after the query (the digit it copies); a row that
    # points a query at itself has nothing to copy, and a target that is no digit is not read out
    layer1, x1 = lm.layers[1], out.hidden_states[1]
    digits = jnp.asarray([int(ids[0, 6]), 7, 8], jnp.int32)
    table = lm.embed_tokens[...][digits]
    unembed = lambda h: jnp.dot(lm.norm(h), table.T)
    if int(ids[0, 4]) in (int(ids[0, 6]), 7, 8):
        raise AssertionError("test ids: token 4 must not be a digit")
    pointers = jnp.asarray([[[9, 5, 2, 2], [9, 6, 6, 6], [9, 3, 1, 1]]], jnp.int32)
    ce, _ = pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg, {"match_first": (1, 3)},
                       (ids, digits, unembed))
    row = head_log_attention(layer1, x1, cos, sin, 3, seg)[:, 5:6]
    copied = unembed(_head_output_rows(layer1, x1, row, 3))[0, 0]
    np.testing.assert_allclose(float(ce["readout_match_first"]), float(-jax.nn.log_softmax(copied)[0]), rtol=1e-5)


def test_a_micro_batch_without_pointers_reports_every_pointer_metric_as_empty():
    """Micro-batches are accumulated by metric name: one whose items carry no pointers (e.g. only state goals)
    must report the same names, as empty (sum, count) pairs, or the update fails."""
    from flax import nnx

    from gui_jax.train.sft import sft_loss_fn
    model, _ = _small_model(2)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    layout = {"index_first": (0, 0), "match": (1, 0)}
    loss = sft_loss_fn(graphdef, rest, pointer_weight=0.1, pointer_layout=layout, readout_weight=0.1,
                       readout_ids=(100, 101))
    pointed = TrainSample(np.arange(6) + 100, np.asarray([120, 121]), pointers=np.asarray([[0, 3, 1, 1]]))
    plain = TrainSample(np.arange(6) + 100, np.asarray([120, 121]))
    with_p = loss(params, build_batch([pointed], model.cfg, pad_id=0), None)[2]
    without = loss(params, build_batch([plain], model.cfg, pad_id=0), None)[2]
    assert sorted(with_p) == sorted(without)
    assert {k for k in without if k.startswith("pointer_ce_")} == {
        "pointer_ce_index_first", "pointer_ce_match", "pointer_ce_readout_index_first"}
    assert all(float(without[k][1]) == 0.0 for k in without if k.startswith("pointer_ce_"))


def test_a_status_tag_after_a_label_is_not_part_of_the_name_the_goal_uses():
    tagged = PIECES[:22] + [" (", "new", ")"] + PIECES[22:]   # "[12] ; Red Sun (new)"
    rows = item_pointers(tagged, PROMPT_LEN + 3, "item 0").tolist()
    assert [3, 35, 29, 30] in rows and [4, 35, 21, 21] in rows   # goal and match hops as without the tag
    assert not any(r[1] in (22, 23, 24) for r in rows)          # the tag's tokens are no label tokens


def test_answer_weight_adds_the_mean_nll_of_the_tokens_the_match_hops_predict():
    """answer_weight w: + w · #response tokens · mean −log p of the tokens after match / read_match queries, each
    once however many hops point from its query; other hops, padding and prompt positions add nothing."""
    from flax import nnx

    from gui_jax.rl.batch import model_forward_logprobs
    from gui_jax.train.sft import sft_loss_fn
    model, _ = _small_model(2)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    layout = {"index_first": (0, 0), "match": (1, 0)}
    # prompt 6 tokens, response 4 (positions 6..9); match queries 6 and 7 (twice) -> answers 7, 8; read_match 8
    # -> 9; index_first from 7 and padding rows do not count
    pointers = np.asarray([[4, 6, 1, 1], [4, 7, 2, 2], [4, 7, 2, 2], [7, 8, 3, 3], [0, 7, 1, 1], [-1, 0, 0, 0]])
    sample = TrainSample(np.arange(6) + 100, np.asarray([120, 121, 122, 123]), pointers=pointers)
    batch = build_batch([sample], model.cfg, pad_id=0)
    base = sft_loss_fn(graphdef, rest, pointer_weight=0.1, pointer_layout=layout)
    weighted = sft_loss_fn(graphdef, rest, pointer_weight=0.1, pointer_layout=layout, answer_weight=2.0)
    (t0, n0, _), (t1, n1, m1) = base(params, batch, None), weighted(params, batch, None)
    logp = np.asarray(model_forward_logprobs(nnx.merge(graphdef, params, rest), batch)[0])[0]
    expected = -(logp[7] + logp[8] + logp[9]) / 3
    assert float(n0) == float(n1) == 4.0
    np.testing.assert_allclose(float(m1["answer_nll"]), expected, rtol=1e-5)
    np.testing.assert_allclose(float(t1) - float(t0), 2.0 * 4.0 * expected, rtol=1e-4)


def test_piece_pointers_keep_only_the_layouts_hops():
    """The stream carries only the rows its layout scores (the others would cost attention rows for nothing)."""
    from gui_jax.train.attention_pointers import PiecePointers

    class Pieces:   # a tokenizer whose ids are indices into PIECES
        def decode(self, ids):
            return PIECES[ids[0]]

    sample = TrainSample(np.arange(PROMPT_LEN), np.arange(PROMPT_LEN, len(PIECES)))
    every = PiecePointers(Pieces())(sample, "item 0")
    some = PiecePointers(Pieces(), ("index_next", "match_next"))(sample, "item 0")
    assert every.tolist() == item_pointers(PIECES, PROMPT_LEN, "item 0").tolist()
    assert some.tolist() == [r for r in every.tolist() if HOPS[r[0]] in ("index_next", "match_next")]
    assert len(some) == 6


def test_a_residual_scaled_readout_is_the_heads_share_of_the_logits_where_it_joins():
    """readout_scale='residual': the head's output over the RMS of the residual it joins (the last layer's output
    for a copy hop) times the final norm's scale, unembedded: its additive share of the model's logits."""
    import jax
    import jax.numpy as jnp

    from gui_jax.train.attention_pointers import _head_output_rows, head_log_attention, pointer_ce
    lm, ids, out, cos, sin, seg = _small_forward(3)
    digits = jnp.asarray([int(ids[0, 6]), 7, 8], jnp.int32)
    table = lm.embed_tokens[...][digits]
    unembed = lambda h, rms=None: jnp.dot(lm.norm(h) if rms is None else lm.norm.scale[...] * h / rms, table.T)
    pointers = jnp.asarray([[[9, 5, 2, 2]]], jnp.int32)
    ce, _ = pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg, {"match_first": (1, 2)},
                       (ids, digits, unembed), readout_scale="residual")
    final = out.hidden_states[-1][0, 5]          # the last layer's output: the final norm's input
    np.testing.assert_allclose(np.asarray(lm.norm(out.hidden_states[-1])), np.asarray(out.last_hidden_state),
                               atol=1e-5)
    head = _head_output_rows(lm.layers[1], out.hidden_states[1], head_log_attention(
        lm.layers[1], out.hidden_states[1], cos, sin, 2, seg)[:, 5:6], 2)[0, 0]
    share = (lm.norm.scale[...] * head / jnp.sqrt(jnp.mean(final * final) + 1e-6)) @ table.T
    np.testing.assert_allclose(float(ce["readout_match_first"]), float(-jax.nn.log_softmax(share)[0]), rtol=1e-4)
    with pytest.raises(ValueError, match="readout_scale 'norm': one of own, residual"):
        pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg, {"match_first": (1, 2)},
                   (ids, digits, unembed), readout_scale="norm")


def test_the_value_readout_scores_the_read_match_heads_share_against_the_token_after_its_query():
    """value_readout: what the read_match head adds at its query (a range of keys), unembedded over the whole
    vocabulary and scaled by the residual it joins, scored against the token after the query (the value token the
    copy writes); no digit readout is needed beside it, and hops other than read_match are not read out."""
    import jax
    import jax.numpy as jnp

    from gui_jax.train.attention_pointers import HOPS, _head_output_rows, head_log_attention, pointer_ce
    lm, ids, out, cos, sin, seg = _small_forward(4)
    table = lm.embed_tokens[...]
    unembed_all = lambda h, rms=None: jnp.dot(lm.norm(h) if rms is None else lm.norm.scale[...] * h / rms, table.T)
    read = HOPS.index("read_match")
    pointers = jnp.asarray([[[read, 5, 1, 3], [read, 6, 2, 2], [HOPS.index("goal"), 6, 0, 1]]], jnp.int32)
    ce, _ = pointer_ce(lm.layers, out.hidden_states, cos, sin, pointers, seg, {"read_match": (1, 2), "goal": (0, 1)},
                       readout_scale="residual", value_readout=(ids, unembed_all))
    assert set(ce) == {"read_match", "goal", "readout_read_match"}
    rows = head_log_attention(lm.layers[1], out.hidden_states[1], cos, sin, 2, seg)
    final = out.hidden_states[-1][0]
    nll = []
    for q in (5, 6):
        head = _head_output_rows(lm.layers[1], out.hidden_states[1], rows[:, q:q + 1], 2)[0, 0]
        share = (lm.norm.scale[...] * head / jnp.sqrt(jnp.mean(final[q] * final[q]) + 1e-6)) @ table.T
        nll.append(float(-jax.nn.log_softmax(share)[int(ids[0, q + 1])]))
    np.testing.assert_allclose(float(ce["readout_read_match"]), np.mean(nll), rtol=1e-4)


def test_a_read_goal_hop_takes_the_read_answers_goal_rows_and_leaves_a_taps_alone():
    """With read_goal in the layout, a read item's goal rows (its value tokens' queries -> the goal's label) become
    read_goal rows, the other rows unchanged; a tap item keeps its goal rows; read_goal sits before read_match."""
    from gui_jax.train.attention_pointers import PiecePointers

    def pieces_of(table):
        class Pieces:   # a tokenizer whose ids are indices into the table
            def decode(self, ids):
                return table[ids[0]]
        return Pieces()

    hops = ("label_bag", "goal", "read_goal", "read_match", "match")
    read = TrainSample(np.arange(29), np.arange(29, len(READ_PIECES)))
    plain = item_pointers(READ_PIECES, 29, "item 0", read=True)
    moved = PiecePointers(pieces_of(READ_PIECES), hops)(read, "item 0", read=True)
    want = [[HOPS.index("read_goal") if h == HOPS.index("goal") else h, q, lo, hi] for h, q, lo, hi in plain.tolist()
            if HOPS[h] in hops]
    assert moved.tolist() == want
    assert sorted(tuple(r[1:]) for r in moved.tolist() if r[0] == HOPS.index("read_goal")) == [
        (q, 26, 27) for q in range(32, 37)]
    tap = PiecePointers(pieces_of(PIECES), hops)(TrainSample(np.arange(PROMPT_LEN), np.arange(PROMPT_LEN, len(PIECES))),
                                                "item 1")
    assert (tap[:, 0] == HOPS.index("goal")).any() and not (tap[:, 0] == HOPS.index("read_goal")).any()
    assert parse_layout("label_bag=0.1,goal=0.1,read_goal=0.3,read_match=2.0", 3, 4)["read_goal"] == (0, 3)
    with pytest.raises(ValueError, match="the read_goal hop must sit in an earlier layer than the read_match hop"):
        parse_layout("read_goal=2.1,read_match=2.0", 3, 4)
