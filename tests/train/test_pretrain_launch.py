"""The launch objective: PhoneSim's own home screen, a goal about one app's topic, the agent's open action as the
expert's; the app is the one PhoneSim's oracle opens for the quickstart's tasks; items are pure functions of
(seed, index); scoring accepts exactly the item's app."""
import numpy as np
import pytest

from gui_jax.core.dialects import parse_response
from gui_jax.envs.sim import PhoneSim, expert_actions
from gui_jax.rl.prompting import expert_response, ui_text
from gui_jax.tasks.registry import make_task
from gui_jax.train.pretrain_data import PretrainSource, quickstart_prompt_config, score
from gui_jax.train.pretrain_launch import APPS, ENTITY_TOPICS, launch_action, launch_goal
from gui_jax.train.pretrain_labels import label_pool

CFG = quickstart_prompt_config(max_ui_lines=40)
FORMAT_WORDS = {"am", "pm", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}


def _launch_items(n, goals=1, seed=0):
    src = PretrainSource(CFG, {"launch": 1.0}, seed=seed, goals_per_screen=goals)
    return [src[i] for i in range(n)]


def test_launch_items_show_phonesims_home_screen_and_open_the_goals_app():
    home = PhoneSim(render=False).reset(make_task("music.play", 3))
    items = _launch_items(200, goals=3)
    assert {it["app"] for it in items} == set(APPS)          # 12 apps, 200 draws
    for it in items:
        assert it["ui_text"] == ui_text(home, CFG)
        _, a = parse_response(it["target"], CFG.dialect)
        assert (a.type, a.text) == ("open", it["app"])
        assert score(it, it["target"]) and not score(it, expert_response(
            launch_action(next(x for x in APPS if x != it["app"])), home, CFG))
        apps = [it["app"]] + [t["app"] for t in it["turns"]]
        assert len(it["turns"]) == 2 and len(set(apps)) == 3  # later turns ask for other apps
        for t in it["turns"]:
            _, a = parse_response(t["target"], CFG.dialect)
            assert (a.type, a.text) == ("open", t["app"])
    again = _launch_items(5, goals=3)
    assert [(x["goal"], x["target"]) for x in again] == [(x["goal"], x["target"]) for x in items[:5]]
    assert [x["goal"] for x in _launch_items(5, goals=3, seed=1)] != [x["goal"] for x in items[:5]]


def test_the_app_is_the_one_phonesims_oracle_opens():
    """For a template of each app, the oracle's first step is launch_action(app): the objective teaches the
    agent's own first step."""
    templates = {"Clock": "clock.alarm_toggle", "Contacts": "contacts.favorite", "Messages": "messages.open_thread",
                 "Calendar": "calendar.event_time", "Notes": "notes.read", "Expenses": "expenses.amount",
                 "Recipes": "recipes.servings", "Tasks": "tasks.priority", "Files": "files.size",
                 "Recorder": "recorder.duration", "Music": "music.play", "Settings": "settings.wifi_on"}
    assert set(templates) == set(APPS)
    for app, name in templates.items():
        assert expert_actions(make_task(name, 5))[0].action == launch_action(app)


def test_goals_name_the_label_for_entities_and_stand_alone_for_settings():
    rng = np.random.default_rng(0)
    for _ in range(100):
        goal, app = launch_goal(rng, "Quiet Fire")
        assert ("'Quiet Fire'" in goal) == (app != "Settings")
        if app != "Settings":
            assert any(topic in goal for topic in ENTITY_TOPICS[app])
    assert launch_goal(rng, "x", "Music")[1] == "Music"
    with pytest.raises(ValueError, match="unknown app 'Radio'"):
        launch_goal(rng, "x", "Radio")


def test_launch_labels_are_the_pools_and_never_phonesims():
    """Entity goals name a generator label: from the source's pool (the reading_eval pool shares no word with the
    train pool) and never one of PhoneSim's own words."""
    import re
    from gui_jax.train.pretrain_labels import phonesim_words, pool_of
    for pool in ("train", "reading_eval"):
        own = label_pool(pool).words()
        src = PretrainSource(CFG, {"launch": 1.0}, pool=pool, seed=0)
        labels = [it["goal"].split("'")[1] for it in (src[i] for i in range(80)) if it["app"] != "Settings"]
        # less the words of the date and time formats (month abbreviations, am / pm)
        words = {w.lower() for lab in labels for w in re.findall(r"[A-Za-z]+", lab)} - FORMAT_WORDS
        assert len(labels) > 40 and len(words) > 40
        # pool words, or made-up words of the tokenizer's pieces that hash into the pool
        assert all(w in own or pool_of(w) == pool for w in words), sorted(words - own)[:5]
        assert not words & phonesim_words()


def test_intent_goals_mix_in_requests_and_keep_the_topic_stream_unchanged():
    """launch_goals="intents": about half the goals come from the app's INTENT_FRAMES (label filled in), the rest
    from the topic frames; "topics" (the default) leaves the stream exactly as it was; a goal equal to a PhoneSim
    task's is one of the few fixed ones (phonesim_fixed_goals, which only style "pages" avoids); an unknown style
    is an error naming it."""
    from gui_jax.tasks.registry import list_templates
    from gui_jax.train.pretrain_launch import INTENT_FRAMES
    assert set(INTENT_FRAMES) == set(APPS)
    src = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2, launch_goals="intents")
    items = [src[i] for i in range(300)]
    import re
    patterns = {app: [re.compile(re.escape(f).replace(re.escape("{L}"), ".+") + "$") for f in frames]
                for app, frames in INTENT_FRAMES.items()}
    from_intents = [any(p.match(it["goal"]) for p in patterns[it["app"]]) for it in items]
    assert 0.3 < np.mean(from_intents) < 0.7
    assert {it["app"] for it in items} == set(APPS)
    phonesim_goals = {make_task(t, s).goal for t in list_templates() for s in range(20)}
    from gui_jax.train.pretrain_launch import phonesim_fixed_goals
    assert phonesim_goals & {it["goal"] for it in items} <= phonesim_fixed_goals()
    topics = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2)
    assert [topics[i]["goal"] for i in range(20)] == [x["goal"] for x in _launch_items(20, goals=2)]
    assert [x["goal"] for x in items[:20]] != [topics[i]["goal"] for i in range(20)]
    with pytest.raises(ValueError, match="launch_goals must be one of .* got 'chatty'"):
        PretrainSource(CFG, {"launch": 1.0}, launch_goals="chatty")
    with pytest.raises(ValueError, match="launch goals 'chatty'"):
        launch_goal(np.random.default_rng(0), "x", style="chatty")


def test_page_goals_open_their_app_on_the_home_screen_as_phonesims_oracle_does():
    """launch_goals="pages": for Messages, Music, Clock and Tasks about half the goals are the goals their
    pretraining pages pose (generator labels; alarm times at minutes PhoneSim never sets), answered by opening the
    app, the app PhoneSim's oracle opens for its tasks of the same phrasing; the other apps draw as with "intents"
    (the same goals, up to a redrawn PhoneSim goal); no goal equals a PhoneSim task's."""
    import re
    from gui_jax.tasks.registry import list_templates
    from gui_jax.train.pretrain_apps import PAGE_GOALS
    patterns = {app: [re.compile(re.escape(g).replace(re.escape("{L}"), "(.+)") + "$") for g in goals]
                for app, goals in PAGE_GOALS.items()}
    matched = set()
    for template in list_templates():
        task = make_task(template, 0)
        for app, ps in patterns.items():
            if any(p.match(task.goal) for p in ps):
                assert expert_actions(task)[0].action == launch_action(app), template
                matched.add(app)
    assert matched == set(PAGE_GOALS)   # every page's phrasing is one of PhoneSim's tasks'
    src = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2, launch_goals="pages")
    items = [src[i] for i in range(600)]
    pool_labels, n_hits, n_items = [], 0, 0
    for app in PAGE_GOALS:
        mine = [it for it in items if it["app"] == app]
        hits = [m.group(1) for it in mine for p in patterns[app] for m in [p.match(it["goal"])] if m]
        assert 0.15 < len(hits) / len(mine) < 0.85, app
        n_hits, n_items = n_hits + len(hits), n_items + len(mine)
        if app == "Clock":
            assert all(re.fullmatch(r"\d\d:\d\d", h) and int(h[3:]) % 15 for h in hits)
        else:
            pool_labels += hits
    assert 0.4 < n_hits / n_items < 0.6
    from gui_jax.train.pretrain_labels import phonesim_words, pool_of
    own = label_pool("train").words()
    words = {w.lower() for lab in pool_labels for w in re.findall(r"[A-Za-z]+", lab)} - FORMAT_WORDS
    assert len(words) > 40 and all(w in own or pool_of(w) == "train" for w in words)
    assert not words & phonesim_words()
    # labelled goals hold generator labels (checked above); of the fixed goals, PhoneSim's are never posed
    from gui_jax.train.pretrain_launch import fixed_goals, phonesim_fixed_goals
    phonesim_goals = {make_task(t, s).goal for t in list_templates() for s in range(150)}
    assert phonesim_goals & fixed_goals() == phonesim_fixed_goals() and "Turn off Wi-Fi." in phonesim_fixed_goals()
    posed = {it["goal"] for it in items} | {t["goal"] for it in items for t in it["turns"]}
    assert not posed & phonesim_goals and len(posed & fixed_goals()) > 20
    intents = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2, launch_goals="intents")
    others = [i for i, it in enumerate(items[:60]) if it["app"] not in PAGE_GOALS and
              all(t["app"] not in PAGE_GOALS for t in it["turns"])]
    assert others and all(items[i]["goal"] == intents[i]["goal"] for i in others)


def test_answer_goals_open_their_app_on_the_home_screen_and_leave_pages_streams_unchanged():
    """launch_goals="answers": the pages' answer questions (ANSWER_GOALS, PART_GOALS) are among the goals that open
    their app, Expenses included, each the app PhoneSim's oracle opens for its task of that phrasing; "pages"
    draws exactly as before (launch_page_goals(False) is PAGE_GOALS)."""
    import re
    from gui_jax.tasks.registry import list_templates
    from gui_jax.train.pretrain_apps import ANSWER_GOALS, PAGE_GOALS, PART_GOALS, launch_page_goals
    assert launch_page_goals(False) is PAGE_GOALS
    goals = launch_page_goals(True)
    assert set(goals) == set(PAGE_GOALS) | {"Expenses"}
    assert goals["Messages"] == PAGE_GOALS["Messages"] + ANSWER_GOALS["messages"]
    assert goals["Music"] == PAGE_GOALS["Music"] + PART_GOALS["songs"]
    assert goals["Tasks"] == PAGE_GOALS["Tasks"] + PART_GOALS["tasks"]
    assert goals["Expenses"] == ANSWER_GOALS["expenses"]
    questions = {g: app for app, gs in goals.items() for g in gs if g not in PAGE_GOALS.get(app, ())}
    patterns = {re.compile(re.escape(g).replace(re.escape("{L}"), "(.+)") + "$"): app for g, app in questions.items()}
    matched = set()
    for template in list_templates():
        task = make_task(template, 0)
        for p, app in patterns.items():
            if p.match(task.goal):
                assert expert_actions(task)[0].action == launch_action(app), template
                matched.add(p.pattern)
    assert len(matched) == len(questions) == 4   # each question is one of PhoneSim's answer tasks'
    src = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2, launch_goals="answers")
    items = [src[i] for i in range(600)]
    posed = [(it["goal"], it["app"]) for it in items] + [(t["goal"], t["app"]) for it in items for t in it["turns"]]
    for p, app in patterns.items():
        hits = [a for g, a in posed if p.match(g)]
        assert len(hits) >= 5 and set(hits) == {app}, p.pattern
    pages = PretrainSource(CFG, {"launch": 1.0}, seed=0, goals_per_screen=2, launch_goals="pages")
    assert [pages[i]["goal"] for i in range(5)] == [   # the stream as before "answers" existed
        "Edit the duration of the recording 'Extra'.", "Play the song 'Eva Achebe'.",
        "How much storage is used on this phone?", "How long does '$7.19' take to cook?",
        "Go to the priority of the task 'Brilliant Passage'."]
    assert [src[i]["goal"] for i in range(60)] != [pages[i]["goal"] for i in range(60)]
