"""A stand-in Android device for tests: a loopback HTTP server speaking the uiautomator2 server's JSON-RPC
(/ping, /jsonrpc/0) and replaying recorded hierarchies, reached through a stand-in adb device, so the real
uiautomator2 client code builds every request. `connect_stand_ins(monkeypatch, {serial: StandIn})` makes
`uiautomator2.connect(serial)` reach them (any other serial is offline, as u2 reports it).

Run as a script it is the CLI with stand-ins: `python tests/support/android_device.py offline|hang
--config ...` runs `python -m gui_jax.main --config ...` with every device offline (or never answering).
"""
import base64
import hashlib
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import adbutils
import uiautomator2 as u2
from PIL import Image

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
        self.connects = 0
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


def connect_stand_ins(monkeypatch, devices: dict):
    """uiautomator2.connect(serial) → a Device on the stand-in for that serial; unknown serials are offline."""
    def connect(serial=None):
        if serial not in devices:
            raise u2.ConnectError(f"device {serial} not online")
        devices[serial].connects += 1
        return u2.Device(devices[serial].adb_device())
    monkeypatch.setattr(u2, "connect", connect)


if __name__ == "__main__":
    import sys

    from absl import app

    mode, sys.argv = sys.argv[1], [sys.argv[0]] + sys.argv[2:]

    def offline(serial=None):
        raise u2.ConnectError(f"device {serial} not online")

    def hang(serial=None):
        threading.Event().wait()  # never answers: the caller's bound ends the wait

    u2.connect = {"offline": offline, "hang": hang}[mode]
    from gui_jax import main as gmain
    app.run(gmain.main, flags_parser=gmain.parse_flags)
