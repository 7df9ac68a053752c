"""Episode generation and replay stream through disk: peak host memory does not grow with the episode count."""
import gc
import tracemalloc

import numpy as np

from gui_jax.data.episode_store import EpisodeStore, StoredObservation, write_episodes
from gui_jax.tasks.generate import generate_episodes
from gui_jax.tasks.splits import make_split

RESOLUTION = (216, 480)  # 311 KB per screenshot: pixels dominate every other allocation


def _tasks(n):
    split = make_split("instance", train_seeds=range(0, 40), test_seeds=range(1000, 1002), seed=0)
    return split.train[:n]


def _peak(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _touch_all(store: EpisodeStore) -> int:
    total = 0
    for ep in store.lazy_episodes():
        for obs in ep.observations:
            total += int(obs.screenshot[::50, ::50].sum()) + len(obs.ui_elements)
    return total


def test_generate_write_and_replay_keep_peak_memory_bounded(tmp_path):
    write_episodes(generate_episodes(_tasks(2), RESOLUTION), tmp_path / "warm")  # imports, fonts, caches
    _touch_all(EpisodeStore(tmp_path / "warm"))
    peaks, replay, pixels = {}, {}, {}
    for n in (4, 8):
        folder = tmp_path / f"n{n}"
        peaks[n] = _peak(lambda: write_episodes(generate_episodes(_tasks(n), RESOLUTION), folder))
        store = EpisodeStore(folder, screenshot_cache=2, _cache_size=2)  # caches: 2 images, 2 records
        assert len(store) == n
        pixels[n] = sum(m.num_observations for m in store.metas) * RESOLUTION[0] * RESOLUTION[1] * 3
        replay[n] = _peak(lambda: _touch_all(store))
    print({"write_peak": peaks, "replay_peak": replay, "pixel_bytes": pixels})
    # Doubling the episodes adds (almost) nothing: the peak is about one episode, not all of them.
    for peak in (peaks, replay):
        assert peak[8] - peak[4] < 0.1 * (pixels[8] - pixels[4]), (peak, pixels)
        assert peak[8] < pixels[8] / 2, (peak, pixels)


def test_lazy_episode_equals_eager_and_pickles_plain(tmp_path):
    store = write_episodes(generate_episodes(_tasks(2), (108, 240)), tmp_path / "s")
    import pickle
    for i in range(len(store)):
        lazy, eager = store.lazy(i), store[i]
        assert lazy.actions == eager.actions and lazy.target_bboxes == eager.target_bboxes
        assert len(lazy.observations) == len(eager.observations)
        for a, b in zip(lazy.observations, eager.observations):
            assert isinstance(a, StoredObservation) and a == b
            np.testing.assert_array_equal(a.screenshot, b.screenshot)
        back = pickle.loads(pickle.dumps(lazy.observations[0]))
        assert type(back).__name__ == "Observation" and back == eager.observations[0]
