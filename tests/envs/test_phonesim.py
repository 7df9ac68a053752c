"""PhoneSim device behaviour: navigation, input, scrolling, invalid actions, observations, faults."""
import pickle
from collections import Counter

import numpy as np
import pytest
from lxml import etree

from gui_jax.core.types import Action, Observation
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.envs.sim.faults import EnvCrashError, EnvHangError, FaultModel, FaultyEnv, LatencyModel, fault_at
from gui_jax.envs.sim.gallery import app_screens
from gui_jax.envs.sim.oracle import find


def click_node(sim, node):
    x1, y1, x2, y2 = node.bounds
    return sim.step(Action("click", x=(x1 + x2) / 2, y=(y1 + y2) / 2))


def fresh(template="settings.wifi_on", seed=0, **kw):
    sim = PhoneSim(render=False, **kw)
    sim.reset(make_task(template, seed))
    return sim


def test_open_fuzzy_home_and_back_stack():
    sim = fresh()
    assert sim.observe().current_app == "launcher"
    for name in ("Contacts", "contacts", "Address book", "contcts"):
        _, _, info = sim.step(Action("open", text=name))
        assert info["valid"] and sim.dev.top.app == "contacts", name
    _, _, info = sim.step(Action("open", text="Spaceship Control"))
    assert not info["valid"] and sim.dev.top.app == "contacts"
    c = sim.dev.apps["contacts"].items[0]
    click_node(sim, find(sim.dev, "contact", c.name))
    assert [r.page for r in sim.dev.stack] == ["home", "main", "detail"]
    sim.step(Action("system_button", button="Back"))
    assert sim.dev.top.page == "main"
    sim.step(Action("system_button", button="Home"))
    assert sim.observe().current_app == "launcher" and len(sim.dev.stack) == 1
    _, _, info = sim.step(Action("system_button", button="Back"))  # Back on home: nothing to pop
    assert sim.observe().current_app == "launcher"


def test_launcher_icon_click_opens_app():
    sim = fresh()
    node = find(sim.dev, None, None, desc="Music")
    click_node(sim, node)
    assert sim.dev.top.app == "music"


def test_typing_needs_focus_and_keyboard_back():
    sim = fresh("notes.create", 1, max_steps=100)
    sim.step(Action("open", text="Notes"))
    _, _, info = sim.step(Action("type", text="hello"))
    assert not info["valid"]  # no focused field
    click_node(sim, find(sim.dev, None, None, desc="New note"))
    click_node(sim, find(sim.dev, "title"))
    obs = sim.observe()
    focused = [e for e in obs.ui_elements if e.focused]
    assert len(focused) == 1 and focused[0].resource_id.endswith(":id/title")
    sim.step(Action("type", text="Shop"))
    sim.step(Action("type", text="ping"))
    assert sim.dev.top.form["title"] == "Shopping"
    sim.step(Action("key", text="Backspace"))
    assert sim.dev.top.form["title"] == "Shoppin"
    sim.step(Action("system_button", button="Back"))  # hides the keyboard, stays on the page
    assert sim.dev.focus is None and sim.dev.top.page == "edit"
    sim.step(Action("system_button", button="Back"))
    assert sim.dev.top.page == "main"


def test_invalid_actions_leave_state_unchanged():
    sim = fresh("contacts.delete", 2)
    sim.step(Action("open", text="Contacts"))
    before = sim.observe().ui_xml
    bad = [
        Action("click", x=5000, y=10),
        Action("click", x=540, y=40),  # off screen, status bar
        Action("long_press", x=540, y=160),
        Action("scroll", direction="left"),
        Action("type", text="x"),
        Action("key", text="Enter"),
        Action("system_button", button="Menu"),
        Action("click", element=9999),
        Action("open", text="zzzz"),
    ]
    for a in bad:
        _, done, info = sim.step(a)
        assert not info["valid"] and info["reason"], a
        assert sim.observe().ui_xml == before, a


def test_scroll_content_direction_and_swipe():
    sim = fresh("contacts.phone_answer", 4)
    sim.step(Action("open", text="Contacts"))
    first = [e.text for e in sim.observe().ui_elements if e.resource_id.endswith("item_title")]
    _, _, info = sim.step(Action("scroll", direction="up"))
    assert not info["valid"]  # already at the top
    _, _, info = sim.step(Action("scroll", direction="down"))
    assert info["valid"]
    after = [e.text for e in sim.observe().ui_elements if e.resource_id.endswith("item_title")]
    names = [c.name for c in sim.dev.apps["contacts"].items]
    assert names.index(after[-1]) > names.index(first[-1])  # later items revealed
    sim.step(Action("scroll", direction="up"))
    assert sim.dev.top.scroll == 0
    # finger swipes up by 500 px = content scrolls down by 500 px
    sim.step(Action("swipe", x=540, y=1800, x2=540, y2=1300))
    assert sim.dev.top.scroll == 500
    scrollable = [e for e in sim.observe().ui_elements if e.scrollable]
    assert len(scrollable) == 1


def test_element_index_click_equals_coordinate_click():
    a, b = fresh(), fresh()
    for s in (a, b):
        s.step(Action("open", text="Settings"))
    obs = a.observe()
    idx = next(e.index for e in obs.ui_elements if e.resource_id.endswith(":id/bluetooth_switch"))
    a.step(Action("click", element=idx))
    x1, y1, x2, y2 = obs.ui_elements[idx].bounds
    b.step(Action("click", x=(x1 + x2) / 2, y=(y1 + y2) / 2))
    assert a.dev.settings.bluetooth == b.dev.settings.bluetooth != fresh().dev.settings.bluetooth
    assert a.observe().ui_xml == b.observe().ui_xml
    # an element that is a label inside a clickable row taps the row (tap at the label's centre)
    label = next(e.index for e in a.observe().ui_elements if e.text == "About phone")
    a.step(Action("click", element=label))
    assert a.dev.top.page == "about"


def test_label_click_equals_element_click_and_unknown_label_is_invalid():
    a, b = fresh(), fresh()
    for s in (a, b):
        s.step(Action("open", text="Settings"))
    about = next(e.index for e in a.observe().ui_elements if e.text == "About phone")
    before = a.observe().ui_xml
    _, _, info = a.step(Action("click", text="Spaceship"))
    assert not info["valid"] and "no element labelled 'Spaceship'" in info["reason"]
    assert a.observe().ui_xml == before
    _, _, info = a.step(Action("click", text=" about PHONE"))
    b.step(Action("click", element=about))
    assert info["valid"] and a.dev.top.page == b.dev.top.page == "about"
    assert a.observe().ui_xml == b.observe().ui_xml


def test_every_clickable_widget_hit_tests_to_itself():
    sim = fresh("contacts.edit_phone", 5)
    for app in ("Settings", "Contacts", "Expenses", "Tasks", "Music"):
        sim.step(Action("open", text=app))
        obs = sim.observe()
        root = etree.fromstring(obs.ui_xml.encode())
        nodes = list(root.iter("node"))
        assert len(nodes) == len(obs.ui_elements)
        for n, e in zip(nodes, obs.ui_elements):
            assert n.get("bounds") == "[{},{}][{},{}]".format(*e.bounds)
            assert (n.get("clickable") == "true") == e.clickable
        scr = sim.dev.screen()
        for node in scr.flat:
            if node.clickable:
                x1, y1, x2, y2 = node.bounds
                assert 0 <= x1 < x2 <= 1080 and 0 <= y1 < y2 <= 2400
                assert sim.dev.hit((x1 + x2) / 2, (y1 + y2) / 2) is node


def test_dialog_is_modal_and_confirms():
    sim = fresh("notes.delete", 3)
    note = sim.dev.apps["notes"].items[0]
    sim.step(Action("open", text="Notes"))
    click_node(sim, find(sim.dev, "note", note.title))
    click_node(sim, find(sim.dev, "delete"))
    obs = sim.observe()
    assert {e.text for e in obs.ui_elements if e.clickable} == {"Cancel", "Delete"}
    sim.step(Action("system_button", button="Back"))  # Back closes the dialog only
    assert sim.dev.top.dialog is None and sim.dev.top.page == "edit"
    click_node(sim, find(sim.dev, "delete"))
    click_node(sim, find(sim.dev, None, "Delete"))
    assert note not in sim.dev.apps["notes"].items and sim.dev.top.page == "main"


def test_toast_and_clipboard():
    sim = fresh("settings.model_answer", 1, max_steps=100)
    sim.step(Action("open", text="Settings"))
    click_node(sim, find(sim.dev, "about"))
    model = find(sim.dev, "model", need_click=False)
    x1, y1, x2, y2 = model.bounds
    sim.step(Action("long_press", x=(x1 + x2) / 2, y=(y1 + y2) / 2))
    assert sim.dev.clipboard == sim.dev.settings.model
    assert sim.dev.screen().toast == "Copied to clipboard"
    sim.step(Action("wait", time=1.0))
    sim.step(Action("wait", time=1.0))
    assert sim.dev.screen().toast == ""
    sim.step(Action("open", text="Notes"))
    click_node(sim, find(sim.dev, None, None, desc="New note"))
    body = find(sim.dev, "body")
    x1, y1, x2, y2 = body.bounds
    sim.step(Action("long_press", x=(x1 + x2) / 2, y=(y1 + y2) / 2))  # paste
    assert sim.dev.top.form["body"] == sim.dev.settings.model


def test_answer_then_terminate_semantics_and_max_steps():
    task = make_task("clock.alarm_count", 0)
    sim = PhoneSim(render=False, max_steps=4)
    sim.reset(task)
    expected = str(sum(a.enabled for a in sim.dev.apps["clock"].alarms))
    _, done, info = sim.step(Action("answer", text=expected))
    assert not done and info["valid"]
    _, done, info = sim.step(Action("terminate", status="success"))
    assert done and info["success"] and info["answer"] == expected
    with pytest.raises(RuntimeError):
        sim.step(Action("wait", time=1))
    sim.reset(task)
    sim.step(Action("answer", text=expected))
    _, done, info = sim.step(Action("terminate", status="failure"))
    assert done and not info["success"]
    sim.reset(task)
    for i in range(4):
        _, done, info = sim.step(Action("wait", time=1))
    assert done and not info["success"] and info["truncated"]


def test_observation_lazy_render_and_pickle():
    sim = PhoneSim(render=True, resolution=(108, 240))
    obs = sim.reset(make_task("music.play", 0))
    assert obs.screenshot.shape == (240, 108, 3) and obs.screenshot.dtype == np.uint8
    assert obs.screenshot.std() > 5  # not blank
    back = pickle.loads(pickle.dumps(obs))
    assert type(back) is Observation and back == obs
    sim.step(Action("open", text="Music"))
    assert not np.array_equal(sim.observe().screenshot, obs.screenshot)  # old obs is a frozen snapshot
    nr = PhoneSim(render=False)
    nr.reset(make_task("music.play", 0))
    assert nr.observe().screenshot.shape == (1, 1, 3)
    assert nr.screenshot((108, 240)).shape == (240, 108, 3)


def test_settings_toggles_and_status_bar():
    sim = PhoneSim(render=True, resolution=(216, 480))
    sim.reset(make_task("settings.wifi_on", 0))
    sim.step(Action("open", text="Settings"))
    off = sim.observe().screenshot
    click_node(sim, find(sim.dev, "wifi_switch"))
    assert sim.dev.settings.wifi
    on = sim.observe().screenshot
    assert not np.array_equal(off[:20], on[:20])  # Wi-Fi icon appears in the status bar
    click_node(sim, find(sim.dev, "airplane_switch"))
    assert sim.dev.settings.airplane and not sim.dev.settings.wifi


def _fault_events(env, tasks, episodes):
    """Runs `episodes` episodes round-robin over tasks with waits; returns [(task, kind, step)] of faults."""
    events = []
    for e in range(episodes):
        task = tasks[e % len(tasks)]
        env.reset(task)
        for t in range(env.max_steps):
            try:
                _, done, _ = env.step(Action("wait", time=0.1))
            except EnvCrashError:
                events.append((task.task_id, "crash", t))
                break
            except EnvHangError:
                events.append((task.task_id, "hang", t))
                with pytest.raises(EnvCrashError):
                    env.step(Action("wait", time=0.1))
                break
            if done:
                break
    return events


def test_faulty_env_latency_crash_hang():
    base = PhoneSim(render=False)
    faults = FaultModel(crash_prob=0.05, hang_prob=0.05, hang_s=300)
    env = FaultyEnv(base, LatencyModel(median_s=0.1, sigma=0.5, tail_prob=0.2, tail_scale_s=2.0), faults,
                    seed=1, sleep=False)
    tasks = [make_task("settings.wifi_on", 0), make_task("settings.wifi_on", 1)]
    events = _fault_events(env, tasks, 40)
    kinds = Counter(k for _, k, _ in events)
    assert kinds["crash"] > 3 and kinds["hang"] > 3
    assert env.virtual_time_s >= kinds["hang"] * 300
    # the schedule is a pure function of (seed, task, attempt, step): replayed from fault_at
    want, attempt = [], Counter()
    for e in range(40):
        task = tasks[e % 2].task_id
        a = attempt[task]
        attempt[task] += 1
        hit = next(((task, k, t) for t in range(base.max_steps) if (k := fault_at(faults, 1, task, a, t))), None)
        want += [hit] if hit else []
    assert events == want
    # another env with another latency stream but the same seed and attempts: the same faults
    other = FaultyEnv(PhoneSim(render=False), LatencyModel(median_s=0.5), faults, seed=1, sleep=False)
    assert _fault_events(other, tasks, 40) == events
    delays = [LatencyModel(median_s=0.1, sigma=0.5, tail_prob=0.05).sample(env.rng) for _ in range(4000)]
    assert 0.08 < float(np.median(delays)) < 0.13 and max(delays) > 1.0  # heavy tail
    assert env.max_steps == base.max_steps  # attribute passthrough


def test_gallery_renders_every_app():
    shots = app_screens(seed=0, width=108)
    assert len(shots) == 13 and all(img.shape == (240, 108, 3) for _, img in shots)
    assert len({img.tobytes() for _, img in shots}) == 13


def test_benchmark_smoke(tmp_path):
    import json

    from benchmarks.phonesim import main

    out = tmp_path / "bench.json"
    main(["--seconds", "0.05", "--resolution", "108x240", "--json", str(out), "--no-miniwob"])
    res = json.loads(out.read_text())["results"]
    assert set(res) == {"no_render", "no_render_with_xml", "render", "render_with_xml"}
    assert all(r["steps"] > 0 and r["steps_per_s"] > 0 for r in res.values())
