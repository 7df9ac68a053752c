"""The look-up probe's screens: answers point at the named line, held-out words never occur in training
screens, shared-word distractors really share words, and the answer mask marks exactly the goals' answers."""
import dataclasses

import numpy as np
import pytest

from gui_jax.train.lookup_probe import (GOAL, INDEX_BASE, NL, LookupProbeConfig, lookup_batch, reference_hidden,
                                        reference_init, screen_keys, screen_row, word_ids, word_tokens)


def _lines(tokens, screen):
    body = [t for t, s in zip(tokens, screen) if s]
    out, cur = [], []
    for t in body:
        if t == NL:
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    return out


@pytest.mark.parametrize("order", ["index_first", "index_last", "adjacent"])
def test_each_answer_is_the_index_of_the_line_with_the_goal_words(order):
    cfg = LookupProbeConfig(lines=12, queries=5, key_words=2, order=order, filler=2)
    rng = np.random.default_rng(3)
    for _ in range(20):
        tokens, answer, screen = screen_row(rng, cfg, False, cfg.queries)
        assert len(tokens) == len(answer) == len(screen)
        lines = _lines(tokens, screen)
        assert len(lines) == cfg.lines
        words = [tuple(t for t in line if t >= 100) for line in lines]
        assert len(set(words)) == cfg.lines                     # labels are distinct
        answers = [i for i, a in enumerate(answer) if a]
        assert len(answers) == cfg.queries
        for pos in answers:
            goal_at = max(i for i in range(pos) if tokens[i] == GOAL)
            goal_words = tuple(t for t in tokens[goal_at:pos] if t >= 100)
            line = words.index(goal_words)
            assert tokens[pos] == INDEX_BASE + line and INDEX_BASE + line in lines[line]


def test_held_out_screens_use_only_held_out_words_and_distractors_share_words():
    cfg = LookupProbeConfig(lines=24, queries=1, key_words=2, shared_words=True)
    ids, answer, screen = lookup_batch(np.random.default_rng(0), cfg, True, 16, 1)
    words = ids[ids >= 100]
    assert words.min() >= cfg.held_out_words[0] and words.max() < cfg.held_out_words[1]
    train_ids, _, _ = lookup_batch(np.random.default_rng(1), cfg, False, 16, 8)
    assert not set(train_ids[train_ids >= 100].tolist()) & set(range(*cfg.held_out_words))
    assert ids.shape[1] % 32 == 0 and answer.sum() == 16
    for row, scr in zip(ids, screen):
        keys = [tuple(t for t in line if t >= 100) for line in _lines(row.tolist(), scr.tolist())]
        # every label shares a word with another label on the same screen
        assert all(any(set(k) & set(o) for o in keys if o != k) for k in keys)


def test_piece_words_hold_out_combinations_of_trained_pieces():
    cfg = LookupProbeConfig(lines=24, key_words=2, word_pieces=2, order="adjacent", train_words=(100, 160),
                            held_out_words=(100, 160))
    train, held = set(word_ids(cfg, False).tolist()), set(word_ids(cfg, True).tolist())
    assert not train & held and len(train | held) == 60 ** 2 and 0.15 < len(held) / 3600 < 0.25
    spell = lambda w: tuple(word_tokens(cfg, w))
    assert len({spell(w) for w in train | held}) == 3600                # one spelling per word
    assert all(100 <= t < 160 for w in held for t in spell(w))
    train_pieces = {t for w in train for t in spell(w)}
    assert {t for w in held for t in spell(w)} <= train_pieces          # every held-out token is trained
    rng = np.random.default_rng(0)
    for _ in range(10):
        keys = screen_keys(rng, cfg, True)
        assert all(w in held for k in keys for w in k) and len(keys) == 24
        tokens, answer, _ = screen_row(rng, cfg, False, 4)
        assert sum(answer) == 4 and len(tokens) == 24 * 7 + 4 * 7       # '; p p p p k \n', 'Goal p p p p k \n'


def test_curriculum_stages_set_lines_and_key_words():
    cfg = LookupProbeConfig(lines=24, queries=4, key_words=2, steps=100, curriculum="4x1:30, 8:20")
    assert cfg.stages() == [(4, 1, 30), (8, 2, 20), (24, 2, 50)]
    with pytest.raises(ValueError, match="linesxkey_words"):
        LookupProbeConfig(curriculum="4y1:30")


def test_mixed_sizes_vary_training_screens_and_keep_held_out_screens_fixed():
    cfg = LookupProbeConfig(lines=8, min_lines=4, queries=4, key_words=1, order="adjacent")
    rng = np.random.default_rng(0)
    sizes = set()
    for _ in range(60):
        tokens, answer, screen = screen_row(rng, cfg, False, cfg.queries)
        sizes.add(len(_lines(tokens, screen)))
        assert sum(answer) == cfg.queries
    assert sizes == {4, 5, 6, 7, 8}
    assert {len(_lines(*screen_row(rng, cfg, True, 1)[::2])) for _ in range(20)} == {8}
    with pytest.raises(ValueError, match="min_lines"):
        LookupProbeConfig(lines=8, min_lines=2, queries=4)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="order"):
        LookupProbeConfig(order="sideways")
    with pytest.raises(ValueError, match="disjoint"):
        LookupProbeConfig(train_words=(100, 2200), held_out_words=(2100, 2600))
    with pytest.raises(ValueError, match="held_out_words must equal train_words"):
        LookupProbeConfig(word_pieces=2)
    with pytest.raises(ValueError, match=r"need steps \(10\) > warmup \(20\)"):
        LookupProbeConfig(steps=10, warmup=20, final_lr_fraction=0.0)
    with pytest.raises(ValueError, match="final_lr_fraction must be in"):
        LookupProbeConfig(final_lr_fraction=1.5)


def test_reference_decoder_is_causal():
    import jax.numpy as jnp
    params = reference_init(__import__("jax").random.key(0), 300, 32, 2)
    ids = jnp.asarray(np.random.default_rng(0).integers(100, 300, (2, 10)))
    changed = ids.at[:, 6].set(101)
    a, b = reference_hidden(params, ids, 4), reference_hidden(params, changed, 4)
    np.testing.assert_allclose(a[:, :6], b[:, :6], atol=1e-6)   # positions before the change do not see it
    assert float(jnp.abs(a[:, 6:] - b[:, 6:]).max()) > 1e-4


def test_probe_run_is_deterministic_and_reports_its_curve():
    from gui_jax.train.lookup_probe import run_probe
    cfg = LookupProbeConfig(lines=4, queries=2, key_words=1, order="adjacent", layers=1, hidden=32, heads=2,
                            kv_heads=1, batch=4, steps=4, eval_every=2, eval_screens=64, curriculum="2:2")
    first, second = run_probe(cfg, log=lambda _: None), run_probe(cfg, log=lambda _: None)
    untimed = lambda run: [{k: v for k, v in c.items() if k != "seconds"} for c in run["curve"]]
    assert untimed(first) == untimed(second)
    assert [c["step"] for c in first["curve"]] == [2, 4] and [c["lines"] for c in first["curve"]] == [2, 4]
    assert first["chance"] == 0.25 and all(0.0 <= c["held_out_acc"] <= 1.0 for c in first["curve"])


def test_accuracy_gated_curriculum_grows_the_screens_once_the_stage_is_learnt():
    from gui_jax.train.lookup_probe import run_probe
    # one-line screens are answered by a constant (index 0) within a few steps; their stage may last all 200
    base = dict(lines=4, queries=1, key_words=1, order="adjacent", layers=1, hidden=32, heads=2, kv_heads=1,
                batch=4, steps=200, learning_rate=1e-2, warmup=1, eval_every=20, eval_screens=64,
                curriculum="1:200")
    gated = run_probe(LookupProbeConfig(**base, advance_at=0.95), log=lambda _: None)["curve"]
    switch = next(c["step"] for c in gated if c["lines"] == 4)
    assert 100 < switch < 200          # after a full 100-step window at ≥ 0.95; ungated, stage 1 lasts all 200
    assert all(c["lines"] == 4 for c in gated if c["step"] >= switch)
    assert [c["stage_held_out_acc"] for c in gated if c["lines"] == 1][-1] == 1.0
    assert all("stage_held_out_acc" not in c for c in gated if c["lines"] == 4)
    with pytest.raises(ValueError, match="advance_at"):
        LookupProbeConfig(advance_at=1.5)


def test_probe_resumes_from_its_snapshot_exactly(tmp_path):
    from gui_jax.train.lookup_probe import run_probe
    small = dict(lines=4, queries=2, key_words=1, order="adjacent", layers=1, hidden=32, heads=2, kv_heads=1,
                 batch=4, eval_every=2, eval_screens=64, curriculum="2:3", checkpoint_seconds=0)
    untimed = lambda run: [{k: v for k, v in c.items() if k != "seconds"} for c in run["curve"]]
    straight = run_probe(LookupProbeConfig(**small, steps=8), log=lambda _: None)
    state, lines = str(tmp_path / "probe_state.pkl"), []
    run_probe(LookupProbeConfig(**small, steps=5), log=lambda _: None, state_path=state)   # stops mid-stage 2
    resumed = run_probe(LookupProbeConfig(**small, steps=8), log=lines.append, state_path=state)
    assert lines[0].startswith(f"resumed from {state} at step 5 (stage 2 of 2)")
    assert untimed(resumed) == untimed(straight) and [c["step"] for c in resumed["curve"]] == [2, 4, 6, 8]
    assert untimed(straight)[-1]["loss"] != untimed(straight)[0]["loss"]        # it trained between points
    with pytest.raises(ValueError, match="other settings \\(batch, learning_rate\\)"):
        run_probe(LookupProbeConfig(**{**small, "batch": 8}, steps=8, learning_rate=1e-3), state_path=state)


def test_shuffled_ids_number_lines_with_distinct_random_indices_and_answers_copy_them():
    cfg = LookupProbeConfig(lines=6, queries=6, key_words=1, order="adjacent", shuffle_ids=True)
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(20):
        tokens, answer, screen = screen_row(rng, cfg, False, cfg.queries)
        n = sum(screen)
        lines = [tokens[i:i + 4] for i in range(0, n, 4)]           # ; w k \n
        label_to_id = {line[1]: line[2] for line in lines}
        ids = [line[2] for line in lines]
        assert len(set(ids)) == 6 and all(INDEX_BASE <= k < INDEX_BASE + 50 for k in ids)
        seen.update(ids)
        for pos in np.flatnonzero(answer):                            # Goal w k: the answer is w's line's id
            assert tokens[pos - 2] == GOAL and tokens[pos] == label_to_id[tokens[pos - 1]]
    assert len(seen) > 30                                             # ids vary beyond the first six
    in_order = screen_row(np.random.default_rng(3), dataclasses.replace(cfg, shuffle_ids=False), False, 6)[0]
    assert [in_order[i + 2] for i in range(0, 24, 4)] == [INDEX_BASE + i for i in range(6)]


def test_pointer_targets_point_label_tokens_at_their_index_and_answers_at_the_matched_label():
    from gui_jax.train.lookup_probe import LB, pointer_targets
    cfg = LookupProbeConfig(lines=6, queries=3, key_words=2, order="index_first", shuffle_ids=True,
                            answer_token=False, filler=1)
    ids, answer, screen = lookup_batch(np.random.default_rng(5), cfg, False, 4, 3)
    index_pos, label, match_pos, start_pos = pointer_targets(ids, answer, screen)
    for r in range(4):
        for t in np.nonzero(label[r])[0]:              # a label token looks at the index of its own line
            line_start = max(i for i in range(t) if ids[r, i] == LB)
            assert screen[r, t] == 1 and ids[r, t] >= 100 and index_pos[r, t] == line_start + 1
        assert label[r].sum() == 6 * 2                 # every label token of the screen, and nothing else
        for t in np.nonzero(answer[r])[0]:             # "Goal a b k": the goal's last word is right before k
            m = match_pos[r, t]
            assert ids[r, t - 1] == ids[r, m] and ids[r, m + 1] == NL and index_pos[r, m] > 0
            assert ids[r, index_pos[r, m]] == ids[r, t]    # the matched line carries the answer's index
        for t in np.nonzero(ids[r] >= 100)[0]:         # every label token (screen or goal): its label's first token
            first = start_pos[r, t]
            assert first <= t and ids[r, first] >= 100 and ids[r, first - 1] in (GOAL, 5) + tuple(range(60, 64))
            assert all(ids[r, i] >= 100 or 60 <= ids[r, i] < 64 for i in range(first, t + 1))
    assert not (ids == 8).any()                        # answer_token=False: no Answer token


def test_init_gain_sets_matrix_scale_and_keeps_the_embedding():
    import jax
    from gui_jax.models.qwen2_5_vl.layers import rescale_init
    params = reference_init(jax.random.key(0), 300, 64, 2)
    out = rescale_init(params, 1.0)
    np.testing.assert_array_equal(out["embed"], params["embed"])
    np.testing.assert_allclose(out["layers"][0]["q"], params["layers"][0]["q"] / 0.02 / 8.0, rtol=1e-6)
    np.testing.assert_allclose(out["layers"][1]["down"], params["layers"][1]["down"] / 0.02 / np.sqrt(192),
                               rtol=1e-6)
    np.testing.assert_array_equal(out["layers"][0]["norm1"], params["layers"][0]["norm1"])
    with pytest.raises(ValueError, match="pointer_weight needs order='index_first'"):
        LookupProbeConfig(pointer_weight=1.0, order="adjacent")
    with pytest.raises(ValueError, match="match_layer must name one of the 4 layers"):
        LookupProbeConfig(layers=4, match_layer=4)
    with pytest.raises(ValueError, match="index_readout_weight .* needs pointer_weight > 0 and model='tiny'"):
        LookupProbeConfig(index_readout_weight=1.0)
    with pytest.raises(ValueError, match="pointer_label_bag needs pointer_label_start=True"):
        LookupProbeConfig(pointer_weight=1.0, order="index_first", pointer_label_bag=True)


@pytest.mark.parametrize("theta", [1e4, 1e6])
def test_rope_base_reaches_both_models_and_matches_the_text_mrope(theta):
    """probe.rope_theta rotates the reference decoder's pairs exactly as the tiny model's M-RoPE does on text-only
    positions at that base, and the tiny probe model is built with it; a base ≤ 1 is refused by name."""
    import dataclasses as dc

    import jax.numpy as jnp

    from gui_jax.models.qwen2_5_vl.config import tiny
    from gui_jax.models.qwen2_5_vl.text import mrope_cos_sin
    from gui_jax.train import lookup_probe
    text = dc.replace(tiny().text, rope_theta=theta)
    positions = jnp.arange(700, dtype=jnp.float32)
    cos, sin = mrope_cos_sin(jnp.broadcast_to(positions[None, None], (3, 1, 700)), text)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(1, 700, 1, text.head_dim)), jnp.float32)
    x1, x2 = jnp.split(x, 2, -1)
    want = x * cos[:, :, None] + jnp.concatenate([-x2, x1], -1) * sin[:, :, None]
    np.testing.assert_allclose(lookup_probe._rope(x, positions, theta), want, atol=2e-5)
    ids = jnp.asarray(np.random.default_rng(1).integers(100, 300, (1, 40)))

    def hidden(t):   # the same weights (seed 0) at base t; init_gain 1: attention far from uniform
        params, hidden_fn, _ = lookup_probe._model_fns(LookupProbeConfig(layers=1, rope_theta=t, init_gain=1.0))
        return hidden_fn(params, ids)[0]
    assert float(jnp.abs(hidden(theta) - hidden(theta * 3)).max()) > 1e-3    # the base reaches the model
    with pytest.raises(ValueError, match="rope_theta must be > 1"):
        LookupProbeConfig(rope_theta=1.0)


def test_done_share_puts_the_first_goal_and_its_history_before_the_screen():
    from gui_jax.train.lookup_probe import EARLIER, LB, STOP, pointer_targets
    cfg = LookupProbeConfig(lines=6, queries=3, key_words=2, order="index_first", shuffle_ids=True,
                            answer_token=False, done_share=0.5)
    rng, kinds = np.random.default_rng(7), set()
    for _ in range(30):
        tokens, answer, screen = screen_row(rng, cfg, False, cfg.queries)
        start = screen.index(1)
        prefix, answers = tokens[:start], [i for i, a in enumerate(answer) if a]
        assert prefix[0] == GOAL and prefix[-1] == NL and EARLIER in prefix and not any(answer[:start])
        history = prefix[prefix.index(EARLIER) + 1:-1]       # [] (go on) or [the first goal's line index]
        goal_words = [t for t in prefix if t >= 100]
        first_goal = [t for t in tokens[max(i for i in range(answers[0]) if tokens[i] == GOAL):answers[0]] if t >= 100]
        assert goal_words == first_goal                      # the history's goal is the first goal
        lines = _lines(tokens, screen)
        line = next(ln for ln in lines if [t for t in ln if t >= 100] == goal_words)
        if history:
            assert history == [line[1]] and tokens[answers[0]] == STOP    # done: the step clicked that line
        else:
            assert tokens[answers[0]] == line[1]             # go on: the line's index, as without a history
        assert all(tokens[a] != STOP for a in answers[1:])
        kinds.add(bool(history))
    assert kinds == {True, False}
    ids, answer, screen = lookup_batch(np.random.default_rng(2), dataclasses.replace(cfg, done_share=1.0), False, 4, 3)
    index_pos, label, match_pos, _ = pointer_targets(ids, answer, screen)
    for r in range(4):
        assert label[r].sum() == 6 * 2 and (label[r] <= screen[r]).all()   # the prefix's goal words are no line
        for t in np.nonzero(label[r])[0]:
            assert index_pos[r, t] == max(i for i in range(t) if ids[r, i] == LB) + 1
        stops = [t for t in np.nonzero(answer[r])[0] if ids[r, t] == STOP]
        assert len(stops) == 1 and match_pos[r, stops[0]] == 0
    # no draw at 0: the default stream is unchanged by the field
    a = screen_row(np.random.default_rng(4), dataclasses.replace(cfg, done_share=0.0), False, 3)
    b = screen_row(np.random.default_rng(4), LookupProbeConfig(lines=6, queries=3, key_words=2, order="index_first",
                                                               shuffle_ids=True, answer_token=False), False, 3)
    assert a == b
    with pytest.raises(ValueError, match="done_share"):
        LookupProbeConfig(done_share=1.5)
