"""Shared set-up for the jobs: the task selection and the expert episodes of a split.

Jobs are the only place that composes tasks/, data/, train/ and eval/.
"""
from __future__ import annotations

import os

from gui_jax.core.serialize import episode_dirs, load_episodes, save_episodes


def select_tasks(tasks, dcfg, limit: int):
    """Tasks of the configured difficulties/templates/lengths, in a seeded round-robin over
    templates so every template is represented before any repeats."""
    keep = [t for t in tasks if t.difficulty in tuple(dcfg.difficulties)
            and t.optimal_steps <= dcfg.max_optimal_steps
            and (not dcfg.templates or t.template in tuple(dcfg.templates))]
    by_template = {}
    for t in sorted(keep, key=lambda t: (t.template, t.seed)):
        by_template.setdefault(t.template, []).append(t)
    out, k = [], 0
    while len(out) < limit and any(k < len(v) for v in by_template.values()):
        out += [v[k] for v in by_template.values() if k < len(v)]
        k += 1
    return out[:limit]


def load_or_generate(tasks, folder: str, resolution):
    from gui_jax.tasks.generate import generate_episodes
    if os.path.isdir(folder) and len(episode_dirs(folder)) == len(tasks):
        return load_episodes(folder)
    eps = list(generate_episodes(tasks, resolution=tuple(resolution), progress=True))
    save_episodes(eps, folder)
    return eps


def prepare(config, workdir):
    from gui_jax.tasks.splits import make_split
    d = config.data
    split = make_split(d.split, train_seeds=range(*d.train_seed_range), test_seeds=range(*d.test_seed_range),
                       seed=config.seed)
    print(split.report())
    train_tasks = select_tasks(split.train, d, d.num_train_episodes)
    test_tasks = select_tasks(split.test, d, d.num_test_episodes)
    if not train_tasks or not test_tasks:
        raise ValueError(f"no tasks left after filtering (difficulties={list(d.difficulties)}, "
                         f"max_optimal_steps={d.max_optimal_steps}, templates={list(d.templates)})")
    train_eps = load_or_generate(train_tasks, os.path.join(workdir, "episodes", "train"), d.resolution)
    test_eps = load_or_generate(test_tasks, os.path.join(workdir, "episodes", "test"), d.resolution)
    return train_tasks, test_tasks, train_eps, test_eps


