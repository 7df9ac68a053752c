"""PhoneSim's own app pages in the pretraining stream: the apps' chrome, unique targets, goals that agree with
the screen, the share `app_pages` sets, and no PhoneSim content (names, songs, tasks, alarm times, due dates)."""
import re

import pytest

from gui_jax.core.dialects import parse_response
from gui_jax.train.pretrain_apps import APP_PAGES, MAX_PAGE_LINES
from gui_jax.train.pretrain_data import Difficulty, PretrainSource, quickstart_prompt_config
from gui_jax.train.pretrain_labels import contains_label, label_pool, phonesim_words, pool_of

CFG = quickstart_prompt_config(max_ui_lines=40)
CHROME = {"messages": ["Messages", "click; New message"], "songs": ["Music", "click,sel; Songs", "click; Playlists"],
          "alarms": ["Clock", "click,sel; Alarms", "click; Timer", "click; Stopwatch", "click; Add alarm"],
          "tasks": ["Tasks", "click; Clear done", "click; Add task"]}
# words of the apps' own chrome and of the UI-text flags, which are PhoneSim's by design
CHROME_WORDS = {"messages", "new", "message", "music", "songs", "playlists", "clock", "alarms", "timer", "stopwatch",
                "add", "alarm", "tasks", "clear", "done", "task", "due", "priority", "low", "medium", "high", "on",
                "off", "click", "check", "sel", "long"}


def _lines(item) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d+)\] (.*)$", item["ui_text"], re.M)}


def _items(mix, n, p=1.0, lines=(4, 40), share=0.5, goals=1):
    src = PretrainSource(CFG, mix, Difficulty(*lines, shared_word_prob=share), seed=0, goals_per_screen=goals,
                         app_pages=p)
    return [src[i] for i in range(n)]


def test_tap_items_click_the_only_line_that_shows_the_label_under_the_apps_chrome():
    items = _items({"tap": 1}, 120, goals=3)
    assert {it["layout"] for it in items} == {"messages", "songs"}
    assert sum("Play the song" in it["goal"] or "Open my conversation" in it["goal"] for it in items) >= 5
    for it in items:
        lines = _lines(it)
        for chrome in CHROME[it["layout"]]:
            assert any(ln == chrome or ln.endswith("; " + chrome) for ln in lines.values()), (chrome, lines)
        for goal, k, label in [(it["goal"], it["target_element"], it["label"])] + [
                (t["goal"], t["target_element"], t["label"]) for t in it["turns"]]:
            assert [j for j, ln in lines.items() if contains_label(ln, label)] == [k], (label, lines)
            assert label in goal.replace("' ", "'")
        _, action = parse_response(it["target"], CFG.dialect)
        assert action.type == "click" and action.element == it["target_element"]
        assert len(lines) == it["n_lines"] <= MAX_PAGE_LINES


def test_toggle_and_state_items_follow_the_switch_or_checkbox_of_the_named_alarm_or_task():
    items = _items({"toggle": 1, "state": 1}, 160)
    assert {it["layout"] for it in items} == {"alarms", "tasks"}
    assert {it["objective"] for it in items} == {"toggle", "state"}
    for it in items:
        lines = _lines(it)
        box = [ln for ln in lines.values() if contains_label(ln, it["label"]) and "check" in ln.split(";")[0]]
        assert len(box) == 1, (it["label"], lines)
        on = "on" in box[0].split(";")[0].split(",")
        if it["layout"] == "alarms":
            assert re.fullmatch(r"\d\d:\d\d", it["label"])
        if it["objective"] == "toggle":
            assert lines[it["target_element"]] == box[0]
            assert on == bool(re.search(r"\b(off|Disable|Uncheck|Untick|not done)\b", it["goal"])), it["goal"]
        else:
            asked = not re.search(r"\b(off|disabled|unchecked|not done)\b", it["goal"])
            assert it["answer"] == ("yes" if on == asked else "no"), (it["goal"], box)
    goals = " ".join(it["goal"] for it in items)
    assert re.search(r"Turn (on|off) the \d\d:\d\d alarm\.", goals) and "Mark the task '" in goals


def test_read_items_answer_the_last_message_below_the_peer():
    items = _items({"read": 1}, 60)
    assert {it["layout"] for it in items} == {"messages"}
    for it in items:
        lines = _lines(it)
        assert lines[it["value_element"]].split(";", 1)[1].strip() == it["answer"]
        assert it["value_element"] == min(j for j in lines if j > it["label_element"])


def test_app_pages_hold_no_phonesim_content():
    sim, train = phonesim_words(), label_pool("train").words()
    items = _items({"tap": 1, "read": 1, "toggle": 1, "state": 1}, 200, goals=2)
    assert {it["layout"] for it in items} == set(APP_PAGES)
    for it in items:
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", it["ui_text"])} - CHROME_WORDS
        assert not words & sim, sorted(words & sim)
        # pool words, or made-up words of the tokenizer's pieces that hash into the train pool
        assert all(w in train or pool_of(w) == "train" for w in words), sorted(words - train)[:5]
        # PhoneSim's alarms are at :00, :15, :30, :45 and its tasks are due in April
        assert not re.search(r"\b\d\d:(00|15|30|45)\b", it["ui_text"]) and "-04-" not in it["ui_text"]


def test_app_pages_is_the_share_of_items_an_app_page_can_serve():
    items = _items({"tap": 1, "home": 1}, 400, p=0.5)
    taps = [it for it in items if it["objective"] == "tap"]
    share = sum(it["layout"] in APP_PAGES for it in taps) / len(taps)
    assert 0.4 < share < 0.6
    assert all(it["layout"] == "home" for it in items if it["objective"] == "home")
    plain = _items({"tap": 1, "home": 1}, 30, p=0.0)
    assert not {it["layout"] for it in plain} & set(APP_PAGES)


@pytest.mark.parametrize("p", [1.5, -0.1, True, "0.2"])
def test_bad_app_pages_is_refused(p):
    with pytest.raises(ValueError, match="app_pages"):
        PretrainSource(CFG, {"tap": 1}, app_pages=p)


def test_app_pages_need_room_for_the_longest_page():
    with pytest.raises(ValueError, match=f"max_ui_lines ≥ {MAX_PAGE_LINES}"):
        PretrainSource(quickstart_prompt_config(max_ui_lines=24), {"tap": 1}, app_pages=0.2)


def test_app_items_get_attention_pointers_through_the_tokenizer():
    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.attention_pointers import HOPS, PiecePointers
    from gui_jax.train.pretrain_data import encode_item
    tok = tiny_tokenizer()
    encoder, pointers = ChatEncoder(tok, ImageProcessor()), PiecePointers(tok)
    items = _items({"tap": 1, "read": 1}, 60, goals=2)
    assert any("(new)" in it["ui_text"] for it in items)
    for it in items:
        sample = encode_item(encoder, it).sample
        rows = pointers(sample, f"item {it['index']}", read=it["objective"] == "read")
        hops = {HOPS[h] for h in rows[:, 0]}
        assert ({"goal", "match"} if it["objective"] == "tap" else {"row", "read_match"}) <= hops


def test_shared_alarm_times_share_the_hour_or_the_minutes():
    items = [it for it in _items({"toggle": 1}, 80, share=1.0) if it["layout"] == "alarms"]
    by = {"hour": 0, "minutes": 0}
    for it in items:
        hour, minute = it["label"].split(":")
        times = set(re.findall(r"; (\d\d):(\d\d) ", it["ui_text"])) - {(hour, minute)}
        assert times and all((h == hour) != (m == minute) for h, m in times), (it["label"], times)
        by["hour"] += sum(h == hour for h, _ in times)
        by["minutes"] += sum(m == minute for _, m in times)
    assert min(by.values()) > 0.3 * sum(by.values())


def test_page_answers_add_phonesims_answer_questions_and_the_expenses_page():
    """page_answers: reads are also asked in PhoneSim's answer phrasings (ANSWER_GOALS) on Messages and on an
    Expenses page, whose read answers the amount on the named row's right (PhoneSim's money format) under the
    app's chrome; names are generator labels, never PhoneSim's; read pointers build; without it the page is
    refused, naming the flag, and the read stream draws no expenses page."""
    import numpy as np
    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.attention_pointers import HOPS, PiecePointers
    from gui_jax.train.pretrain_apps import ANSWER_GOALS, build_app_screen
    from gui_jax.train.pretrain_data import encode_item
    src = PretrainSource(CFG, {"read": 1}, Difficulty(4, 40, shared_word_prob=0.5), seed=0, goals_per_screen=2,
                         app_pages=1.0, page_answers=True)
    items = [src[i] for i in range(160)]
    assert {it["layout"] for it in items} == {"messages", "expenses"}
    tok = tiny_tokenizer()
    encoder, pointers = ChatEncoder(tok, ImageProcessor()), PiecePointers(tok)
    sim, train = phonesim_words(), label_pool("train").words()
    for layout, (phrase,) in ANSWER_GOALS.items():
        mine = [it for it in items if it["layout"] == layout]
        goals = [g for it in mine for g in [it["goal"]] + [t["goal"] for t in it["turns"]]]
        asked = [g for g in goals if re.fullmatch(re.escape(phrase).replace(re.escape("{L}"), ".+"), g)]
        assert 0.1 < len(asked) / len(goals) < 0.6, layout
    for it in (it for it in items if it["layout"] == "expenses"):
        lines = _lines(it)
        assert lines[3].endswith("; Expenses") and lines[5].startswith("; Total: $")
        assert any(ln.endswith("click; Add expense") for ln in lines.values()) or max(lines) >= 30
        assert re.fullmatch(r"\$[\d,]+\.\d\d", it["answer"])
        assert lines[it["value_element"]].split(";", 1)[1].strip() == it["answer"]
        assert lines[it["label_element"]].split(";", 1)[1].strip() == it["label"]
        assert it["value_element"] == it["label_element"] + 2   # name, category, amount
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", it["label"])}
        assert not words & sim and all(w in train or pool_of(w) == "train" for w in words)
        rows = pointers(encode_item(encoder, it).sample, f"item {it['index']}", read=True)
        assert {"row", "read_match"} <= {HOPS[h] for h in rows[:, 0]}
    with pytest.raises(ValueError, match="app page 'expenses' cannot serve .* .without page_answers."):
        build_app_screen(np.random.default_rng(0), label_pool("train"), CFG, page="expenses", need="read", n_lines=20)
    plain = _items({"read": 1}, 40)
    assert {it["layout"] for it in plain} == {"messages"}
    assert not any("most recent message" in it["goal"] for it in plain)


def test_part_answers_read_the_artist_and_the_priority_inside_a_rows_line():
    """part_answers: songs and tasks serve reads asked in PhoneSim's phrasing, answered by the part of the row's
    second line the question names (the artist of "artist - m:ss", the priority in "Due …, High priority"); the read
    pointers point each answer token at that part of the line; without the flag the pages are refused for reads,
    naming it."""
    import numpy as np
    from gui_jax.envs.sim.apps.todo import PRIORITIES
    from gui_jax.models.processor import ImageProcessor
    from gui_jax.models.tokenizer import tiny_tokenizer
    from gui_jax.rl.jax_policy import ChatEncoder
    from gui_jax.train.attention_pointers import HOPS, PiecePointers
    from gui_jax.train.pretrain_apps import PART_GOALS, build_app_screen
    from gui_jax.train.pretrain_data import encode_item
    src = PretrainSource(CFG, {"read": 1}, Difficulty(4, 40, shared_word_prob=0.5), seed=0, goals_per_screen=2,
                         app_pages=1.0, part_answers=True)
    items = [it for it in (src[i] for i in range(100)) if it["layout"] in PART_GOALS]
    assert {it["layout"] for it in items} == {"songs", "tasks"} and len(items) > 30
    tok = tiny_tokenizer()
    encoder, pointers = ChatEncoder(tok, ImageProcessor()), PiecePointers(tok)
    read_match = HOPS.index("read_match")
    for it in items:
        (phrase,) = PART_GOALS[it["layout"]]
        assert it["goal"] == phrase.format(L=it["label"])
        line = _lines(it)[it["value_element"]].split(";", 1)[1].strip()
        assert line != it["answer"] and contains_label(line, it["answer"])
        if it["layout"] == "tasks":
            assert it["answer"] in PRIORITIES and f"{it['answer']} priority" in line
        else:
            assert line.startswith(it["answer"] + " - ")
        sample = encode_item(encoder, it).sample
        rows = pointers(sample, f"item {it['index']}", read=True)
        ids = [int(t) for t in sample.prompt_ids] + [int(t) for t in sample.response_ids]
        # each token of the answer's value points at the same token of the line (the closing quote at the rest)
        copied = [(tok.decode(ids[lo:hi + 1]), tok.decode(ids[q + 1:q + 2])) for hop, q, lo, hi in rows
                  if hop == read_match and '"' not in tok.decode(ids[q + 1:q + 2])]
        assert len(copied) >= len(it["answer"].split()) and all(key == token for key, token in copied), copied
        assert "".join(token for _, token in copied).startswith(" " + it["answer"])
    with pytest.raises(ValueError, match="app page 'songs' cannot serve .* .without part_answers."):
        build_app_screen(np.random.default_rng(0), label_pool("train"), CFG, page="songs", need="read", n_lines=20)
