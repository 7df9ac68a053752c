"""`dns://name:port` server URLs (issue 31, item 5): the env block's remote backend expands the name through the
resolver (stubbed here) into one RemoteEnv per replica, and resolves it again when the pool replaces a failed server,
taking the replica no other slot holds (a rescheduled pod's new address)."""
import pytest

from gui_jax.config_check import RunError
from gui_jax.envs.base import EnvFailure
from gui_jax.envs.client import RemoteEnv
from gui_jax.envs.factory import make_env_factory
from gui_jax.envs.pool import EnvPool, PoolConfig, ServerFleet
from gui_jax.train.online.config import env_block


class Resolver:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, host, port):
        self.calls.append((host, port))
        return list(self.answers[host])


def _leased_urls(pool, n):
    leases = [pool.lease(timeout_s=5) for _ in range(n)]
    out = {lease.slot: lease.env.url for lease in leases}
    for lease in leases:
        lease.release()
    return out


def test_dns_url_expands_to_one_remote_env_per_replica_and_re_resolves_on_failover():
    resolver = Resolver({"env-fleet.default.svc": ["10.0.0.3", "10.0.0.1", "10.0.0.2"]})
    env = env_block()
    env.backend, env.server_urls, env.n_envs = "remote", ("dns://env-fleet.default.svc:8765",), 3
    make_env = make_env_factory(env, render=False, max_steps=5, resolver=resolver)
    assert resolver.calls == [("env-fleet.default.svc", 8765)]  # resolved once, when the factory is made
    pool = EnvPool(make_env, PoolConfig(n_active=3, n_standby=0, health_interval_s=0, restart_backoff_s=0),
                   health=lambda e: None)  # the stub addresses serve nothing: no health call over the network
    try:
        assert pool.wait_ready(3, timeout_s=10) == 3
        urls = _leased_urls(pool, 3)
        assert urls == {0: "http://10.0.0.1:8765", 1: "http://10.0.0.2:8765", 2: "http://10.0.0.3:8765"}
        lease = pool.lease(timeout_s=5)
        while lease.slot != 1:  # the replica at 10.0.0.2 fails ...
            other = lease
            lease = pool.lease(timeout_s=5)
            other.release()
        resolver.answers["env-fleet.default.svc"] = ["10.0.0.1", "10.0.0.3", "10.0.0.9"]  # ... and comes back
        lease._fail(EnvFailure("connection refused"))
        lease.release()
        assert pool.wait_ready(3, timeout_s=10) == 3
        assert len(resolver.calls) == 2 and pool.stats()["restarts"] == 1
        assert sorted(_leased_urls(pool, 3).values()) == ["http://10.0.0.1:8765", "http://10.0.0.3:8765",
                                                         "http://10.0.0.9:8765"]
        assert all(isinstance(s.env, RemoteEnv) for s in pool._slots)
    finally:
        pool.close()


def test_fleet_mixes_plain_urls_and_names_and_refuses_unresolvable_names():
    fleet = ServerFleet(["http://127.0.0.1:8000/", "dns://pods:9000"], Resolver({"pods": ["fd00::2", "10.1.0.5"]}))
    assert fleet.replicas == ["http://127.0.0.1:8000", "http://10.1.0.5:9000", "http://[fd00::2]:9000"]
    assert [fleet.url_for(s) for s in range(4)] == fleet.replicas + ["http://127.0.0.1:8000"]
    with pytest.raises(EnvFailure, match="'none' resolves to no address"):
        ServerFleet(["dns://none:1"], Resolver({"none": []}))
    env = env_block()
    env.backend, env.server_urls = "androidworld", ("dns://gone.svc:5000",)

    def unknown(host, port):
        raise OSError(-2, "Name or service not known")
    with pytest.raises(RunError, match="config.env.server_urls = \\('dns://gone.svc:5000',\\): dns://gone.svc:5000: "
                                       "'gone.svc' does not resolve: OSError"):
        make_env_factory(env, render=False, max_steps=5, resolver=unknown)
