"""Env server + RemoteEnv: hostile requests get clear 4xx answers, remote == in-process PhoneSim."""
import json
import threading
import time
from collections import Counter

import numpy as np
import pytest
from fastapi.testclient import TestClient

from gui_jax.core.types import Action
from gui_jax.envs.backends import Backend, EnvOptions, get_backend, register_backend
from gui_jax.envs.base import EnvFailure
from gui_jax.envs.client import (EnvConnectionError, EnvServerError, EnvSessionLost, EnvTimeoutError,
                                 RemoteEnv)
from gui_jax.envs.server import (BindRefused, ServerConfig, ServerThread, check_bind, create_app,
                                 load_token, main)
from gui_jax.envs.sim import PhoneSim, expert_actions, make_task

TOKEN = "t0ken-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TASKS = [("settings.wifi_on", 3), ("clock.new_alarm", 1), ("contacts.phone_answer", 2)]


def _client(**kw):
    cfg = ServerConfig(token=TOKEN, max_sessions=kw.pop("max_sessions", 64), max_body_bytes=4096, **kw)
    return TestClient(create_app(cfg), raise_server_exceptions=False)


def _new_session(c, **options):
    r = c.post("/sessions", json={"options": {"render": False, **options}}, headers=AUTH)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def _oracle_episode(env, template, seed):
    task = make_task(template, seed)
    env.reset(task)
    info = {}
    for st in expert_actions(task):
        _, done, info = env.step(st.action)
    return done, info.get("success")


def _hostile_requests(sid, other_sid):
    """(method, path, kwargs, expected status, word the error must contain) for many bad requests."""
    reqs = []
    good_action = {"type": "click", "x": 10, "y": 20}
    # missing / wrong / malformed tokens
    for hdr in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": f"Basic {TOKEN}"},
                {"Authorization": "Bearer "}, {"Authorization": f"bearer {TOKEN[:-1]}"}]:
        for method, path, body in [("GET", "/health", None), ("POST", "/sessions", {}),
                                   ("POST", f"/sessions/{sid}/reset", {"task": {"name": "settings.wifi_on", "seed": 1}}),
                                   ("POST", f"/sessions/{sid}/step", {"action": good_action}),
                                   ("DELETE", f"/sessions/{sid}", None)]:
            for _ in range(4):
                reqs.append((method, path, {"json": body, "headers": hdr}, 401, "unauthorized"))
    # bad JSON
    bad_json = [b"{", b"{bad", b"{'a': 1}", b'{"task": }', b'{"action": {"type": "click",}}', b"\xff\xfe",
                b"[1, 2", b'{"a": NaN', b"nul", b'"unterminated', b'{"task": {"name": "x", "seed": 1}', b"}{",
                b'{"action": [}', b"\x00\x01\x02", b'{"a":1}{"b":2}']
    for body in bad_json:
        for path in (f"/sessions/{sid}/reset", f"/sessions/{sid}/step", "/sessions"):
            for _ in range(3):
                reqs.append(("POST", path, {"content": body, "headers": {**AUTH, "Content-Type": "application/json"}},
                             422, "JSON"))
    # bodies at the edge of what json.loads takes: deep nesting (400), a 3000-digit int, a non-finite number
    reset, step = f"/sessions/{sid}/reset", f"/sessions/{sid}/step"
    for body, paths, want, word in [
            (b"[" * 2000 + b"]" * 2000, (reset, step), 400, "parsing the body"),
            (b'{"task": {"name": "settings.wifi_on", "seed": ' + b"9" * 3000 + b"}}", (reset,), 422, "task.seed"),
            (b'{"action": {"type": "click", "x": 1e999, "y": 1}}', (step,), 422, "finite")]:
        for path in paths:
            for _ in range(3):
                reqs.append(("POST", path, {"content": body, "headers": {**AUTH, "Content-Type": "application/json"}},
                             want, word))
    # wrong types / values in the action
    bad_actions = [
        ({"type": 3}, "action.type"), ({"type": "fly"}, "action.type"), ({"type": "click"}, "'x'"),
        ({"type": "click", "x": "10", "y": 2}, "action.x"), ({"type": "click", "x": True, "y": 2}, "action.x"),
        ({"type": "click", "x": [1], "y": 2}, "action.x"), ({"type": "click", "x": 1e12, "y": 2}, "action.x"),
        ({"type": "click", "x": 1, "y": {"a": 1}}, "action.y"), ({"type": "scroll", "direction": "sideways"},
                                                                  "action.direction"),
        ({"type": "type", "text": 5}, "action.text"), ({"type": "type", "text": "a" * 4001}, "action.text"),
        ({"type": "system_button", "button": "Power"}, "action.button"),
        ({"type": "terminate", "status": "maybe"}, "action.status"), ({"type": "terminate"}, "'status'"),
        ({"type": "wait", "time": -1}, "action.time"), ({"type": "wait", "time": "1"}, "action.time"),
        ({"type": "click", "element": -1}, "action.element"), ({"type": "click", "element": 1.5}, "action.element"),
        ({"type": "click", "x": 1, "y": 2, "shell": "rm -rf /"}, "action.shell"),
        ({"type": "click", "x": 1, "y": 2, "__class__": "x"}, "action.__class__"),
        ({"x": 1, "y": 2}, "action.type"), ({"type": "open"}, "'text'"), ({"type": None}, "action.type"),
        ({"type": "swipe", "x": 1, "y": 2}, "'x2'"), ({"type": "long_press", "x": "a", "y": 1}, "action.x"),
    ]
    for action, word in bad_actions:
        for _ in range(4):
            reqs.append(("POST", f"/sessions/{sid}/step", {"json": {"action": action}, "headers": AUTH}, 422, word))
    for body, word in [({}, "action"), ({"act": good_action}, "act"), ({"action": "click"}, "action"),
                       ({"action": None}, "action"), ([good_action], "body"), ("click", "body"), (5, "body")]:
        for _ in range(6):
            reqs.append(("POST", f"/sessions/{sid}/step", {"json": body, "headers": AUTH}, 422, word))
    # traversal / injection strings and wrong types in task name and seed
    names = ["../../etc/passwd", "..", "/etc/passwd", "..\\..\\windows\\win.ini", "settings.wifi_on/../../x",
             "$(reboot)", "`id`", "settings.wifi_on; rm -rf /", "%2e%2e%2f", "file:///etc/passwd", "",
             "a" * 300, "settings.wifi_on\n", "settings.WIFI_ON", "os.system", "__import__", "gui_jax.envs.server",
             "nonexistent.template", "\u202esettings", "settings.wifi_on\x00"]
    for name in names:
        for _ in range(3):
            reqs.append(("POST", f"/sessions/{sid}/reset",
                         {"json": {"task": {"name": name, "seed": 1}}, "headers": AUTH}, 422, "task.name"))
    for seed in ["1", 1.5, -1, 2**40, None, [1], True]:
        for _ in range(4):
            reqs.append(("POST", f"/sessions/{sid}/reset",
                         {"json": {"task": {"name": "settings.wifi_on", "seed": seed}}, "headers": AUTH},
                         422, "task.seed"))
    for body, word in [({}, "task"), ({"task": "settings.wifi_on"}, "task"), ({"task": {"seed": 1}}, "task.name"),
                       ({"task": {"name": "settings.wifi_on"}}, "task.seed"),
                       ({"task": {"name": "settings.wifi_on", "seed": 1, "path": "/etc"}}, "task.path")]:
        for _ in range(4):
            reqs.append(("POST", f"/sessions/{sid}/reset", {"json": body, "headers": AUTH}, 422, word))
    # bad session options
    for opts, word in [({"render": "yes"}, "options.render"), ({"resolution": [1, 2, 3]}, "options.resolution"),
                       ({"resolution": [100000, 100]}, "options.resolution"), ({"max_steps": 0}, "options.max_steps"),
                       ({"max_steps": 10**6}, "options.max_steps"), ({"tree": 1}, "options.tree"),
                       ({"backend": "shell"}, "options.backend")]:
        for _ in range(4):
            reqs.append(("POST", "/sessions", {"json": {"options": opts}, "headers": AUTH}, 422, word))
    # oversized bodies: declared and chunked
    for n in (4097, 10_000, 1_000_000):
        for path in (f"/sessions/{sid}/step", f"/sessions/{sid}/reset", "/sessions"):
            for _ in range(3):
                reqs.append(("POST", path, {"content": b"{" + b" " * n + b"}", "headers": AUTH}, 413, "exceeds"))
    for path in (f"/sessions/{sid}/step", "/sessions"):
        for _ in range(5):
            chunks = (b" " * 1000 for _ in range(10))
            reqs.append(("POST", path, {"content": chunks, "headers": AUTH}, 413, "exceeds"))
    # unknown, foreign (closed) and traversal session ids
    fake_ids = ["x" * 43, "0" * 16, other_sid, "", "..", "../../etc/passwd", "%2e%2e", "a" * 100, "a b",
                sid[:-1] + ("A" if sid[-1] != "A" else "B")]
    for fid in fake_ids:
        for method, suffix, body in [("POST", "/reset", {"task": {"name": "settings.wifi_on", "seed": 1}}),
                                     ("POST", "/step", {"action": good_action}), ("DELETE", "", None)]:
            if fid == "" and suffix == "":
                want, word = 405, "Method Not Allowed"  # DELETE /sessions
            elif fid in ("", "..", "../../etc/passwd"):
                want, word = 404, "Not Found"  # no such route after URL normalisation
            else:
                want, word = 404, "unknown session id"
            for _ in range(3):
                reqs.append((method, f"/sessions/{fid}{suffix}", {"json": body, "headers": AUTH}, want, word))
    # wrong methods and unknown routes
    for method, path in [("GET", f"/sessions/{sid}/step"), ("PUT", "/sessions"), ("GET", "/sessions"),
                         ("PATCH", f"/sessions/{sid}"), ("GET", "/admin"), ("GET", "/docs"),
                         ("GET", "/openapi.json"), ("POST", "/health")]:
        for _ in range(3):
            expected = 404 if path in ("/admin", "/docs", "/openapi.json") else 405
            reqs.append((method, path, {"headers": AUTH}, expected, "ot"))
    # seeded fuzz: one wrong-typed field in an otherwise valid action; random traversal-ish task names
    rng = np.random.default_rng(0)
    wrong_for_number = ["a", "1", [], [1, 2], {}, {"$gt": 0}, True, False, "NaN", "../x"]
    wrong_for_string = [1, 2.5, [], ["a"], {}, {"a": "b"}, True]
    fields = {"x": wrong_for_number, "y": wrong_for_number, "x2": wrong_for_number, "y2": wrong_for_number,
              "time": wrong_for_number, "element": wrong_for_number + [0.5, -3],
              "text": wrong_for_string, "action_desc": wrong_for_string, "direction": wrong_for_string + ["north"],
              "button": wrong_for_string + ["../../etc/passwd"], "status": wrong_for_string + ["done"],
              "type": wrong_for_string + ["rm -rf /", "../click"]}
    names = list(fields)
    for _ in range(250):
        f = names[rng.integers(len(names))]
        bad = fields[f][rng.integers(len(fields[f]))]
        reqs.append(("POST", f"/sessions/{sid}/step",
                     {"json": {"action": {"type": "click", "x": 1, "y": 2, f: bad}}, "headers": AUTH},
                     422, f"action.{f}"))
    parts = ["..", "/", "\\", "etc", "passwd", "~", "%2f", ";", "|", "&", " ", "*", "?", "settings", "wifi_on"]
    for _ in range(120):
        name = "".join(parts[rng.integers(len(parts))] for _ in range(rng.integers(1, 7)))
        if name in ("settings", "wifi_on"):
            name += "/"
        reqs.append(("POST", f"/sessions/{sid}/reset",
                     {"json": {"task": {"name": name, "seed": int(rng.integers(0, 100))}}, "headers": AUTH},
                     422, "task.name"))
    # step before any reset (valid action, valid session): 409
    for _ in range(10):
        reqs.append(("POST", f"/sessions/{sid}/step", {"json": {"action": good_action}, "headers": AUTH}, 409,
                     "reset"))
    return reqs


def test_server_survives_hostile_requests_then_serves_episodes():
    with _client() as c:
        sid = _new_session(c)
        other = _new_session(c)
        assert c.delete(f"/sessions/{other}", headers=AUTH).json() == {"closed": True}
        reqs = _hostile_requests(sid, other)
        assert len(reqs) >= 1000
        hist, failures = Counter(), []

        def fire(batch):
            for method, path, kw, want, word in batch:
                r = c.request(method, path, **kw)
                hist[r.status_code] += 1
                body = r.json()
                if r.status_code != want or word.lower() not in body.get("error", "").lower():
                    failures.append((method, path, str(kw)[:120], r.status_code, body))

        # concurrent clients: four threads fire interleaved slices of the hostile requests while two
        # others run real episodes in their own sessions
        results = []

        def episodes():
            env = RemoteEnv("http://testserver", token=TOKEN, client=c, options=EnvOptions(render=False))
            results.append([_oracle_episode(env, *t) for t in TASKS])
            env.close()

        # the 409s (step before reset) all hit one session: fired serially so that they cannot collide
        # with each other (a collision is a different 409: "session is busy")
        fire([r for r in reqs if r[3] == 409])
        concurrent = [r for r in reqs if r[3] != 409]
        threads = [threading.Thread(target=fire, args=(concurrent[i::4],)) for i in range(4)]
        threads += [threading.Thread(target=episodes) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not failures, failures[:5]
        assert sum(hist.values()) == len(reqs) and all(400 <= s < 500 for s in hist), hist
        print(f"\nhostile requests: {len(reqs)}; status histogram: {dict(sorted(hist.items()))}")
        assert results == [[(True, True)] * len(TASKS)] * 2
        # afterwards: correct episodes in the session that absorbed the hostile traffic and a fresh one
        env = RemoteEnv("http://testserver", token=TOKEN, client=c, options=EnvOptions(render=False))
        assert [_oracle_episode(env, *t) for t in TASKS] == [(True, True)] * len(TASKS)
        r = c.post(f"/sessions/{sid}/reset", json={"task": {"name": "settings.wifi_on", "seed": 3}}, headers=AUTH)
        assert r.status_code == 200 and r.json()["observation"]["goal"] == make_task("settings.wifi_on", 3).goal
        assert c.get("/health", headers=AUTH).json()["sessions"] == 2


def test_session_limit_reaping_and_isolation():
    now = [0.0]
    app = create_app(ServerConfig(token=TOKEN, max_sessions=2, idle_timeout_s=10.0), clock=lambda: now[0])
    c = TestClient(app)
    a, b = _new_session(c), _new_session(c)
    r = c.post("/sessions", json={}, headers=AUTH)
    assert r.status_code == 429 and "limit" in r.json()["error"]
    # one session's episode does not leak into the other
    c.post(f"/sessions/{a}/reset", json={"task": {"name": "settings.wifi_on", "seed": 3}}, headers=AUTH)
    r = c.post(f"/sessions/{b}/step", json={"action": {"type": "wait", "time": 1}}, headers=AUTH)
    assert r.status_code == 409
    now[0] = 5.0
    c.post(f"/sessions/{a}/step", json={"action": {"type": "wait", "time": 1}}, headers=AUTH)  # keeps a alive
    now[0] = 12.0
    assert app.store.reap() == 1  # b idled 12 s > 10 s
    assert c.post(f"/sessions/{b}/step", json={"action": {"type": "wait", "time": 1}},
                  headers=AUTH).status_code == 404
    assert _new_session(c)  # the reaped slot is free again
    r = c.post(f"/sessions/{a}/step", json={"action": {"type": "wait", "time": 1}}, headers=AUTH)
    assert r.status_code == 200 and r.json()["info"]["step"] == 2
    # a second request while the session is busy is refused, not interleaved
    with app.store.get(a).lock:
        r = c.post(f"/sessions/{a}/step", json={"action": {"type": "wait", "time": 1}}, headers=AUTH)
    assert r.status_code == 409 and "busy" in r.json()["error"]


def test_bind_check_and_token_loading(tmp_path, monkeypatch):
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("localhost", None)
    for host in ("0.0.0.0", "192.168.1.5", "::", "example.com"):
        with pytest.raises(BindRefused, match="non-loopback"):
            check_bind(host, None)
        check_bind(host, TOKEN)
    with pytest.raises(BindRefused, match="too short"):
        check_bind("0.0.0.0", "short")
    monkeypatch.delenv("GUI_JAX_ENV_TOKEN", raising=False)
    with pytest.raises(SystemExit, match="non-loopback"):  # the CLI refuses before binding anything
        main(["--host", "0.0.0.0", "--port", "1"])
    f = tmp_path / "tok"
    f.write_text(TOKEN + "\n")
    assert load_token(str(f), environ={}) == TOKEN
    assert load_token(None, environ={"GUI_JAX_ENV_TOKEN": " abc "}) == "abc"
    assert load_token(None, environ={}) is None


def _assert_same_obs(a, b):
    assert a.screenshot.dtype == b.screenshot.dtype and a.screenshot.shape == b.screenshot.shape
    assert a.screenshot.tobytes() == b.screenshot.tobytes()
    assert a.ui_xml == b.ui_xml and a.ui_elements == b.ui_elements
    assert (a.current_app, a.goal, tuple(a.screen_size)) == (b.current_app, b.goal, tuple(b.screen_size))


def test_remote_phonesim_matches_in_process_over_real_http():
    srv = ServerThread(ServerConfig(token=TOKEN, max_sessions=4))
    try:
        opts = EnvOptions(render=True, resolution=(216, 480), max_steps=30)
        env = RemoteEnv(srv.url, token=TOKEN, timeout_s=30, options=opts)
        assert env.health()["backend"] == "phonesim"
        sim = PhoneSim(render=True, resolution=(216, 480), max_steps=30)
        for template, seed in TASKS:
            task = make_task(template, seed)
            _assert_same_obs(env.reset(task), sim.reset(task))
            actions = [st.action for st in expert_actions(task)]
            # an invalid action and an answer in the middle exercise the other info paths
            actions = actions[:1] + [Action("click", x=-5.0, y=-5.0), Action("answer", text="x")] + actions[1:]
            for a in actions:
                (ro, rd, ri), (lo, ld, li) = env.step(a), sim.step(a)
                _assert_same_obs(ro, lo)
                assert (rd, ri) == (ld, li)
            assert rd and ri["success"] is True and ri.get("reward", 1.0) == li.get("reward", 1.0)
        env.close()
        # a foreign/closed session is lost, not silently recreated mid-episode
        env2 = RemoteEnv(srv.url, token=TOKEN, timeout_s=30, options=opts)
        env2.reset(make_task("settings.wifi_on", 3))
        srv.app.store.close(env2.session_id)
        with pytest.raises(EnvSessionLost):
            env2.step(Action("wait", time=1.0))
        env2.reset(make_task("settings.wifi_on", 3))  # a new episode opens a fresh session
        with pytest.raises(ValueError, match="unauthorized"):
            RemoteEnv(srv.url, token="wrong-token-0123456789").reset(make_task("settings.wifi_on", 3))
    finally:
        srv.stop()
    with pytest.raises(EnvConnectionError):
        RemoteEnv(srv.url, token=TOKEN, timeout_s=2).reset(make_task("settings.wifi_on", 3))


class _SlowOrBrokenEnv(PhoneSim):
    def step(self, action):
        if action.type == "wait" and action.time == 7:
            time.sleep(3.0)
        if action.type == "wait" and action.time == 9:
            raise EnvFailure("emulator vanished")
        if action.type == "wait" and action.time == 11:
            raise ZeroDivisionError("backend bug")
        return super().step(action)


def test_client_maps_timeouts_and_5xx_to_env_failures():
    ps = get_backend("phonesim")
    register_backend(Backend("test_slow", lambda o: _SlowOrBrokenEnv(render=False), ps.make_task, ps.task_names))
    srv = ServerThread(ServerConfig(backend="test_slow"))
    try:
        env = RemoteEnv(srv.url, timeout_s=1.0, reset_timeout_s=30, options=EnvOptions(render=False))
        env.reset(make_task("settings.wifi_on", 3))
        with pytest.raises(EnvTimeoutError):
            env.step(Action("wait", time=7.0))
        time.sleep(3.0)  # let the slow call finish server-side (the session is busy until then)
        with pytest.raises(EnvServerError, match="503.*emulator vanished"):
            env.step(Action("wait", time=9.0))
        with pytest.raises(EnvServerError, match="500.*ZeroDivisionError"):
            env.step(Action("wait", time=11.0))
        _, done, info = env.step(Action("wait", time=1.0))
        assert info["valid"] and not done
        env.close()
    finally:
        srv.stop()


def test_observation_round_trip_is_exact():
    from gui_jax.envs.backends import decode_observation, encode_observation
    sim = PhoneSim(render=True, resolution=(108, 240))
    obs = sim.reset(make_task("clock.new_alarm", 1))
    back = decode_observation(json.loads(json.dumps(encode_observation(obs))))
    _assert_same_obs(back, obs)
    assert np.array_equal(back.screenshot, obs.screenshot)
