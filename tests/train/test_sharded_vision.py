"""Screenshots in a sharded RL step (the jobs' path: Agent → micro_batches → place_batch → Updater), 8 fake CPU
devices (fsdp 4 x tensor 2) against one device, with the model's `vision_per_row` on and off:
- per-row images ([rows, N, D] + grouped layout) are placed split over the batch axes with their rows, and give
  the one-device gradients (≤ 1e-5 relative);
- the compiled per-device program needs fewer temporary bytes than the flat form, whose global gathers
  make XLA replicate the vision tower's activations on every device.

The worker runs as `python tests/train/test_sharded_vision.py` in a subprocess: the fake-device XLA flag must be
set before JAX initialises.
"""
import json

TOL = 1e-5


def test_per_row_images_shard_with_their_rows():
    from support.fake_devices import run_worker  # at call time: the worker runs this file as a script
    r = run_worker(__file__)
    assert r["pixel_spec"] == ["fsdp", None, None], r          # rows' images split like the rows
    assert r["layout_spec"] == ["fsdp", None], r
    assert r["flat_pixel_ndim"] == 2 and r["grouped_pixel_ndim"] == 3, r
    assert r["grad_rel_grouped_vs_one"] <= TOL, r
    assert r["grad_rel_flat_vs_one"] <= TOL, r
    assert r["vision_grad_norm"] > 0, r                         # the vision tower is trained through
    assert r["temp_grouped"] < r["temp_flat"], r


def _worker():
    import jax
    import ml_collections
    import numpy as np

    from gui_jax.models import sharding as shd
    from gui_jax.rl.agent import Agent
    from gui_jax.rl.batch import TrainSample
    from gui_jax.train.config_blocks import mesh_block, model_block, rl_block
    from gui_jax.train.rl_common import make_rl_updater, micro_batches
    from gui_jax.train.state import place_batch

    jax.config.update("jax_default_matmul_precision", "highest")
    assert jax.device_count() == 8, jax.devices()

    def config(fsdp, tensor, per_row):
        c = ml_collections.ConfigDict({"model": model_block("tiny"), "mesh": mesh_block(), "rl": rl_block()})
        c.model.checkpoint, c.model.num_hidden_layers = "", 2
        c.model.attention_impl = "xla"
        c.model.vision_per_row = per_row
        c.mesh.fsdp, c.mesh.tensor = fsdp, tensor
        c.mesh.compute_dtype = c.mesh.sampler_dtype = "float32"
        c.rl.micro_batch_size = 4
        c.rl.kl_coef = 0.0
        return c

    rng = np.random.default_rng(0)

    def sample(agent, grids):
        cfg = agent.model_config
        ids = rng.integers(10, 200, 6).tolist()
        for g in grids:
            ids += [cfg.vision_start_token_id] + [cfg.image_token_id] * (int(np.prod(g)) // 4) + [
                cfg.vision_end_token_id] + rng.integers(10, 200, 2).tolist()
        n = sum(int(np.prod(g)) for g in grids)
        return dict(prompt_ids=np.array(ids), response_ids=rng.integers(10, 200, 5),
                    pixel_values=rng.standard_normal((n, cfg.vision.patch_dim)).astype(np.float32),
                    image_grid_thw=np.array(grids), old_logprobs=-np.ones(5, np.float32))

    row_grids = [[(1, 8, 8), (1, 4, 8)], [(1, 4, 4)], [(1, 8, 4), (1, 4, 4), (1, 4, 4)], [(1, 8, 8)]]
    probe = Agent(config(-1, 1, False), seed=0, mesh=shd.make_mesh(1, 1, 1, devices=jax.devices()[:1]))
    raw = [sample(probe, g) for g in row_grids]
    advantages = (1.0, -0.5, 0.25, -1.0)

    def grads_of(fsdp, tensor, per_row, devices=None):
        mesh = shd.make_mesh(1, fsdp, tensor, devices=devices) if devices else None
        cfg = config(fsdp, tensor, per_row)
        agent = Agent(cfg, seed=0, mesh=mesh)
        samples = [TrainSample(advantage=a, **r) for r, a in zip(raw, advantages)]
        updater = make_rl_updater(agent, cfg.rl)
        mb = place_batch(micro_batches(agent, samples, cfg.rl, None)[0], agent.mesh, agent.rules)
        fn = jax.jit(updater.micro_grads)
        grads = jax.tree.map(np.asarray, jax.device_get(fn(agent.params, mb, jax.random.key(0))[0]))
        temp = fn.lower(agent.params, mb, jax.random.key(0)).compile().memory_analysis().temp_size_in_bytes
        return grads, mb, int(temp)

    g1, _, _ = grads_of(1, 1, False, devices=jax.devices()[:1])
    gf, mbf, temp_flat = grads_of(4, 2, False)
    gg, mbg, temp_grouped = grads_of(4, 2, True)

    def rel(a_tree, b_tree):
        return max(float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-12))
                   for a, b in zip(jax.tree.leaves(a_tree), jax.tree.leaves(b_tree)))

    vision = [x for p, x in jax.tree_util.tree_flatten_with_path(g1)[0] if "visual" in jax.tree_util.keystr(p)]
    def spec(x):
        return (list(x.sharding.spec) + [None] * x.ndim)[:x.ndim]

    result = {
        "pixel_spec": spec(mbg["pixel_values"]), "layout_spec": spec(mbg["vision_layout"].window_slot),
        "flat_pixel_ndim": mbf["pixel_values"].ndim, "grouped_pixel_ndim": mbg["pixel_values"].ndim,
        "grad_rel_grouped_vs_one": rel(g1, gg), "grad_rel_flat_vs_one": rel(g1, gf),
        "vision_grad_norm": float(sum(np.square(v).sum() for v in vision)) ** 0.5,
        "temp_flat": temp_flat, "temp_grouped": temp_grouped,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    _worker()
