"""Episode/trajectory storage round-trips bitwise, and corrupt records fail loudly."""
import json

import numpy as np
import pytest

from gui_jax.core.serialize import (EpisodeFormatError, PngObservation, load_episode, load_episodes,
                                    load_trajectory, save_episode, save_episodes, save_trajectory)
from gui_jax.core.types import Action, Episode, Observation, Step, Trajectory, UIElement


def _obs(rng, h=37, w=23, goal="Turn on Wi-Fi"):
    img = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    els = [UIElement(index=0, cls="android.widget.Button", bounds=(1, 2, 30, 40), text="Wi-Fi ✓",
                     clickable=True, checkable=True, checked=True),
           UIElement(index=1, cls="android.widget.EditText", bounds=(0, 50, 1080, 120), focused=True,
                     content_desc="名前", password=True)]
    return Observation(screenshot=img, ui_elements=els, ui_xml="<hierarchy><node text='é'/></hierarchy>",
                       current_app="Settings", goal=goal, screen_size=(1080, 2400))


def _episode(rng, n=3):
    acts = [Action("click", x=10.5, y=20, element=0, action_desc="tap wifi"),
            Action("type", text='he said "hi"\nbye'), Action("terminate", status="success")][:n]
    return Episode(episode_id="ep-1", goal="Turn on Wi-Fi", observations=[_obs(rng) for _ in range(n + 1)],
                   actions=acts, target_bboxes=[(1.0, 2.0, 30.0, 40.0), None, None][:n],
                   step_instructions=["Tap Wi-Fi", "Type text", "Finish"][:n], app="Settings",
                   template="wifi_on", difficulty="easy", info={"seed": 3, "optimal_steps": 2})


def test_episode_round_trip_bitwise(tmp_path):
    rng = np.random.default_rng(0)
    ep = _episode(rng)
    save_episode(ep, tmp_path / "e")
    back = load_episode(tmp_path / "e")
    assert back == ep
    for a, b in zip(ep.observations, back.observations):
        assert a.screenshot.dtype == b.screenshot.dtype == np.uint8
        assert a.screenshot.tobytes() == b.screenshot.tobytes()
    # Saving the loaded episode again gives byte-identical files.
    save_episode(back, tmp_path / "f")
    for p in sorted((tmp_path / "e").iterdir()):
        assert p.read_bytes() == (tmp_path / "f" / p.name).read_bytes(), p.name


def test_lazy_pixels_load_the_same_episode_and_pickle_to_plain_observations(tmp_path):
    """pixels='lazy' keeps screenshots in their PNGs: equal episode, bitwise pixels on access, read-only
    shared arrays, a plain Observation after pickling; a missing PNG is named at load time."""
    import pickle
    ep = _episode(np.random.default_rng(4))
    save_episode(ep, tmp_path / "e")
    lazy = load_episode(tmp_path / "e", pixels="lazy")
    assert all(type(o) is PngObservation for o in lazy.observations)
    assert "screenshot" not in vars(lazy.observations[0])  # nothing decoded while loading
    assert lazy == ep
    shot = lazy.observations[1].screenshot
    assert shot.tobytes() == ep.observations[1].screenshot.tobytes() and not shot.flags.writeable
    back = pickle.loads(pickle.dumps(lazy.observations[2]))
    assert type(back) is Observation and back == ep.observations[2] and back.screenshot.flags.writeable
    with pytest.raises(ValueError, match="pixels must be one of"):
        load_episode(tmp_path / "e", pixels="none")
    (tmp_path / "e" / "obs_0001.png").unlink()
    with pytest.raises(EpisodeFormatError, match="observation 1: screenshot .*obs_0001.png is missing"):
        load_episode(tmp_path / "e", pixels="lazy")


def test_many_episodes_and_trajectory(tmp_path):
    rng = np.random.default_rng(1)
    eps = [_episode(rng, n) for n in (1, 2, 3)]
    save_episodes(eps, tmp_path)
    assert load_episodes(tmp_path) == eps
    tr = Trajectory(task_id="t1", goal="g", success=True, info={"k": [1, 2]},
                    steps=[Step(_obs(rng), Action("scroll", direction="down"), response="<r>", thought="th",
                                reward=0.5, info={"valid": True}),
                           Step(_obs(rng), None, response="garbage", reward=0.0)])
    save_trajectory(tr, tmp_path / "tr")
    assert load_trajectory(tmp_path / "tr") == tr


def test_corrupt_records_name_the_problem(tmp_path):
    rng = np.random.default_rng(2)
    save_episode(_episode(rng), tmp_path / "e")
    path = tmp_path / "e" / "episode.json"
    rec = json.loads(path.read_text())
    rec["actions"][1] = {"type": "teleport"}
    path.write_text(json.dumps(rec))
    with pytest.raises(EpisodeFormatError, match=r"action 1.*teleport"):
        load_episode(tmp_path / "e")
    rec["actions"][1] = {"type": "type"}
    path.write_text(json.dumps(rec))
    with pytest.raises(EpisodeFormatError, match=r"action 1.*needs field 'text'"):
        load_episode(tmp_path / "e")
    path.write_text("{not json")
    with pytest.raises(EpisodeFormatError, match="invalid JSON"):
        load_episode(tmp_path / "e")


def test_episode_length_validation():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="observations"):
        Episode(episode_id="x", goal="g", observations=[_obs(rng)] * 5, actions=[Action("wait", time=1)])
    with pytest.raises(ValueError, match="uint8"):
        Observation(screenshot=np.zeros((4, 4, 3), np.float32))


def test_ui_element_to_dict_equals_dataclasses_asdict_and_round_trips():
    """The shallow to_dict (writing episodes) holds exactly asdict's fields and values, bounds as a list."""
    import dataclasses
    for e in _obs(np.random.default_rng(0)).ui_elements:
        d = e.to_dict()
        assert d == {**dataclasses.asdict(e), "bounds": list(e.bounds)} and list(d) == list(dataclasses.asdict(e))
        assert UIElement.from_dict(json.loads(json.dumps(d))) == e
