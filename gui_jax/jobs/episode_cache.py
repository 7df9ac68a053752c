"""Expert-episode caches of the jobs: each `episodes/<side>` folder (or a generate_episodes output) has a
`cache_key.json` with the settings that made it and the task ids it must hold; a load compares the key and
verifies the folder through `EpisodeStore` (duplicate ids refused) and against the task ids. Generation writes
over `workers` processes and links episodes another complete cache already holds.
"""
from __future__ import annotations

import json
import os
import shutil
from typing import Optional, Sequence

from gui_jax.jobs.common import (CACHE_KEY_FILE, StaleEpisodesError, WorkdirMismatchError, _short,
                                 config_differences)


def episode_key(config, side: str) -> dict:
    """The config fields that decide the episodes of one side of `prepare` (keys = config paths)."""
    d = config.data
    key = {"data.split": d.split, "side": side, "data.train_seed_range": list(d.train_seed_range),
           "data.test_seed_range": list(d.test_seed_range), "data.difficulties": list(d.difficulties),
           "data.max_optimal_steps": int(d.max_optimal_steps), "data.templates": list(d.templates),
           "data.resolution": list(d.resolution),
           f"data.num_{side}_episodes": int(d[f"num_{side}_episodes"])}
    if side == "train" and d.get("train_screens_per_instance", 1) != 1:  # absent before the knob: old caches stay valid
        key["data.train_screens_per_instance"] = int(d.train_screens_per_instance)
    if d.split == "template":
        key["seed"] = int(config.seed)  # the template split's search seed
    return key


def generate_out_dir(config, workdir: str) -> str:
    return config.get("out_dir") or os.path.join(workdir, "episodes", f"{config.split}_{config.side}")


def generate_key(config) -> dict:
    return {"split": config.split, "side": config.side, "train_seeds": list(config.train_seeds),
            "test_seeds": list(config.test_seeds), "seed": int(config.seed),
            "num_episodes": int(config.num_episodes), "resolution": list(config.resolution)}


def read_cache_key(folder: str) -> Optional[dict]:
    path = os.path.join(folder, CACHE_KEY_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return {"settings": {}, "complete": False}


def write_cache_key(folder: str, key: dict, *, task_ids: Sequence[str], complete: bool) -> None:
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, CACHE_KEY_FILE + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"settings": key, "task_ids": list(task_ids), "complete": complete}, f, indent=1)
    os.replace(tmp, os.path.join(folder, CACHE_KEY_FILE))


def _has_content(folder: str) -> bool:
    return os.path.isdir(folder) and any(True for _ in os.scandir(folder))


def check_episode_cache(folder: str, key: dict, *, overwrite: bool = False) -> bool:
    """True if `folder` is a complete cache made with `key`; False if it must be (re)generated.

    A folder made with other settings, or one this code did not make (no cache key), raises
    WorkdirMismatchError naming the fields, or with `overwrite` is removed.
    """
    if not _has_content(folder):
        return False
    stored = read_cache_key(folder)
    if stored is not None and stored.get("settings") == key:
        if stored.get("complete"):
            try:
                verify_episode_folder(folder, stored.get("task_ids", []))
                return True
            except StaleEpisodesError:
                if not overwrite:
                    raise
                shutil.rmtree(folder)
                return False
        shutil.rmtree(folder)  # our own interrupted generation: start it again
        return False
    if stored is None:
        why = f"{folder} holds episodes without a {CACHE_KEY_FILE} (made by another version or by hand)"
    else:
        why = f"{folder} was made with other settings ({_short(config_differences(stored.get('settings', {}), key))})"
    if not overwrite:
        raise WorkdirMismatchError(f"{why}; use another --workdir, or --overwrite to regenerate it")
    shutil.rmtree(folder)
    return False


def verify_episode_folder(folder: str, task_ids: Sequence[str]):
    """Opens `folder` as an EpisodeStore and checks it holds exactly `task_ids` (in order)."""
    from gui_jax.core.serialize import EpisodeFormatError
    from gui_jax.data.episode_store import EpisodeStore
    try:
        store = EpisodeStore(folder, use_index=False)
    except (EpisodeFormatError, FileNotFoundError) as e:
        raise StaleEpisodesError(f"{folder}: {e}; use --overwrite to regenerate it") from None
    ids, want = list(store.ids), list(task_ids)
    if ids != want:
        missing = [t for t in want if t not in set(ids)]
        extra = [t for t in ids if t not in set(want)]
        detail = (f"{len(missing)} missing (e.g. {missing[:3]})" if missing else "") + \
                 (f"{', ' if missing else ''}{len(extra)} not selected (e.g. {extra[:3]})" if extra else "")
        raise StaleEpisodesError(f"{folder} holds {len(ids)} episodes for {len(want)} selected tasks"
                                 f"{': ' + detail if detail else ' (in another order)'}; "
                                 f"use --overwrite to regenerate it")
    return store


def load_or_generate(tasks, folder: str, resolution, key: Optional[dict] = None, pixels: str = "eager",
                     workers: int = 1, reuse: Optional[str] = None):
    """The expert episodes of `tasks`: loaded from `folder` if it is a complete cache for `key`
    (verified by the store), else generated, written one by one and keyed. pixels='lazy': observations
    keep their screenshots in the PNGs (`PngObservation`), for prompts that never show them.
    workers > 1: generated over that many processes (the same files: tasks/generate.py `write_episode_files`).
    reuse: another complete episode cache whose episodes of the same tasks (and resolution) are linked, not
    generated again."""
    from gui_jax.core.serialize import load_episode, save_episode
    from gui_jax.tasks.generate import generate_episodes, write_episode_files
    key = key if key is not None else {"resolution": list(resolution), "task_ids": [t.task_id for t in tasks]}
    task_ids = [t.task_id for t in tasks]
    if check_episode_cache(folder, key):  # verified against the task ids stored with the key
        stored = read_cache_key(folder)
        if stored.get("task_ids") != task_ids:
            raise StaleEpisodesError(f"{folder} was made for other tasks than these settings select now "
                                     f"(the task registry changed?); use --overwrite to regenerate it")
        from gui_jax.data.episode_store import EpisodeStore
        store = EpisodeStore(folder, use_index=False)
        return [load_episode(store.path(i), pixels) for i in range(len(store))]
    if len(set(task_ids)) != len(task_ids):
        dup = sorted({t for t in task_ids if task_ids.count(t) > 1})
        raise StaleEpisodesError(f"the selected tasks repeat {dup[:3]}: episode ids must be unique")
    write_cache_key(folder, key, task_ids=task_ids, complete=False)
    paths = [os.path.join(folder, f"{i:06d}") for i in range(len(tasks))]
    linked = link_cached_episodes(reuse, task_ids, paths, resolution) if reuse else set()
    todo = [i for i in range(len(tasks)) if i not in linked]
    if workers > 1 or linked:
        write_episode_files([tasks[i] for i in todo], [paths[i] for i in todo], resolution, workers=workers,
                            progress=True)
        eps = [load_episode(p, pixels) for p in paths]
    else:
        eps = []
        for ep, path in zip(generate_episodes(tasks, resolution=tuple(resolution), progress=True), paths):
            save_episode(ep, path)
            eps.append(ep if pixels == "eager" else load_episode(path, pixels))
    verify_episode_folder(folder, task_ids)
    write_cache_key(folder, key, task_ids=task_ids, complete=True)
    return eps


def link_cached_episodes(cache: str, task_ids: Sequence[str], paths: Sequence[str], resolution) -> set:
    """Hard-links (copies across file systems) the episodes of `task_ids` that the complete episode cache `cache`
    holds at the same resolution into `paths`; returns the indices linked. A missing or incomplete cache links
    nothing."""
    stored = read_cache_key(cache) if os.path.isdir(cache) else None
    settings = (stored or {}).get("settings", {})
    if not stored or not stored.get("complete") or \
            list(settings.get("data.resolution", settings.get("resolution", []))) != list(resolution):
        return set()
    where = {t: i for i, t in enumerate(stored.get("task_ids", []))}
    linked = set()
    for i, (t, dst) in enumerate(zip(task_ids, paths)):
        if t in where:
            src = os.path.join(cache, f"{where[t]:06d}")
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, copy_function=_link_or_copy)
            linked.add(i)
    return linked


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
