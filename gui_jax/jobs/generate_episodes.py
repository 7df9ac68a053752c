"""Job: expert episodes for one side of a CMDP split, written as Episode folders + manifest.json.

    python -m gui_jax.main --config configs/generate_episodes.py [--config.split=template ...]
The output folder is keyed by the settings that made it (cache_key.json): a re-run with the same
settings verifies it and stops; with other settings it refuses (main's --overwrite regenerates).
"""
from __future__ import annotations

import json
from pathlib import Path

from gui_jax.jobs.episode_cache import (check_episode_cache, generate_key, generate_out_dir,
                                        verify_episode_folder, write_cache_key)
from gui_jax.tasks.generate import write_episode_files
from gui_jax.tasks.splits import make_split


def run(config, workdir: str) -> None:
    """Job entry point (config fields: see configs/generate_episodes.py)."""
    if config.side not in ("train", "test"):
        raise ValueError(f"config.side must be 'train' or 'test', got {config.side!r}")
    split = make_split(
        config.split, train_seeds=tuple(config.train_seeds), test_seeds=tuple(config.test_seeds), seed=int(config.seed)
    )
    print(split.report())
    tasks = split.train if config.side == "train" else split.test
    if int(config.num_episodes) > 0:
        tasks = tasks[: int(config.num_episodes)]
    task_ids = [t.task_id for t in tasks]
    out = Path(generate_out_dir(config, workdir))
    key = generate_key(config)
    if check_episode_cache(str(out), key):
        verify_episode_folder(str(out), task_ids)
        print(f"{out} already holds these {len(tasks)} episodes (verified)")
        return
    write_cache_key(str(out), key, task_ids=task_ids, complete=False)
    write_episode_files(tasks, [str(out / f"{i:06d}") for i in range(len(tasks))], tuple(config.resolution),
                        workers=int(config.get("episode_workers", 1)), progress=bool(config.progress))
    manifest = {
        "split": config.split,
        "side": config.side,
        "balance": split.balance(),
        "resolution": list(config.resolution),
        "tasks": [t.to_dict() for t in tasks],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    verify_episode_folder(str(out), task_ids)
    write_cache_key(str(out), key, task_ids=task_ids, complete=True)
    print(f"wrote {len(tasks)} episodes to {out}")
