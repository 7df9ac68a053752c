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

from typing import Iterable, Iterator

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
