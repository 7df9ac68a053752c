"""The android backend from the command line and the env server (issue 31, item 1): the CLI accepts
`--config.env.backend=android --config.env.serials='("emulator-5554",)'` for online_rl and env_eval and stops on an
offline device with one line within env.connect_timeout_s; `python -m gui_jax.envs.server --backend android
--serial emulator-5554` serves the stand-in device to RemoteEnv; bad env blocks fail naming the field."""
import os
import subprocess
import sys
import time

import pytest
from fastapi.testclient import TestClient

from gui_jax.config_check import ConfigError, RunError, check_config
from gui_jax.core.types import Action
from gui_jax.envs.android import parse_task_spec
from gui_jax.envs.client import EnvCapacityError, RemoteEnv
from gui_jax.envs.factory import check_reachable
from gui_jax.envs.server import create_app, main, parse_args
from gui_jax.jobs import load_config
from support.android_device import StandIn, connect_stand_ins

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tests", "support", "android_device.py")
ANDROID = ["--config.env.backend=android", "--config.env.serials=(\"emulator-5554\",)",
           "--config.env.tasks=(\"Settings|Turn on Wi-Fi\",)"]


def _cli(mode, args, tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, RUNNER, mode, *args, f"--workdir={tmp_path}/w"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    return p, time.monotonic() - t0


@pytest.mark.parametrize("recipe,extra", [("configs/grpo_online.py", []),
                                          ("configs/miniwob_eval.py", ["--config.eval.untrained=True"])])
def test_cli_takes_the_android_backend_and_an_offline_device_is_one_line(recipe, extra, tmp_path):
    p, _ = _cli("offline", ["--config", recipe, *ANDROID, *extra], tmp_path)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(lines) == 1 and lines[0] == (
        "error: config.env.serials: 'emulator-5554' is not reachable: device 'emulator-5554' is offline or "
        "unreachable: ConnectError: device emulator-5554 not online (env.connect_timeout_s = 10 s)"), lines


def test_a_device_that_never_answers_stops_the_job_within_the_timeout(tmp_path):
    """The connect attempt stuck on the dead device is abandoned: the process exits with the one line."""
    p, _ = _cli("hang", ["--config", "configs/miniwob_eval.py", *ANDROID, "--config.eval.untrained=True",
                         "--config.env.connect_timeout_s=1.0"], tmp_path)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1, p.stderr[-2000:]
    assert lines[0] == ("error: config.env.serials: 'emulator-5554' is not reachable: device 'emulator-5554': "
                        "uiautomator2 did not connect within 1 s (is it online in `adb devices`?) "
                        "(env.connect_timeout_s = 1 s)")


def test_reachability_is_bounded_by_the_configured_timeout(monkeypatch):
    import threading

    import uiautomator2 as u2
    gate = threading.Event()
    monkeypatch.setattr(u2, "connect", lambda serial=None: gate.wait())
    env = load_config("configs/grpo_online.py", **{"env.backend": "android", "env.serials": ("emulator-5554",),
                                                   "env.connect_timeout_s": 0.2}).env
    # only the timeout path writes this message; without the bound, connect would wait on the gate for ever
    with pytest.raises(RunError, match="did not connect within 0.2 s"):
        check_reachable(env)
    gate.set()


def test_env_server_serves_the_stand_in_device(monkeypatch):
    device = StandIn()
    connect_stand_ins(monkeypatch, {"emulator-5554": device})
    try:
        cfg, _ = parse_args(["--backend", "android", "--serial", "emulator-5554", "--task", "Settings|Turn on Wi-Fi",
                             "--connect-timeout-s", "5"])
        assert (cfg.backend, cfg.serials, cfg.tasks) == ("android", ("emulator-5554",), ("Settings|Turn on Wi-Fi",))
        with TestClient(create_app(cfg), raise_server_exceptions=False) as client:
            assert client.get("/health").json()["max_sessions"] == 1  # one session per device
            env = RemoteEnv("http://env", client=client)
            obs = env.reset(parse_task_spec("Settings|Turn on Wi-Fi", seed=3))
            assert obs.goal == "Turn on Wi-Fi" and [e.text for e in obs.ui_elements if e.text] == ["Wi-Fi"]
            assert obs.screen_size == (1080, 2400) and obs.screenshot.shape == (120, 54, 3)
            _, done, info = env.step(Action("click", x=540, y=375))
            assert not done and info["valid"] and ("click", [540, 375]) in device.calls
            _, done, info = env.step(Action("terminate", status="success"))
            assert done and info["success"] is None  # no rule check: the judge decides
            with pytest.raises(EnvCapacityError):  # the device is taken by the first session
                RemoteEnv("http://env", client=client).reset(parse_task_spec("Settings|Turn on Wi-Fi"))
            env.close()
            other = RemoteEnv("http://env", client=client)  # freed: the next session gets the device
            assert other.reset(parse_task_spec("Settings|Turn on Wi-Fi")).goal == "Turn on Wi-Fi"
            with pytest.raises(ValueError, match="unknown task 'android.open_chrome'"):
                other.reset(parse_task_spec("Open Chrome"))
    finally:
        device.server.shutdown()
    with pytest.raises(SystemExit, match="^env server: device 'emulator-5556' is offline or unreachable: "
                                         "ConnectError: device emulator-5556 not online$"):
        main(["--backend", "android", "--serial", "emulator-5556"])
    with pytest.raises(SystemExit):
        parse_args(["--backend", "phonesim", "--serial", "emulator-5554"])


@pytest.mark.parametrize("overrides,message", [
    ({"env.backend": "android"}, "config.env.serials = (): env.backend = 'android' needs at least one, e.g. "
                                 "('emulator-5554',)"),
    ({"env.backend": "androidworld"}, "config.env.server_urls = (): env.backend = 'androidworld' needs at least one"),
    ({"env.server_urls": ("http://127.0.0.1:8765",)}, "env.backend = 'phonesim' runs no env server; set "
                                                      "env.backend='remote'"),
    ({"env.backend": "remote", "env.server_urls": ("dns://env-fleet",)}, "'dns://env-fleet': a dns:// URL names a "
                                                                          "host and a port"),
    ({"env.backend": "adb"}, "config.env.backend = 'adb': unknown name; accepted: phonesim, remote, miniwob, "
                             "android, androidworld"),
])
def test_bad_env_blocks_name_the_field(overrides, message):
    config = load_config("configs/grpo_online.py", **overrides)
    with pytest.raises(ConfigError) as e:
        check_config(config)
    assert message in str(e.value) and "\n" not in str(e.value)
