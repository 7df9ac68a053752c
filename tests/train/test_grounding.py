"""Grounding items for SFT: which elements qualify, how many are mixed in, what the model is shown
and trained to write; the index-last UI line format."""
import numpy as np
import pytest

from gui_jax.core.types import Action, Episode, Observation, UIElement
from gui_jax.rl.prompting import PromptConfig, ui_text
from gui_jax.train.grounding import grounding_candidates, grounding_instruction, sample_grounding

CFG = PromptConfig(observation="ui_text", target="element", ui_text_class=False, word_tokens=True,
                   ui_text_skip_unlabeled=True, max_ui_lines=4, system_prompt=False)


def _el(i, text="", desc="", clickable=False):
    return UIElement(index=i, cls="android.widget.TextView", text=text, content_desc=desc,
                     bounds=(0, 10 * i, 100, 10 * i + 8), clickable=clickable)


def _obs(elements):
    return Observation(screenshot=np.zeros((4, 2, 3), np.uint8), ui_elements=elements, screen_size=(100, 200))


def _episode():
    # step 0: "08:30" is inside two lines (label row and switch) → not unique; "Gym" unique;
    # element 6 is past max_ui_lines (not shown) → never a target; element 2 has no label.
    s0 = _obs([_el(1, "08:30 Call mom"), _el(2, clickable=True), _el(3, "ON", "08:30 Call mom", True),
               _el(4, "Gym"), _el(5, "Add alarm", clickable=True), _el(6, "Timer")])
    s1 = _obs([_el(7, "Tara Young"), _el(8, "Lena Novak")])
    return Episode(episode_id="e0", goal="Turn off the 08:30 alarm.", observations=[s0, s1, s1],
                   actions=[Action("click", element=3), Action("terminate", status="success")])


def test_candidates_unique_shown_labels_only():
    ep = _episode()
    got = grounding_candidates([ep], CFG)
    # step 0 shows elements 1, 3, 4, 5 (2 is unlabelled, 6 past the limit); 1's label "08:30 Call mom" is
    # inside line 3 ("08:30 Call mom ON") too; 3's own label "ON" is unique.
    assert got == [(0, 0, 3, "ON"), (0, 0, 4, "Gym"), (0, 0, 5, "Add alarm"),
                   (0, 1, 7, "Tara Young"), (0, 1, 8, "Lena Novak")]


def test_sample_fraction_count_and_determinism():
    ep = _episode()
    a = sample_grounding([ep], CFG, n_expert_steps=6, fraction=0.5, seed=3)
    assert len(a) == 6  # half of 12 items
    assert a == sample_grounding([ep], CFG, n_expert_steps=6, fraction=0.5, seed=3)
    cands = grounding_candidates([ep], CFG)
    assert a[:5] == cands and a[5] in cands  # 6 > 5 candidates: each once, then one drawn
    b = sample_grounding([ep], CFG, n_expert_steps=4, fraction=0.2, seed=3)
    assert len(b) == 1 and len(sample_grounding([ep], CFG, n_expert_steps=4, fraction=0.0)) == 0
    with pytest.raises(ValueError, match="grounding_fraction"):
        sample_grounding([ep], CFG, n_expert_steps=4, fraction=1.0)
    with pytest.raises(ValueError, match="uniquely labelled"):
        sample_grounding([Episode("x", "g", [_obs([_el(1)])], [Action("terminate", status="success")])],
                         CFG, n_expert_steps=1, fraction=0.5)


def test_instruction_and_index_last_line():
    assert grounding_instruction("Gym") == "Tap on 'Gym'."
    assert grounding_instruction("Gym", "Click {label}") == "Click Gym"
    obs = _episode().observations[1]
    last = PromptConfig(**{**CFG.__dict__, "ui_text_index_last": True})
    assert ui_text(obs, CFG) == "[7] ; Tara Young\n[8] ; Lena Novak"
    assert ui_text(obs, last) == "; Tara Young [7]\n; Lena Novak [8]"


def test_sft_source_mixes_grounding_items():
    import ml_collections

    from gui_jax.rl.agent import Agent
    from gui_jax.train.config_blocks import model_block
    from gui_jax.train.sft import SFTSource
    agent = Agent(ml_collections.ConfigDict({"model": model_block("tiny")}), seed=0)
    ep = _episode()
    src = SFTSource(agent, [ep], CFG, grounding_fraction=0.5, seed=0)
    assert len(src.index) == 2 and len(src) == 4
    e, t, k, label = src.grounding[0]
    sample = src[2]
    text = agent.policy.tokenizer.decode(list(sample.prompt_ids))
    assert f"Goal: Tap on ' {label}'." in text  # word_tokens spaces the opening quote
    assert agent.policy.tokenizer.decode(list(sample.response_ids)) == (
        f'<think></think>\n<action>{{"action": "click", "element": {k}}}</action><|im_end|>')
