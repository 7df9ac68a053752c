"""uiautomator2 backend against a scripted stand-in of a device (tests/support/android_device.py: a loopback
HTTP server speaking the uiautomator2 server's JSON-RPC and replaying recorded hierarchies, reached through a
stand-in adb device). The real uiautomator2 client code builds every request."""

import pytest
import uiautomator2 as u2

from gui_jax.core.types import Action
from gui_jax.envs.android import AndroidDeviceEnv, AndroidTask, DeviceError
from gui_jax.envs.base import Env
from support.android_device import SETTINGS_XML, StandIn


@pytest.fixture
def stand_in():
    s = StandIn()
    yield s
    s.server.shutdown()


def test_reset_and_steps_issue_the_right_rpc_calls(stand_in):
    device = u2.Device(stand_in.adb_device())
    env = AndroidDeviceEnv(device, settle_s=0, call_timeout_s=10)
    assert isinstance(env, Env)
    wifi_on = {"v": False}
    task = AndroidTask("Turn on Wi-Fi", app="Settings", name="wifi", check=lambda dev, ans: wifi_on["v"])
    obs = env.reset(task)
    assert any("monkey -p com.android.settings" in c for c in stand_in.shell)  # the app was launched
    assert [e.text for e in obs.ui_elements if e.text] == ["Wi-Fi"] and obs.ui_xml == SETTINGS_XML
    assert obs.screen_size == (1080, 2400) and obs.screenshot.shape == (120, 54, 3)
    stand_in.calls.clear()
    env.step(Action("click", x=540, y=375))
    env.step(Action("long_press", x=10, y=20, time=2.0))
    env.step(Action("scroll", direction="down"))
    env.step(Action("system_button", button="Back"))
    rpc = [(m, p) for m, p in stand_in.calls if m not in ("dumpWindowHierarchy", "takeScreenshot")]
    assert rpc[0] == ("click", [540, 375])
    assert rpc[1] == ("click", [10, 20, 2000])                      # long click = click with a duration in ms
    assert rpc[2][0] == "swipe" and rpc[2][1][:4] == [540, 1200, 540, 0]  # content down: finger to the top edge
    assert rpc[3] == ("pressKey", ["back"])
    stand_in.calls.clear()
    env.step(Action("click", text="wi-fi"))             # by label: the element's centre
    env.step(Action("click", element=1))                # by element index (document order)
    _, _, info = env.step(Action("click", text="Bluetooth"))
    rpc = [(m, p) for m, p in stand_in.calls if m not in ("dumpWindowHierarchy", "takeScreenshot")]
    wifi = next(e for e in obs.ui_elements if e.text == "Wi-Fi")
    first = next(e for e in obs.ui_elements if e.index == 1)
    assert rpc[:2] == [("click", list(wifi.center)), ("click", list(first.center))] and len(rpc) == 2
    assert info["valid"] is False and "label 'Bluetooth' names no element" in info["reason"]
    _, done, info = env.step(Action("open", text="NoSuchApp"))
    assert not done and info["valid"] is False and "unknown app" in info["reason"]
    wifi_on["v"] = True
    _, done, info = env.step(Action("terminate", status="success"))
    assert done and info["success"] is True
    env.close()


def test_a_task_without_a_check_leaves_success_to_a_judge(stand_in):
    env = AndroidDeviceEnv(u2.Device(stand_in.adb_device()), settle_s=0, max_steps=2)
    env.reset(AndroidTask("Look around"))
    env.step(Action("answer", text="42"))
    _, done, info = env.step(Action("wait", time=0.01))
    assert done and info["truncated"] and info["success"] is None and info["answer"] == "42"


def test_a_hanging_device_is_a_bounded_device_error():
    s = StandIn()
    try:
        env = AndroidDeviceEnv(u2.Device(s.adb_device()), settle_s=0, call_timeout_s=1)
        env.reset(AndroidTask("x"))
        s.hang = True  # the device stops answering mid-episode
        with pytest.raises(DeviceError, match="click did not answer within 1 s"):
            env.step(Action("click", x=1, y=1))
    finally:
        s.server.shutdown()


def test_offline_device_is_a_clear_error(monkeypatch):
    def offline(serial):
        raise u2.ConnectError(f"device {serial} not online")
    monkeypatch.setattr(u2, "connect", offline)
    with pytest.raises(DeviceError, match="'emulator-5554' is offline or unreachable: ConnectError"):
        AndroidDeviceEnv.connect("emulator-5554", connect_timeout_s=2)
