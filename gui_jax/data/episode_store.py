"""Random access over a folder of episodes in our on-disk format (`gui_jax.core.serialize`).

`EpisodeStore(root)` scans `root/*/episode.json` once for metadata (id, app, template,
difficulty, length), then loads episodes on demand. It satisfies grain's
`RandomAccessDataSource` protocol (`__len__`, `__getitem__(int)`), so
`grain.MapDataset.source(store)` works. Per-step readers (`actions`, `observation`) decode
only the screenshot they need, for step-level datasets.

An optional `index.json` in the root (written by `write_store_index`) caches the metadata; it is
used only when it lists exactly the folders present and is newer than every episode.json.

Bounded memory whatever the episode count (a 10k-episode run at 1092x2436 is ~100 GB of pixels):
  store = write_episodes(generate_episodes(tasks, resolution), folder)   # streams: one episode in memory
  episodes = store.lazy_episodes()   # Sequence[Episode]; each `Episode` holds actions and metadata, its
                                     # observations are `StoredObservation`s that decode their screenshot (and
                                     # UI tree) from disk on access, through a store-wide LRU of
                                     # `screenshot_cache` images; nothing else is kept
`write_episodes(iterable, folder)` writes each episode as the iterable yields it (folders 000000, 000001, ...,
atomically per episode), then index.json, and returns the `EpisodeStore`. `store[i]` still loads a whole
(eager) episode; `store.lazy(i)` is the lazy one.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import numpy as np

from gui_jax.core.serialize import (EpisodeFormatError, _obs_from_json, _read_png, episode_dirs,
                                    load_episode, save_episode)
from gui_jax.core.types import Action, ActionError, Episode, Observation, UIElement

INDEX_FILE = "index.json"
INDEX_VERSION = 1


@dataclass(frozen=True)
class EpisodeMeta:
    """What the store knows about an episode without loading it."""

    folder: str  # folder name under the store root
    episode_id: str
    goal: str
    app: str
    template: str
    difficulty: str
    num_steps: int
    num_observations: int


def _meta_from_record(folder: Path, record: dict) -> EpisodeMeta:
    where = folder / "episode.json"
    try:
        return EpisodeMeta(folder=folder.name, episode_id=str(record["episode_id"]),
                           goal=record["goal"], app=record.get("app", ""),
                           template=record.get("template", ""),
                           difficulty=record.get("difficulty", ""),
                           num_steps=len(record["actions"]),
                           num_observations=len(record["observations"]))
    except (KeyError, TypeError) as e:
        raise EpisodeFormatError(f"{where}: missing or bad field {e}") from None


def _read_record(folder: Path) -> dict:
    path = folder / "episode.json"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise EpisodeFormatError(f"{folder}: no episode.json") from None
    except json.JSONDecodeError as e:
        raise EpisodeFormatError(f"{path}: invalid JSON: {e}") from None
    if record.get("kind", "episode") != "episode":
        raise EpisodeFormatError(f"{path}: kind is {record.get('kind')!r}, not 'episode'")
    return record


def _scan(root: Path) -> list[EpisodeMeta]:
    return [_meta_from_record(d, _read_record(d)) for d in episode_dirs(root)]


def _load_index(root: Path, folders: list[Path]) -> Optional[list[EpisodeMeta]]:
    path = root / INDEX_FILE
    try:
        index_mtime = path.stat().st_mtime
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(raw, dict) or raw.get("index_version") != INDEX_VERSION:
        return None
    try:
        metas = [EpisodeMeta(**m) for m in raw["episodes"]]
    except (KeyError, TypeError):
        return None
    if [m.folder for m in metas] != [f.name for f in folders]:
        return None  # stale: folders added or removed
    if any((f / "episode.json").stat().st_mtime > index_mtime for f in folders):
        return None  # stale: an episode was rewritten after the index
    return metas


def write_store_index(root: Union[str, os.PathLike]) -> Path:
    """Scans `root` and writes index.json so later opens skip reading every episode.json."""
    root = Path(root)
    metas = _scan(root)
    path = root / INDEX_FILE
    tmp = root / (INDEX_FILE + ".tmp")
    tmp.write_text(json.dumps({"index_version": INDEX_VERSION,
                               "episodes": [asdict(m) for m in metas]}, ensure_ascii=False))
    tmp.replace(path)
    return path


def _as_set(v: Union[None, str, Iterable[str]]) -> Optional[set]:
    if v is None:
        return None
    return {v} if isinstance(v, str) else set(v)


class EpisodeStore:
    """Read-only random access to `root/<folder>/episode.json` episodes, in folder-name order.

    `store[i]` loads the i-th episode (negative indices allowed). `filter(...)` and `subset(...)`
    return views sharing the same root. Episode ids must be unique within a store.
    """

    def __init__(self, root: Union[str, os.PathLike], *, use_index: bool = True,
                 _metas: Optional[list[EpisodeMeta]] = None, _cache_size: int = 8,
                 screenshot_cache: int = 8):
        self.root = Path(root)
        if _metas is None:
            folders = episode_dirs(self.root)
            _metas = _load_index(self.root, folders) if use_index else None
            if _metas is None:
                _metas = [_meta_from_record(d, _read_record(d)) for d in folders]
        self._metas = list(_metas)
        self._id_to_index: dict[str, int] = {}
        for i, m in enumerate(self._metas):
            if m.episode_id in self._id_to_index:
                other = self._metas[self._id_to_index[m.episode_id]].folder
                raise EpisodeFormatError(f"{self.root}: episode id {m.episode_id!r} appears in "
                                         f"folders {other!r} and {m.folder!r}")
            self._id_to_index[m.episode_id] = i
        self._cache_size = _cache_size
        self._record_cache = functools.lru_cache(maxsize=_cache_size)(self._read_folder)
        # Decoded screenshots of lazy observations, store-wide: memory is bounded by this count, not by how
        # many lazy episodes / observations callers hold.
        self.screenshot_cache = screenshot_cache
        self._png_cache = functools.lru_cache(maxsize=max(screenshot_cache, 0))(self._decode_png)

    # -- grain RandomAccessDataSource protocol
    def __len__(self) -> int:
        return len(self._metas)

    def __getitem__(self, index: int) -> Episode:
        return load_episode(self.path(index))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"EpisodeStore(root={str(self.root)!r}, episodes={len(self)})"

    # -- metadata
    def _check(self, index: int) -> int:
        if not isinstance(index, int) or isinstance(index, bool):
            if hasattr(index, "__index__"):
                index = int(index)
            else:
                raise TypeError(f"episode index must be an int, got {type(index).__name__}")
        n = len(self._metas)
        if not -n <= index < n:
            raise IndexError(f"episode index {index} out of range for {n} episodes in {self.root}")
        return index % n

    def meta(self, index: int) -> EpisodeMeta:
        return self._metas[self._check(index)]

    @property
    def metas(self) -> list[EpisodeMeta]:
        return list(self._metas)

    @property
    def ids(self) -> list[str]:
        return [m.episode_id for m in self._metas]

    def path(self, index: int) -> Path:
        return self.root / self.meta(index).folder

    def index_of(self, episode_id: str) -> int:
        try:
            return self._id_to_index[str(episode_id)]
        except KeyError:
            raise KeyError(f"no episode with id {episode_id!r} in {self.root}") from None

    def get(self, episode_id: str) -> Episode:
        return self[self.index_of(episode_id)]

    def num_steps(self, index: int) -> int:
        return self.meta(index).num_steps

    def values(self, field: str) -> list[str]:
        """Sorted distinct values of a metadata field (app, template, difficulty)."""
        return sorted({getattr(m, field) for m in self._metas})

    # -- views
    def subset(self, indices: Sequence[int]) -> "EpisodeStore":
        return EpisodeStore(self.root, _metas=[self.meta(i) for i in indices],
                            _cache_size=self._cache_size, screenshot_cache=self.screenshot_cache)

    def filter(self, *, app=None, template=None, difficulty=None, ids=None,
               predicate: Optional[Callable[[EpisodeMeta], bool]] = None) -> "EpisodeStore":
        """Episodes matching every given criterion; each may be one string or a collection."""
        want = {"app": _as_set(app), "template": _as_set(template),
                "difficulty": _as_set(difficulty), "episode_id": _as_set(
                    None if ids is None else [str(i) for i in ([ids] if isinstance(ids, str) else ids)])}
        keep = []
        for m in self._metas:
            if all(s is None or getattr(m, k) in s for k, s in want.items()) and (
                    predicate is None or predicate(m)):
                keep.append(m)
        return EpisodeStore(self.root, _metas=keep, _cache_size=self._cache_size,
                            screenshot_cache=self.screenshot_cache)

    # -- per-step access without decoding every screenshot
    def _read_folder(self, folder: str) -> dict:
        return _read_record(self.root / folder)

    def record(self, index: int) -> dict:
        """The episode's parsed episode.json (cached, shared: do not mutate)."""
        return self._record_cache(self.meta(index).folder)

    def actions(self, index: int) -> list[Action]:
        where = self.path(index) / "episode.json"
        try:
            return [Action.from_dict(a, where=f"{where} action {t}")
                    for t, a in enumerate(self.record(index)["actions"])]
        except ActionError as e:
            raise EpisodeFormatError(str(e)) from None

    def observation(self, index: int, step: int) -> Observation:
        """Observation `step` of episode `index`; decodes only that screenshot."""
        record = self.record(index)
        obs = record["observations"]
        if not 0 <= step < len(obs):
            raise IndexError(f"episode {self.meta(index).episode_id!r} has {len(obs)} observations; "
                             f"asked for {step}")
        where = f"{self.path(index) / 'episode.json'} observation {step}"
        return _obs_from_json(obs[step], self.path(index), where)

    def step_fields(self, index: int, step: int) -> tuple[Optional[tuple], str]:
        """(target_bbox, step_instruction) of one step."""
        r = self.record(index)
        b = r["target_bboxes"][step]
        return (None if b is None else tuple(b)), r["step_instructions"][step]

    # -- lazy episodes: screenshots decoded on access, never all in memory
    def _decode_png(self, path: str):
        return _read_png(Path(path))

    def screenshot(self, index: int, step: int):
        """The uint8 [H, W, 3] screenshot of observation `step` of episode `index` (store-wide LRU; read-only)."""
        obs = self._obs_record(index, step)
        try:
            image = self._png_cache(str(self.path(index) / obs["screenshot"]))
        except (KeyError, TypeError) as e:
            raise EpisodeFormatError(f"{self.path(index) / 'episode.json'} observation {step}: "
                                     f"bad screenshot field: {e}") from None
        image.flags.writeable = False  # shared by every caller of the cache
        return image

    def _obs_record(self, index: int, step: int) -> dict:
        obs = self.record(index)["observations"]
        if not 0 <= step < len(obs):
            raise IndexError(f"episode {self.meta(index).episode_id!r} has {len(obs)} observations; "
                             f"asked for {step}")
        return obs[step]

    def lazy(self, index: int) -> Episode:
        """Episode `index` with `StoredObservation`s (screenshots and UI trees read on access)."""
        index = self._check(index)
        r = self.record(index)
        where = self.path(index) / "episode.json"
        try:
            actions = [Action.from_dict(a, where=f"{where} action {t}") for t, a in enumerate(r["actions"])]
            return Episode(episode_id=r["episode_id"], goal=r["goal"],
                           observations=[StoredObservation(self, index, t) for t in range(len(r["observations"]))],
                           actions=actions, target_bboxes=[None if b is None else tuple(b) for b in r["target_bboxes"]],
                           step_instructions=list(r["step_instructions"]), app=r.get("app", ""),
                           template=r.get("template", ""), difficulty=r.get("difficulty", ""),
                           info=dict(r.get("info", {})))
        except ActionError as e:
            raise EpisodeFormatError(str(e)) from None
        except KeyError as e:
            raise EpisodeFormatError(f"{where}: missing field {e}") from None

    def lazy_episodes(self) -> "LazyEpisodes":
        """A Sequence[Episode] view of the store built from `lazy(i)` (no pixels held)."""
        return LazyEpisodes(self)


class LazyEpisodes:
    """Sequence of lazy episodes of an `EpisodeStore` (index, len, iterate); episodes are built on access."""

    def __init__(self, store: EpisodeStore):
        self.store = store

    def __len__(self) -> int:
        return len(self.store)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.store.lazy(i) for i in range(*index.indices(len(self)))]
        return self.store.lazy(index)

    def __iter__(self):
        for i in range(len(self)):
            yield self.store.lazy(i)

    def __repr__(self) -> str:
        return f"LazyEpisodes({self.store!r})"


class StoredObservation(Observation):
    """An `Observation` of a stored episode whose fields are read from disk on every access.

    Holds only (store, episode index, step): the screenshot comes through the store's LRU of decoded images and
    the UI tree from the store's record cache, so holding many of these costs no pixels. Pickling and copying
    materialise a plain Observation.
    """

    def __init__(self, store: EpisodeStore, index: int, step: int):  # no dataclass __init__: nothing loaded
        self._store, self._index, self._step = store, index, step

    def _field(self, name: str):
        try:
            return self._store._obs_record(self._index, self._step)[name]
        except KeyError:
            raise EpisodeFormatError(f"{self._store.path(self._index) / 'episode.json'} observation "
                                     f"{self._step}: missing field {name!r}") from None

    screenshot = property(lambda self: self._store.screenshot(self._index, self._step))
    ui_elements = property(lambda self: [UIElement.from_dict(e) for e in self._field("ui_elements")])
    ui_xml = property(lambda self: self._field("ui_xml"))
    current_app = property(lambda self: self._field("current_app"))
    goal = property(lambda self: self._field("goal"))
    screen_size = property(lambda self: tuple(int(v) for v in self._field("screen_size")))

    def materialize(self) -> Observation:
        return Observation(screenshot=np.array(self.screenshot), ui_elements=self.ui_elements, ui_xml=self.ui_xml,
                           current_app=self.current_app, goal=self.goal, screen_size=self.screen_size)

    def __reduce__(self):
        m = self.materialize()
        return (Observation, (m.screenshot, m.ui_elements, m.ui_xml, m.current_app, m.goal, m.screen_size))

    def __repr__(self) -> str:
        return f"StoredObservation({self._store.meta(self._index).episode_id!r}, step={self._step})"


def write_episodes(episodes: Iterable[Episode], folder: Union[str, os.PathLike], *, overwrite: bool = False,
                   on_written: Optional[Callable[[int, Episode], None]] = None,
                   screenshot_cache: int = 8) -> EpisodeStore:
    """Streams `episodes` to `folder/000000`, `folder/000001`, ... as the iterable yields them (one episode in
    memory at a time), writes index.json, and returns the store.

    A folder that already holds episodes is an error unless overwrite=True (then its episode folders and index
    are removed first). on_written(i, episode) runs after each write (progress, manifests).
    """
    import shutil
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    existing = episode_dirs(root)
    if existing and not overwrite:
        raise FileExistsError(f"{root} already holds {len(existing)} episodes; pass overwrite=True to replace them")
    for d in existing:
        shutil.rmtree(d)
    (root / INDEX_FILE).unlink(missing_ok=True)
    count = 0
    for count, ep in enumerate(episodes, start=1):
        save_episode(ep, root / f"{count - 1:06d}")
        if on_written is not None:
            on_written(count - 1, ep)
        del ep  # drop the reference before the generator builds the next one
    write_store_index(root)
    return EpisodeStore(root, screenshot_cache=screenshot_cache)
