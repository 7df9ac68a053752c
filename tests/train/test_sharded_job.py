"""The jobs' own RL path (Agent → sampler → samples → micro-batches → Updater step) on 8 fake CPU devices
(fsdp 4 x tensor 2) equals the same path on one device: sampled tokens, loss, gradients and updated params;
the lowered train step carries the expected parameter shardings.

The worker runs as `python tests/train/test_sharded_job.py` in a subprocess: the fake-device XLA flag must be set
before JAX initialises.
"""
import json
import sys

TOL = 1e-5
LR = 1e-4  # Adam's first step is about lr * sign(g): at 1e-3, near-zero gradients' float noise moves 3e-5


def test_sharded_rl_step_matches_one_device():
    from support.fake_devices import run_worker  # at call time: the worker runs this file as a script
    r = run_worker(__file__)
    assert r["devices"] == 8 and r["mesh"] == {"data": 1, "fsdp": 4, "tensor": 2}
    assert r["tokens_equal"], r
    assert r["loss_diff"] <= TOL * max(1.0, abs(r["loss"])), r
    assert r["grad_max_rel"] <= TOL, r
    assert r["param_max_abs"] <= TOL, r
    assert r["param_max_step"] > 0.5 * LR, r  # the step moved the weights (Adam's first step: about lr each)
    # The params stay in their shards through the update (no silent replication by the jitted step).
    assert r["embed_spec_after"] == ["tensor", "fsdp"], r
    assert r["gate_spec_after"] == ["fsdp", "tensor"], r
    # Lowered HLO: the embedding [vocab, hidden] is split 2 (tensor) x 4 (fsdp), MLP kernels 4 x 2,
    # and the batch rows over fsdp.
    assert r["hlo_embed_sharding"] and r["hlo_mlp_sharding"] and r["hlo_batch_sharding"], r


def _worker():
    import jax
    import ml_collections
    import numpy as np

    from gui_jax.models import sharding as shd
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.batch import TrainSample
    from gui_jax.train.config_blocks import mesh_block, model_block, rl_block
    from gui_jax.train.rl_common import make_rl_updater, micro_batches
    from gui_jax.train.state import init_train_state, place_batch

    import time
    t0 = time.time()

    def log(what):
        print(f"[{time.time() - t0:6.1f}s] {what}", file=sys.stderr, flush=True)

    jax.config.update("jax_default_matmul_precision", "highest")
    assert jax.device_count() == 8, jax.devices()

    def config(fsdp, tensor):
        c = ml_collections.ConfigDict({"model": model_block("tiny"), "mesh": mesh_block(), "rl": rl_block()})
        c.model.checkpoint, c.model.num_hidden_layers = "", 2
        c.model.max_new_tokens = 8
        c.mesh.fsdp, c.mesh.tensor = fsdp, tensor
        c.mesh.compute_dtype = c.mesh.sampler_dtype = "float32"   # parity to 1e-5 needs float32 math
        c.rl.micro_batch_size = 4
        c.rl.kl_coef = 0.0
        c.rl.learning_rate = LR
        return c

    prompts = [([{"role": "user", "content": f"open app number {i} and tap the search box"}], [])
               for i in range(4)]

    def run(agent):
        gens = agent.policy.generate(prompts, temperature=1.0, seed=3)
        log("generated")
        samples = [TrainSample(g.prompt_ids, g.response_ids, advantage=float(a), old_logprobs=g.logprobs)
                   for g, a in zip(gens, (1.0, -0.5, 0.25, -1.0))]
        cfg = agent_cfg.rl
        updater = make_rl_updater(agent, cfg)
        state = init_train_state(agent.copy_params(), updater.optimizer, cfg.seed)
        mbs = micro_batches(agent, samples, cfg, None)
        mb = place_batch(mbs[0], agent.mesh, agent.rules)
        grads, s, d, _ = jax.jit(updater.micro_grads)(agent.params, mb, jax.random.key(0))
        grads = jax.tree.map(np.asarray, jax.device_get(grads))
        log("grads")
        state, metrics = updater.step(state, mbs)
        log("step")
        agent.set_params(state.params)
        return gens, metrics, grads, state, updater, mbs

    agent_cfg = config(-1, 1)
    one = Agent(agent_cfg, seed=0, mesh=shd.make_mesh(1, 1, 1, devices=jax.devices()[:1]))
    log("agent 1")
    one.params_at_start = jax.tree.map(np.asarray, jax.device_get(one.params))
    g1, m1, gr1, s1, _, _ = run(one)
    agent_cfg = config(4, 2)
    eight = Agent(agent_cfg, seed=0)
    log("agent 8")
    g8, m8, gr8, s8, up8, mbs8 = run(eight)

    rel = max(float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-12))
              for a, b in zip(jax.tree.leaves(gr1), jax.tree.leaves(gr8)))
    pmax = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
               for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s8.params)))
    pstep = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
                for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(one.params_at_start)))
    p8 = s8.params
    embed = p8["language_model"]["embed_tokens"].get_value()
    gate = jax.tree.leaves(p8["language_model"]["layers"])  # any MLP gate kernel: found by shape below
    gate = [x for x in gate if x.shape == (128, 384)][0]

    # Lowered text of the very step the Updater ran (same jitted function, same argument layouts).
    acc = up8.zeros_jit(p8)
    mb = place_batch(mbs8[0], eight.mesh, eight.rules)
    hlo = up8.accumulate_jit.lower(acc, p8, mb, jax.random.key(0)).as_text()
    result = {
        "devices": jax.device_count(), "mesh": dict(eight.mesh.shape),
        "tokens_equal": all(np.array_equal(a.response_ids, b.response_ids) for a, b in zip(g1, g8)),
        "loss": m1["loss"], "loss_diff": abs(m1["loss"] - m8["loss"]), "grad_max_rel": rel, "param_max_abs": pmax,
        "param_max_step": pstep,
        "embed_spec_after": list(embed.sharding.spec), "gate_spec_after": list(gate.sharding.spec),
        # Shardy ('sdy.sharding' on the arguments) or GSPMD ('mhlo.sharding') spelling, whichever JAX emits.
        "hlo_embed_sharding": '[{"tensor"}, {"fsdp"}]' in hlo or "{devices=[2,4]" in hlo,
        "hlo_mlp_sharding": '[{"fsdp"}, {"tensor"}]' in hlo or "{devices=[4,2]" in hlo,
        "hlo_batch_sharding": '[{"fsdp"}, {}]' in hlo or "{devices=[4,1,2]" in hlo,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    _worker()
