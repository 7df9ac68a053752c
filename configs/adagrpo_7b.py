"""AdaGRPO at paper scale (MobileRL): Qwen2.5-VL-7B on env servers; β = 1e-3, SPA (α = 1), AdaPR
(capacity 256, τ_adv = 1, λ = 0.25) with ≤ 1:2 negative pruning, FCF (2 failing epochs → 3-epoch
cooldown at 0.5^k, removal at k ≥ 6).

    python -m gui_jax.main --config configs/adagrpo_7b.py --config.model.checkpoint=/path/to/Qwen2.5-VL-7B-Instruct \
        --config.env.backend=remote --config.env.server_urls='("http://10.0.0.2:8000",)' --config.env.token=...
Per-slice layouts (`configs/adagrpo_7b.py:v5p-64`): grpo_online_7b's, i.e. the 7B UI-S1 recipe's.
"""

from gui_jax.train.config_blocks import sibling_recipe


def _sibling(name):
    return sibling_recipe(__file__, name)


def get_config(layout: str = ""):
    base = _sibling("grpo_online_7b")
    c = base.get_config("adagrpo")
    c.online.kl_coef = 1e-3               # MobileRL β
    c.online.aggregation = "token_mean"
    c.online.curriculum = False
    return base.with_layout(c, layout)
