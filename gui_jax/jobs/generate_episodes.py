"""Job: expert episodes for one side of a CMDP split, written as Episode folders + manifest.json.

    python -m gui_jax.main --config configs/generate_episodes.py [--config.split=template ...]
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from gui_jax.core.serialize import save_episode
from gui_jax.tasks.generate import generate_episodes
from gui_jax.tasks.splits import make_split


def run(config, workdir: str) -> None:
    """Job entry point (config fields: see configs/generate_episodes.py)."""
    split = make_split(
        config.split, train_seeds=tuple(config.train_seeds), test_seeds=tuple(config.test_seeds), seed=int(config.seed)
    )
    print(split.report())
    tasks = split.train if config.side == "train" else split.test
    if config.side not in ("train", "test"):
        raise ValueError(f"config.side must be 'train' or 'test', got {config.side!r}")
    if int(config.num_episodes) > 0:
        tasks = tasks[: int(config.num_episodes)]
    out = Path(config.out_dir or os.path.join(workdir, "episodes", f"{config.split}_{config.side}"))
    out.mkdir(parents=True, exist_ok=True)
    for i, ep in enumerate(generate_episodes(tasks, tuple(config.resolution), progress=bool(config.progress))):
        save_episode(ep, out / f"{i:06d}")
    manifest = {
        "split": config.split,
        "side": config.side,
        "balance": split.balance(),
        "resolution": list(config.resolution),
        "tasks": [t.to_dict() for t in tasks],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {len(tasks)} episodes to {out}")
