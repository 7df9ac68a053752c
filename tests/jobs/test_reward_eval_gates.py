"""reward_eval's sweep of the prefix minimum's gate (rm_eval.history_gates): one scoring pass, a row per gate; the
row at the run's own rm.model.history_gate equals the run's headline metrics, gate 1.0 is the plain minimum, and
a gate can only raise scores (fewer earlier steps count), so recall never falls as the gate is lowered."""
import json

import numpy as np
import pytest

from gui_jax.config_check import ConfigError, check_config
from gui_jax.jobs import load_config
from gui_jax.jobs import reward_eval

SMALL = {"data.num_test_episodes": 4, "data.templates": ("music.play", "tasks.priority"),
         "data.test_seed_range": (1000, 1004), "model.checkpoint": "builtin:tiny-base",
         "rm.model.scorer": "policy_likelihood", "rm.model.history_min": True}


def test_gate_sweep_rows_agree_with_the_headline_metrics_and_only_raise_recall(tmp_path):
    cfg = load_config("configs/reward_eval.py", **SMALL, **{"rm_eval.history_gates": (1.0, 0.1, 0.001)})
    check_config(cfg)
    reward_eval.run(cfg, str(tmp_path))
    out = json.load(open(tmp_path / "results.json"))
    rows = {r["gate"]: r for r in out["history_gates"]}
    assert sorted(rows) == [0.001, 0.1, 1.0]
    for kind in ("step", "outcome"):
        head = out["metrics"][kind]["all"]
        assert [rows[1.0][kind][k] for k in ("precision", "recall", "f1")] == \
            [head["precision"], head["recall"], head["f1"]]
        recalls = [rows[g][kind]["recall"] for g in (1.0, 0.1, 0.001)]
        assert recalls == sorted(recalls)
        subs = [rows[g][kind]["substitutions_passed"] for g in (1.0, 0.1, 0.001)]
        assert subs == sorted(subs)
    assert "| 0.001 |" in (tmp_path / "history_gates.md").read_text()


def test_gate_sweep_rows_by_hand():
    """Two outcome records (a positive with an unlikely right step, a substitution with a confidently wrong one)."""
    from gui_jax.core.types import Episode
    from gui_jax.rewards import data_engine as de
    eps = {"e": Episode(episode_id="e", goal="g", observations=[None] * 3, actions=[None] * 2, app="", template="t",
                        difficulty="easy")}
    refs = (de.StepRef("e", 0), de.StepRef("e", 1))
    recs = [de.RewardRecord("outcome", "g", refs, True, "expert"),
            de.RewardRecord("outcome", "g", refs, False, "substitution")]
    own = np.log([0.9, 0.9])
    history = [np.log([0.2, 0.95]), np.log([0.005, 0.9])]
    rows = reward_eval.history_gate_rows(own, history, recs, eps, (1.0, 0.1))
    assert rows[0]["outcome"]["recall"] == 0.0 and rows[0]["outcome"]["substitutions_passed"] == 0.0
    assert rows[1]["outcome"]["recall"] == 1.0 and rows[1]["outcome"]["precision"] == 1.0
    assert rows[1]["outcome"]["substitutions_passed"] == 0.0 and "step" not in rows[1]


@pytest.mark.parametrize("over, needle", [
    ({"rm_eval.history_gates": (0.1,), "rm.model.history_min": False}, "rm_eval.history_gates"),
    ({"rm_eval.history_gates": (0.0,)}, "distinct numbers in \\(0, 1\\]"),
    ({"rm.model.history_gate": 0.1, "rm.model.history_min": False}, "rm.model.history_gate"),
])
def test_bad_gate_configs_name_the_field(over, needle):
    cfg = load_config("configs/reward_eval.py", **{**SMALL, **over})
    with pytest.raises(ConfigError, match=needle):
        check_config(cfg)
