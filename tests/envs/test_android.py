"""uiautomator2 backend against a scripted stand-in of a device: a loopback HTTP server speaking the
uiautomator2 server's JSON-RPC (/ping, /jsonrpc/0) and replaying recorded hierarchies, reached through a
stand-in adb device. The real uiautomator2 client code builds every request."""
import base64
import hashlib
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import adbutils
import pytest
import uiautomator2 as u2
from PIL import Image

from gui_jax.core.types import Action
from gui_jax.envs.android import AndroidDeviceEnv, AndroidTask, DeviceError
from gui_jax.envs.base import Env

HOME_XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.launcher" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]">
<node index="0" text="Settings" resource-id="" class="android.widget.TextView" package="com.android.launcher" content-desc="Settings" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="true" password="false" selected="false" bounds="[100,1800][300,2000]" />
</node></hierarchy>"""
SETTINGS_XML = HOME_XML.replace("com.android.launcher", "com.android.settings").replace(
    'text="Settings"', 'text="Wi-Fi"').replace('content-desc="Settings"', 'content-desc=""').replace(
    "[100,1800][300,2000]", "[0,300][1080,450]")


def _jar_md5():
    with u2.core.with_package_resource("assets/u2.jar") as p:
        return hashlib.md5(open(p, "rb").read()).hexdigest()


class StandIn:
    """The device side: JSON-RPC calls are recorded; dumpWindowHierarchy replays the screen the last actions led
    to (home → the Settings app once it is launched); takeScreenshot returns a JPEG."""

    def __init__(self, hang=False):
        self.calls, self.shell, self.screen, self.hang, self.clipboard = [], [], HOME_XML, hang, None
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, body: bytes):
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(b"pong" if self.path == "/ping" else b"")

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.calls.append((req["method"], req["params"]))
                if stand_in.hang and req["method"] != "dumpWindowHierarchy":
                    time.sleep(5)
                self._send(json.dumps({"jsonrpc": "2.0", "id": req["id"],
                                       "result": stand_in.answer(req["method"], req["params"])}).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, method, params):
        if method == "dumpWindowHierarchy":
            return self.screen
        if method == "takeScreenshot":
            buf = io.BytesIO()
            Image.new("RGB", (54, 120), (200, 10, 10)).save(buf, format="JPEG")
            return base64.b64encode(buf.getvalue()).decode()
        if method == "setClipboard":
            self.clipboard = params[1] if len(params) > 1 else params[0]
            return True
        if method == "getClipboard":
            return self.clipboard
        return True

    def adb_device(self):
        stand_in = self

        class StandInAdbDevice(adbutils.AdbDevice):
            def __init__(self):  # no adb server: the stand-in answers shell and connections itself
                self._serial, self._transport_id = "stand-in", None

            @property
            def serial(self):
                return "stand-in"

            def create_connection(self, network, address):
                return socket.create_connection(("127.0.0.1", stand_in.server.server_address[1]), timeout=10)

            def shell(self, cmd, *a, **kw):
                cmd = " ".join(cmd) if isinstance(cmd, (list, tuple)) else cmd
                stand_in.shell.append(cmd)
                if "md5" in cmd:
                    return f"{_jar_md5()}  /data/local/tmp/u2.jar"
                if cmd.startswith("monkey") and "com.android.settings" in cmd:
                    stand_in.screen = SETTINGS_XML
                return ""

            def shell2(self, cmd, *a, **kw):
                return adbutils.ShellReturn(command=cmd, returncode=0, output=self.shell(cmd))

            def window_size(self, *a, **kw):
                return adbutils.WindowSize(1080, 2400)

        return StandInAdbDevice()


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
        t0 = time.monotonic()
        with pytest.raises(DeviceError, match="click did not answer within 1 s"):
            env.step(Action("click", x=1, y=1))
        assert time.monotonic() - t0 < 3
    finally:
        s.server.shutdown()


def test_offline_device_is_a_clear_error(monkeypatch):
    def offline(serial):
        raise u2.ConnectError(f"device {serial} not online")
    monkeypatch.setattr(u2, "connect", offline)
    with pytest.raises(DeviceError, match="'emulator-5554' is offline or unreachable: ConnectError"):
        AndroidDeviceEnv.connect("emulator-5554", connect_timeout_s=2)
