"""Lossless on-disk format for episodes and trajectories: one folder each, JSON + PNG.

Layout of an episode folder:
  episode.json      everything but pixels (actions, bboxes, instructions, UI trees, metadata)
  obs_0000.png ...  one lossless RGB PNG per observation (bitwise round trip)
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Iterable, Iterator, Optional

import numpy as np
from PIL import Image

from gui_jax.core.types import Action, ActionError, Episode, Observation, Step, Trajectory, UIElement

FORMAT_VERSION = 1


class EpisodeFormatError(ValueError):
    """A stored episode/trajectory is corrupt; the message names the file and field."""


def _write_png(path: Path, image: np.ndarray) -> None:
    Image.fromarray(image, mode="RGB").save(path, format="PNG", compress_level=1)


def _read_png(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        if im.mode != "RGB":
            raise EpisodeFormatError(f"{path}: expected an RGB PNG, got mode {im.mode}")
        return np.asarray(im, dtype=np.uint8).copy()


def _obs_to_json(obs: Observation, png_name: str) -> dict:
    return {
        "screenshot": png_name,
        "ui_elements": [e.to_dict() for e in obs.ui_elements],
        "ui_xml": obs.ui_xml,
        "current_app": obs.current_app,
        "goal": obs.goal,
        "screen_size": list(obs.screen_size),
    }


@functools.lru_cache(maxsize=16)
def _cached_png(path: str) -> np.ndarray:
    image = _read_png(Path(path))
    image.flags.writeable = False  # shared by every holder of the cache entry
    return image


class PngObservation(Observation):
    """An `Observation` whose UI tree is in memory and whose screenshot stays in its PNG, decoded on access
    through a process-wide LRU of 16 images (read-only arrays). Text-only prompts never touch the pixels, so a
    job that holds thousands of stored episodes pays for their UI trees only (1,426 PhoneSim episodes at
    112 x 252: ~130 MB instead of ~670 MB). Pickling materialises a plain Observation."""

    def __init__(self, png: Path, *, ui_elements, ui_xml: str, current_app: str, goal: str, screen_size):
        self.png = str(png)  # no dataclass __init__: nothing decoded
        self.ui_elements, self.ui_xml, self.current_app = ui_elements, ui_xml, current_app
        self.goal, self.screen_size = goal, screen_size

    screenshot = property(lambda self: _cached_png(self.png))

    def __reduce__(self):
        return (Observation, (np.array(self.screenshot), self.ui_elements, self.ui_xml, self.current_app,
                              self.goal, self.screen_size))

    def __repr__(self) -> str:
        return f"PngObservation({self.png!r}, {len(self.ui_elements)} elements)"


def _obs_from_json(d: dict, folder: Path, where: str, pixels: str = "eager") -> Observation:
    try:
        fields = dict(ui_elements=[UIElement.from_dict(e) for e in d["ui_elements"]],
                      ui_xml=d["ui_xml"], current_app=d["current_app"], goal=d["goal"],
                      screen_size=tuple(int(v) for v in d["screen_size"]))
        if pixels == "lazy":
            png = folder / d["screenshot"]
            if not png.is_file():
                raise EpisodeFormatError(f"{where}: screenshot {png} is missing")
            return PngObservation(png, **fields)
        return Observation(screenshot=_read_png(folder / d["screenshot"]), **fields)
    except EpisodeFormatError:
        raise
    except (KeyError, TypeError, ValueError, OSError) as e:
        raise EpisodeFormatError(f"{where}: bad observation record: {type(e).__name__}: {e}") from None


def _bbox_json(b) -> Optional[list]:
    return None if b is None else [float(v) for v in b]


def save_episode(episode: Episode, directory: str | os.PathLike) -> Path:
    """Writes `episode` into `directory` (created). Returns the folder."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    obs = []
    for i, o in enumerate(episode.observations):
        name = f"obs_{i:04d}.png"
        _write_png(folder / name, o.screenshot)
        obs.append(_obs_to_json(o, name))
    record = {
        "format_version": FORMAT_VERSION, "kind": "episode",
        "episode_id": episode.episode_id, "goal": episode.goal, "app": episode.app,
        "template": episode.template, "difficulty": episode.difficulty, "info": episode.info,
        "actions": [a.to_dict() for a in episode.actions],
        "target_bboxes": [_bbox_json(b) for b in episode.target_bboxes],
        "step_instructions": list(episode.step_instructions),
        "observations": obs,
    }
    tmp = folder / "episode.json.tmp"
    tmp.write_text(json.dumps(record, ensure_ascii=False))
    tmp.replace(folder / "episode.json")  # atomic: a crash never leaves half a record
    return folder


def _load_record(folder: Path, kind: str) -> dict:
    path = folder / f"{kind}.json"
    if not path.exists():
        raise EpisodeFormatError(f"{folder}: no {kind}.json")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise EpisodeFormatError(f"{path}: invalid JSON: {e}") from None
    if record.get("format_version") != FORMAT_VERSION:
        raise EpisodeFormatError(f"{path}: unsupported format_version {record.get('format_version')!r}")
    return record


PIXELS = ("eager", "lazy")


def load_episode(directory: str | os.PathLike, pixels: str = "eager") -> Episode:
    """The episode stored in `directory`. pixels='lazy': `PngObservation`s (screenshots decoded on access)."""
    if pixels not in PIXELS:
        raise ValueError(f"pixels must be one of {PIXELS}, got {pixels!r}")
    folder = Path(directory)
    r = _load_record(folder, "episode")
    where = str(folder / "episode.json")
    try:
        actions = [Action.from_dict(a, where=f"{where} action {i}") for i, a in enumerate(r["actions"])]
        bboxes = [None if b is None else tuple(b) for b in r["target_bboxes"]]
        observations = [_obs_from_json(o, folder, f"{where} observation {i}", pixels)
                        for i, o in enumerate(r["observations"])]
        return Episode(episode_id=r["episode_id"], goal=r["goal"], observations=observations,
                       actions=actions, target_bboxes=bboxes,
                       step_instructions=r["step_instructions"], app=r["app"],
                       template=r["template"], difficulty=r["difficulty"], info=r["info"])
    except ActionError as e:
        raise EpisodeFormatError(str(e)) from None
    except KeyError as e:
        raise EpisodeFormatError(f"{where}: missing field {e}") from None


def save_trajectory(traj: Trajectory, directory: str | os.PathLike) -> Path:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    steps = []
    for i, s in enumerate(traj.steps):
        name = f"obs_{i:04d}.png"
        _write_png(folder / name, s.observation.screenshot)
        steps.append({"observation": _obs_to_json(s.observation, name),
                      "action": None if s.action is None else s.action.to_dict(),
                      "response": s.response, "thought": s.thought, "reward": s.reward,
                      "info": s.info})
    record = {"format_version": FORMAT_VERSION, "kind": "trajectory", "task_id": traj.task_id,
              "goal": traj.goal, "success": traj.success, "info": traj.info, "steps": steps}
    (folder / "trajectory.json").write_text(json.dumps(record, ensure_ascii=False))
    return folder


def load_trajectory(directory: str | os.PathLike) -> Trajectory:
    folder = Path(directory)
    r = _load_record(folder, "trajectory")
    where = str(folder / "trajectory.json")
    steps = []
    for i, s in enumerate(r["steps"]):
        action = None if s["action"] is None else Action.from_dict(s["action"], f"{where} step {i}")
        steps.append(Step(observation=_obs_from_json(s["observation"], folder, f"{where} step {i}"),
                          action=action, response=s["response"], thought=s["thought"],
                          reward=s["reward"], info=s["info"]))
    return Trajectory(task_id=r["task_id"], goal=r["goal"], steps=steps, success=r["success"],
                      info=r["info"])


def save_episodes(episodes: Iterable[Episode], root: str | os.PathLike) -> list[Path]:
    """One sub-folder per episode, named by a running index then the episode id."""
    root = Path(root)
    return [save_episode(ep, root / f"{i:06d}") for i, ep in enumerate(episodes)]


def episode_dirs(root: str | os.PathLike) -> list[Path]:
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"episode store {root} does not exist")
    return sorted(p for p in root.iterdir() if (p / "episode.json").exists())


def iter_episodes(root: str | os.PathLike) -> Iterator[Episode]:
    for d in episode_dirs(root):
        yield load_episode(d)


def load_episodes(root: str | os.PathLike) -> list[Episode]:
    return list(iter_episodes(root))
