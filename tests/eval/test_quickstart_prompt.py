"""The quickstart's UI-text options: words after spaces (goal words and UI labels tokenize alike),
both text and description shown, flag-only lines left out before the line limit."""
import numpy as np

from gui_jax.core.types import Observation, UIElement
from gui_jax.rl.prompting import PromptConfig, build_messages, ui_text, word_spaced


def _el(i, text="", desc="", clickable=True):
    return UIElement(index=i, cls="android.widget.TextView", text=text, content_desc=desc,
                     bounds=(0, 0, 10, 10), clickable=clickable)


def _obs(elements):
    return Observation(screenshot=np.zeros((4, 2, 3), np.uint8), ui_elements=elements, screen_size=(100, 200))


def test_word_spaced_opening_quotes_only():
    assert word_spaced("Mark the task 'Call plumber' as done.") == "Mark the task ' Call plumber' as done."
    assert word_spaced("Tara's \"Blue\" x") == "Tara's \" Blue\" x"


def test_ui_text_words_and_skip_unlabeled():
    obs = _obs([_el(3, "ON", "08:30  Call mom"), _el(4), _el(5, "Tara Young", clickable=False)])
    cfg = PromptConfig(observation="ui_text", target="element", ui_text_class=False, word_tokens=True,
                       ui_text_skip_unlabeled=True, max_ui_lines=2)
    assert ui_text(obs, cfg) == "[3] click; 08:30 Call mom ON\n[5] ; Tara Young"
    old = PromptConfig(observation="ui_text", target="element", ui_text_class=False, max_ui_lines=2)
    assert ui_text(obs, old) == "[3] click;ON\n[4] click;"
    msgs, _ = build_messages("Open 'Tara Young'.", [], obs, cfg)
    assert "Goal: Open ' Tara Young'." in msgs[-1]["content"][0]["text"]
