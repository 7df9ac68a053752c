"""A stand-in of AndroidWorld's HTTP env server on a loopback port: its endpoints, answering with the responses
in androidworld_responses.json. A task counts as solved once the episode clicked its solving point; the
screenshot's grey level counts the actions executed since the last reset. `fail_execute=k` answers the first k
/execute_action calls with HTTP 500 (an emulator fault the pool must absorb).

    with AndroidWorldStandIn() as server:
        env = AndroidWorldEnv(server.url)
"""
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

RESPONSES = json.load(open(os.path.join(os.path.dirname(__file__), "androidworld_responses.json")))


class AndroidWorldStandIn:
    def __init__(self, fail_execute: int = 0):
        self.calls: list[tuple[str, dict]] = []
        self.fail_execute = fail_execute
        self.lock = threading.Lock()
        self.task, self.solved, self.actions = None, False, 0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self, method):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body = None
                if int(self.headers.get("Content-Length") or 0):
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, data = stand_in.answer(f"{method} {url.path}", query, body)
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, route: str, query: dict, body) -> tuple[int, dict]:
        with self.lock:
            self.calls.append((route, dict(query, **({"action": body} if body is not None else {}))))
            if route == "POST /reset":
                self.solved, self.actions = False, 0
            elif route == "POST /task/initialize":
                if query["task_type"] not in RESPONSES["GET /task/goal"]:
                    return 404, {"detail": f"task {query['task_type']} not in the suite"}
                self.task = (query["task_type"], int(query["task_idx"]))
            elif route == "POST /execute_action":
                if self.fail_execute > 0:
                    self.fail_execute -= 1
                    return 500, {"detail": "emulator crashed"}
                self.actions += 1
                point = RESPONSES["solving_click"][self.task[0]]
                if body.get("action_type") == "click" and [body.get("x"), body.get("y")] == point:
                    self.solved = True
            elif route == "GET /task/goal":
                return 200, RESPONSES[route][query["task_type"]][int(query["task_idx"])]
            elif route == "GET /task/score":
                return 200, RESPONSES[route]["solved" if self.solved else "unsolved"]
            elif route == "GET /suite/task_length":
                return 200, RESPONSES[route][query["task_type"]]
            elif route == "GET /screenshot":
                shape = RESPONSES[route]
                row = [[min(self.actions * 40, 255)] * shape["channels"]] * shape["width"]
                return 200, {"pixels": [row] * shape["height"]}
            if route not in RESPONSES:
                return 404, {"detail": f"Not Found: {route}"}
            return 200, RESPONSES[route]

    def routes(self) -> list[str]:
        return [r for r, _ in self.calls]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
