"""AdaGRPO (MobileRL): SPA, AdaPR replay with negative pruning and the FCF failure curriculum; the tiny
agent on in-process PhoneSim (same data, model and SFT start as configs/grpo_online.py).

    python -m gui_jax.main --config configs/adagrpo.py [--workdir runs/adagrpo]
    # ablations: one switch each
    python -m gui_jax.main --config configs/adagrpo.py --config.online.spa=False      # or adapr / fcf / prune_negatives
    python -m gui_jax.main --config configs/adagrpo.py --config.env.backend=remote \
        --config.env.server_urls='("http://127.0.0.1:8000",)'
"""

from gui_jax.train.config_blocks import sibling_recipe


def _sibling(name):
    return sibling_recipe(__file__, name)


def get_config():
    c = _sibling("grpo_online").get_config("adagrpo")
    c.online.kl_coef = 1e-3               # MobileRL β
    c.online.adapr_capacity = 256
    c.online.adapr_tau = 1.0
    c.online.adapr_fraction = 0.25
    c.online.max_neg_per_pos = 2.0
    c.online.curriculum = False           # FCF replaces the difficulty curriculum (switchable)
    return c
