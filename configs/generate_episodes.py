"""Expert episodes from the PhoneSim oracle for one side of a CMDP split.

Run: python -m gui_jax.main --config configs/generate_episodes.py --config.split=template --config.num_episodes=50
"""

import ml_collections


def get_config():
    c = ml_collections.ConfigDict()
    c.job = "generate_episodes"
    c.split = "instance"  # instance | template | app (docs/algorithms.md §12)
    c.side = "train"  # train | test
    c.train_seeds = (1, 2, 3, 4, 5, 6, 8, 9, 12, 123, 12345, 123456, 1234567, 12345678, 123456789, 1234567890)
    c.test_seeds = (7, 30, 1234)
    c.seed = 0  # template-split search seed
    c.num_episodes = 100  # 0 = every task of that side
    c.resolution = (532, 1176)  # screenshot (width, height): multiples of 28, close to PhoneSim's 540x1200
    c.out_dir = ""  # default: <workdir>/episodes/<split>_<side>
    c.progress = True
    c.episode_workers = 1  # processes writing the episodes (the same files whatever the count)
    return c
