"""Expert-episode generation: oracle trajectories on PhoneSim in the core `Episode` format.

The job that writes them to disk is gui_jax/jobs/generate_episodes.py.

Bounded memory: `generate_episodes` is a generator that renders one episode at a time and keeps no
reference to it; stream it straight to disk with `gui_jax.data.episode_store.write_episodes(
generate_episodes(tasks, resolution), folder)` and read it back lazily (`store.lazy_episodes()`), so
host memory stays at about one episode whatever the count (tests/tasks/test_streaming.py).

Actions and target bboxes are in logical screen pixels (Observation.screen_size = 1080x2400);
screenshots are rendered at `config.resolution`. Each episode folder also records the task
metadata in `Episode.info`; the job writes `manifest.json` (split report + task list) beside them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Iterable, Iterator, Sequence

from gui_jax.core.types import Episode
from gui_jax.envs.sim import PhoneSim, Task
from gui_jax.envs.sim.describe import describe_steps


def generate_episode(task: Task, sim: PhoneSim, final_observation: bool = True) -> Episode:
    """Replay the oracle on `sim`, recording the observation before every action; each action carries its
    description on that screen (`action_desc`, envs/sim/describe.py)."""
    steps = sim.expert_actions(task)
    obs = sim.reset(task)
    observations, info = [obs.materialize()], {}
    for i, st in enumerate(steps):
        obs, done, info = sim.step(st.action)
        if not info["valid"]:
            raise RuntimeError(f"{task.task_id}: oracle step {i} {st.action} invalid: {info['reason']}")
        if not done or (final_observation and i == len(steps) - 1):
            observations.append(obs.materialize())
    if not info.get("success"):
        raise RuntimeError(f"{task.task_id}: oracle episode did not succeed (goal {task.goal!r})")
    if not final_observation:
        observations = observations[: len(steps)]
    return describe_steps(Episode(
        episode_id=task.task_id,
        goal=task.goal,
        observations=observations,
        actions=[s.action for s in steps],
        target_bboxes=[s.bbox for s in steps],
        step_instructions=[s.instruction for s in steps],
        app=task.app,
        template=task.template,
        difficulty=task.difficulty,
        info={
            "seed": task.seed,
            "apps": list(task.apps),
            "complexity": task.complexity,
            "optimal_steps": task.optimal_steps,
            "answer_task": task.answer_task,
            "success": True,
            "source": "phonesim-oracle",
            "coords": "screen",
        },
    ))


def generate_episodes(tasks: Iterable[Task], resolution=(540, 1200), progress: bool = False) -> Iterator[Episode]:
    """Yields one oracle episode per task, in order, rendering each only when it is asked for."""
    sim = PhoneSim(render=True, resolution=tuple(resolution), max_steps=200)
    tasks = list(tasks)  # task descriptions only (no pixels)
    it = tasks
    if progress:
        from gui_jax.core.progress import progress as progress_bar

        it = progress_bar(tasks, desc="expert episodes", unit="ep")
    for t in it:
        yield generate_episode(t, sim)


# ----------------------------------------------------------------------------------- parallel, to disk

CHUNK_TASKS = 16   # tasks a worker takes at a time: the progress bar moves, the pool stays busy at the tail
_WORKER_SIM: dict = {}


def _init_worker(resolution) -> None:
    _WORKER_SIM["sim"] = PhoneSim(render=True, resolution=tuple(resolution), max_steps=200)


def _write_chunk(chunk) -> int:
    from gui_jax.core.serialize import save_episode
    for path, task in chunk:
        save_episode(generate_episode(task, _WORKER_SIM["sim"]), path)
    return len(chunk)


def write_episode_files(tasks: Sequence[Task], folders: Sequence[str], resolution=(540, 1200), *, workers: int = 1,
                        progress: bool = False) -> None:
    """Writes the oracle episode of tasks[i] into folders[i] (core/serialize.py `save_episode`), over `workers`
    processes. The files do not depend on `workers` (an episode depends on its task alone:
    tests/tasks/test_parallel_generation.py). Workers are spawned, not forked, so a process that already runs
    jax's threads may call it; each builds one PhoneSim and takes CHUNK_TASKS tasks at a time."""
    if len(tasks) != len(folders):
        raise ValueError(f"{len(tasks)} tasks but {len(folders)} folders")
    chunks = [list(zip(folders[i:i + CHUNK_TASKS], tasks[i:i + CHUNK_TASKS]))
              for i in range(0, len(tasks), CHUNK_TASKS)]
    bar = None
    if progress:
        from gui_jax.core.progress import progress as progress_bar
        bar = progress_bar(total=len(tasks), desc="expert episodes", unit="ep")
    workers = min(workers, len(chunks))
    with contextlib.ExitStack() as stack:
        if workers > 1:
            pool = stack.enter_context(ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=(tuple(resolution),)))
            counts = pool.map(_write_chunk, chunks)
        else:
            _init_worker(resolution)
            counts = map(_write_chunk, chunks)
        for n in counts:
            if bar is not None:
                bar.update(n)
    if bar is not None:
        bar.close()
