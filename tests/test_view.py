"""The trajectory viewer (`python -m gui_jax.view`): one self-contained HTML page, read back from headless
Chromium — the screenshots load, each tap is drawn where the action landed, swipes are arrows, and the
outcome and template filters hide the other episodes.

The run folder holds what jobs write: an expert episode store (episodes/…/episode.json) and agent
trajectories (trajectories/…/trajectory.json: a success with RM scores, a failure with a swipe and an
unparsable response, and a failure stored without pixels, drawn as a wireframe with an element-only tap).
"""
import dataclasses
import re
import shutil
import tempfile

import numpy as np
import pytest

from gui_jax.core.serialize import save_episode, save_trajectory
from gui_jax.core.types import Action, Step, Trajectory
from gui_jax.envs.miniwob import CHROME_FLAGS, find_chromium
from gui_jax.envs.sim import PhoneSim, make_task
from gui_jax.tasks.generate import generate_episode
from gui_jax.view import ViewError, load_view, main

RES = (112, 252)   # screenshot (width, height); PhoneSim's screen is 1080 x 2400
SCREEN_W, SCREEN_H = 1080, 2400


def trajectory_from(episode, *, success, actions=None, responses=None, rewards=None, rm=None, placeholder=False):
    actions = list(episode.actions) if actions is None else actions
    steps = []
    for t, a in enumerate(actions):
        obs = episode.observations[t]
        if placeholder:
            obs = dataclasses.replace(obs, screenshot=np.zeros((1, 1, 3), np.uint8))
        steps.append(Step(observation=obs, action=a, response=responses[t] if responses else f"step {t}",
                          reward=rewards[t] if rewards else 0.0, info={} if rm is None else {"rm_score": rm[t]}))
    return Trajectory(task_id=episode.episode_id, goal=episode.goal, steps=steps, success=success,
                      info={"template": episode.template})


@pytest.fixture(scope="module")
def run_dir():
    root = tempfile.mkdtemp(prefix="gui_jax_view_")
    sim = PhoneSim(render=True, resolution=RES, max_steps=10)
    expert = generate_episode(make_task("music.play", 1), sim)
    save_episode(expert, f"{root}/run/episodes/instance_train/000000")
    good = generate_episode(make_task("music.play", 2), sim)       # open, click, terminate
    save_trajectory(trajectory_from(good, success=True, rewards=[0.0, 0.0, 1.0], rm=[0.4, 0.7, 0.9],
                                    responses=["open Music", "tap the song", "done"]),
                    f"{root}/run/trajectories/000000")
    bad = generate_episode(make_task("tasks.complete", 1), sim)
    swipe = Action("swipe", x=540.0, y=1800.0, x2=540.0, y2=600.0)
    save_trajectory(trajectory_from(bad, success=False, actions=[bad.actions[0], swipe, None],
                                    responses=["open", "swipe up", "I am not sure"]),
                    f"{root}/run/trajectories/000001")
    element = next(e for e in good.observations[1].ui_elements if e.clickable and e.text)
    save_trajectory(trajectory_from(good, success=False, placeholder=True,
                                    actions=[good.actions[0], Action("click", element=element.index)]),
                    f"{root}/run/trajectories/000002")
    yield root, expert, good, element
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def page(run_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    root = run_dir[0]
    assert main([f"{root}/run", "--out", f"{root}/report.html"]) == 0
    chrome, driver_path = find_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = chrome
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={root}/profile")
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        driver.get(f"file://{root}/report.html")
        yield driver
    finally:
        driver.quit()


def sections(driver):
    return driver.find_elements("css selector", "section.episode")


def test_the_page_is_self_contained(run_dir, page):
    text = open(f"{run_dir[0]}/report.html", encoding="utf-8").read()
    assert not re.search(r"""(src|href)=["'](https?:)?//""", text)  # no CDN, no remote resource
    srcs = page.execute_script("return Array.from(document.images).map(i => i.src.slice(0, 22))")
    assert srcs and set(srcs) == {"data:image/png;base64,"}


def test_every_screenshot_loads(page):
    sizes = page.execute_script("return Array.from(document.images).map(i => [i.complete, i.naturalWidth, "
                                "i.naturalHeight])")
    assert len(sizes) == 4 + 3 + 3 + 2  # expert (3 actions + final screen), then 3, 3 and 2 steps
    assert all(ok and w > 0 and h > 0 for ok, w, h in sizes)
    assert [w for _, w, _ in sizes[:4]] == [RES[0]] * 4  # stored screenshots at their own width
    assert sizes[-1][1:] == [270, 600]                   # the wireframe of a screen stored without pixels


def test_episodes_show_goal_outcome_and_steps(run_dir, page):
    _, expert, good, _ = run_dir
    heads = [s.find_element("css selector", "h2").text for s in sections(page)]
    assert heads[0] == f"success {expert.goal}"
    assert heads[1] == f"success {good.goal}" and heads[2].startswith("failure ") and heads[3].startswith("failure ")
    good_sec = sections(page)[1]
    dds = [d.text for d in good_sec.find_elements("css selector", "dd")]
    # action (PhoneSim's expert steps carry their description), response, reward, RM
    assert dds[:4] == ["open(text='Music', action_desc='open Music')", "open Music", "0.000", "0.400"]
    assert dds[-4:] == ["terminate(status='success', action_desc='declare the task done')", "done", "1.000", "0.900"]
    assert sections(page)[2].find_elements("css selector", ".note")[-1].text == "unparsable response"


def test_taps_are_drawn_where_the_action_landed(run_dir, page):
    _, expert, good, element = run_dir
    taps = sections(page)[1].find_elements("css selector", "circle.tap")
    assert len(taps) == 1  # one click among open, click, terminate
    click = good.actions[1]
    assert float(taps[0].get_attribute("cx")) == pytest.approx(click.x * RES[0] / SCREEN_W, abs=0.05)
    assert float(taps[0].get_attribute("cy")) == pytest.approx(click.y * RES[1] / SCREEN_H, abs=0.05)
    # and on screen: the ring's centre sits at the same fraction of the rendered screenshot
    img_box, ring_box = page.execute_script(
        "var c = arguments[0], img = c.closest('.shot').querySelector('img');"
        "var a = img.getBoundingClientRect(), b = c.getBoundingClientRect();"
        "return [[a.left, a.top, a.width, a.height], [b.left + b.width / 2, b.top + b.height / 2]];", taps[0])
    assert (ring_box[0] - img_box[0]) / img_box[2] == pytest.approx(click.x / SCREEN_W, abs=0.02)
    assert (ring_box[1] - img_box[1]) / img_box[3] == pytest.approx(click.y / SCREEN_H, abs=0.02)
    wire_tap = sections(page)[3].find_elements("css selector", "circle.tap")  # element-only click, wireframe
    cx, cy = element.center
    assert [float(wire_tap[0].get_attribute(k)) for k in ("cx", "cy")] == pytest.approx(
        [cx * 270 / SCREEN_W, cy * 600 / SCREEN_H], abs=0.05)


def test_a_swipe_is_an_arrow_from_start_to_end(page):
    arrows = sections(page)[2].find_elements("css selector", "line.arrow")
    assert len(arrows) == 1
    got = [float(arrows[0].get_attribute(k)) for k in ("x1", "y1", "x2", "y2")]
    assert got == pytest.approx([540 * RES[0] / SCREEN_W, 1800 * RES[1] / SCREEN_H,
                                 540 * RES[0] / SCREEN_W, 600 * RES[1] / SCREEN_H], abs=0.05)


def test_the_outcome_filter_hides_failed_episodes(page):
    def shown():
        return [s.get_attribute("data-outcome") for s in sections(page) if s.is_displayed()]
    assert shown() == ["success", "success", "failure", "failure"]
    page.find_element("css selector", '#outcome-filter button[data-outcome="success"]').click()
    assert shown() == ["success", "success"]
    assert page.find_element("id", "shown").text == "2 of 4 episodes shown"
    page.find_element("css selector", '#outcome-filter button[data-outcome="failure"]').click()
    assert shown() == ["failure", "failure"]
    page.find_element("css selector", '#outcome-filter button[data-outcome="all"]').click()
    assert len(shown()) == 4


def test_the_template_filter_keeps_one_template(page):
    from selenium.webdriver.support.ui import Select
    Select(page.find_element("id", "template-filter")).select_by_value("tasks.complete")
    assert [s.get_attribute("data-template") for s in sections(page) if s.is_displayed()] == ["tasks.complete"]
    Select(page.find_element("id", "template-filter")).select_by_value("")
    assert sum(s.is_displayed() for s in sections(page)) == 4


def test_a_path_without_episodes_is_named_with_what_was_expected(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ViewError, match=r"empty: no episodes in it or below it \(expected episode folders"):
        load_view(tmp_path / "empty")
    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "r.html")]) == 2
    assert "missing: no such file or directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_limit_keeps_the_first_episodes_and_says_how_many_there_are(run_dir):
    episodes, total = load_view(f"{run_dir[0]}/run", limit=2)
    assert total == 4 and [e.kind for e in episodes] == ["episode", "trajectory"]
    assert episodes[0].source == "episodes/instance_train/000000"
