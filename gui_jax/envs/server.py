"""HTTP env server: one backend (PhoneSim by default) behind sessions, for remote rollouts.

    python -m gui_jax.envs.server --backend phonesim --port 8765
    python -m gui_jax.envs.server --backend android --serial emulator-5554 --task "Settings|Turn on Wi-Fi"
    GUI_JAX_ENV_TOKEN=... python -m gui_jax.envs.server --host 0.0.0.0 --port 8765   # fleet member

Endpoints (JSON bodies; every one needs `Authorization: Bearer <token>` when a token is set):
    GET    /health                    -> {"status": "ok", "backend", "sessions", "max_sessions"}
    POST   /sessions                  {"options": {render, resolution, max_steps, tree}} -> 201 {"session_id"}
    POST   /sessions/{id}/reset       {"task": {"name": <template>, "seed": <int>}} -> {"observation"}
    POST   /sessions/{id}/step        {"action": {<gui_jax.core.Action fields>}} -> {"observation", "done", "info"}
    DELETE /sessions/{id}             -> {"closed": true}
An observation is {"screenshot_png": base64 PNG, "ui_xml", "ui_elements": [...], "current_app", "goal",
"screen_size"}. Errors are {"error": message, "field": dotted field name or null}: 401 bad/missing token,
404 unknown route or session, 409 session busy / no episode running, 413 body too large, 422 invalid
field, 429 session limit; 500/503 are server-side env faults (the client maps them to `EnvFailure`).

Safety: binds 127.0.0.1 unless --host says otherwise, and refuses a non-loopback address without a
bearer token (env var GUI_JAX_ENV_TOKEN or --token-file; compared in constant time). Bodies over
--max-body-bytes get 413 before they are parsed. Session ids are random 32-byte tokens; a session is
reachable only through its id. Idle sessions are reaped. Tasks are a registered template name plus
an int seed and actions are validated `Action` fields: nothing reaches a shell, a path or an import.

Fleet: docker/Dockerfile builds a slim image (numpy, pillow and the HTTP stack only) whose entry point
is this module; docker/compose.yaml starts N replicas on host ports P..P+N-1 with equal CPU/memory
quotas, a read-only filesystem, no capabilities, and the token as a compose secret (--token-file):

    python -c "import secrets; print(secrets.token_urlsafe(32))" > docker/env_token.txt
    ENV_FLEET_SIZE=16 ENV_BASE_PORT=8765 ENV_LAST_PORT=8780 docker compose -f docker/compose.yaml up -d --build

Trainers reach it with `gui_jax.envs.client.RemoteEnv` and pool it with `gui_jax.envs.pool.EnvPool`:
    EnvPool(lambda slot: RemoteEnv(f"http://HOST:{8765 + slot}", token), PoolConfig(n_active=8, n_standby=8))
On one host without docker, `ServerThread(ServerConfig(...))` runs a server in-process.
"""
from __future__ import annotations

import argparse
import dataclasses
import hmac
import ipaddress
import json
import os
import re
import secrets
import threading
import time
from contextlib import asynccontextmanager
from typing import Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from gui_jax.core.types import Action, ActionError, DIRECTIONS, STATUSES, SYSTEM_BUTTONS, ACTION_TYPES
from gui_jax.envs.backends import (MAX_SEED, Backend, EnvOptions, encode_observation, get_backend,
                                   json_safe)
from gui_jax.envs.base import EnvFailure

TOKEN_ENV_VAR = "GUI_JAX_ENV_TOKEN"
MIN_TOKEN_CHARS = 16
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


# ---- configuration and startup checks ------------------------------------------------------------

@dataclasses.dataclass
class ServerConfig:
    backend: str = "phonesim"
    host: str = "127.0.0.1"
    port: int = 8765
    token: Optional[str] = None
    max_sessions: int = 16
    idle_timeout_s: float = 600.0  # a session unused this long is closed
    max_body_bytes: int = 64 * 1024
    serials: tuple = ()            # android: the devices (one session per device)
    tasks: tuple = ()              # android: the goals served ('App|goal'), named 'android.<goal words>'
    connect_timeout_s: float = 10.0  # android: bound on reaching a device


def server_backend(cfg: ServerConfig) -> Backend:
    """The backend `cfg` serves: a registered one, or the android backend over cfg.serials."""
    if cfg.backend == "android":
        from gui_jax.envs.backends import android_backend
        return android_backend(cfg.serials, cfg.tasks, connect_timeout_s=cfg.connect_timeout_s)
    return get_backend(cfg.backend)


def check_devices(cfg: ServerConfig) -> None:
    """android: every serial answers uiautomator2's connect within cfg.connect_timeout_s, else DeviceError
    naming the device (the server refuses to start, in one line)."""
    if cfg.backend != "android":
        return
    from gui_jax.envs.android import AndroidDeviceEnv
    if not cfg.serials:
        raise BindRefused("--backend android needs at least one --serial (e.g. --serial emulator-5554)")
    for serial in cfg.serials:
        AndroidDeviceEnv.connect(serial, connect_timeout_s=cfg.connect_timeout_s).close()


class BindRefused(ValueError):
    """The server was asked to listen somewhere unsafe (non-loopback without a token)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname other than localhost: may resolve anywhere


def check_bind(host: str, token: Optional[str]) -> None:
    """Refuse a non-loopback bind without a bearer token, and weak tokens anywhere."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise BindRefused(f"bearer token too short ({len(token)} chars; need >= {MIN_TOKEN_CHARS})")
    if not is_loopback(host) and not token:
        raise BindRefused(f"refusing to listen on non-loopback address {host!r} without a bearer token "
                          f"(set {TOKEN_ENV_VAR} or pass --token-file)")


def load_token(token_file: Optional[str] = None, environ=None) -> Optional[str]:
    """The bearer token from --token-file (first line), else from GUI_JAX_ENV_TOKEN, else None."""
    if token_file:
        with open(token_file, encoding="utf-8") as f:
            tok = f.readline().strip()
        if not tok:
            raise BindRefused(f"token file {token_file!r} is empty")
        return tok
    tok = (os.environ if environ is None else environ).get(TOKEN_ENV_VAR, "").strip()
    return tok or None


# ---- request schemas -----------------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
_COORD = dict(ge=-100_000, le=100_000)


class OptionsModel(BaseModel):
    model_config = _STRICT
    render: StrictBool = True
    resolution: list[StrictInt] = Field([540, 1200], min_length=2, max_length=2)
    max_steps: StrictInt = Field(30, ge=1, le=500)
    tree: StrictBool = True

    def to_options(self) -> EnvOptions:
        w, h = self.resolution
        if not (16 <= w <= 4096 and 16 <= h <= 4096):
            raise _FieldError("options.resolution", f"resolution {w}x{h} outside 16..4096 pixels")
        return EnvOptions(self.render, (w, h), self.max_steps, self.tree)


class CreateSessionRequest(BaseModel):
    model_config = _STRICT
    options: OptionsModel = OptionsModel()


class TaskRefModel(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.\-]+$")
    seed: StrictInt = Field(ge=0, le=MAX_SEED)


class ResetRequest(BaseModel):
    model_config = _STRICT
    task: TaskRefModel


class ActionModel(BaseModel):
    model_config = _STRICT
    type: Literal[ACTION_TYPES]  # type: ignore[valid-type]
    x: Optional[StrictFloat] = Field(None, **_COORD)
    y: Optional[StrictFloat] = Field(None, **_COORD)
    x2: Optional[StrictFloat] = Field(None, **_COORD)
    y2: Optional[StrictFloat] = Field(None, **_COORD)
    direction: Optional[Literal[DIRECTIONS]] = None  # type: ignore[valid-type]
    text: Optional[str] = Field(None, max_length=4000)
    button: Optional[Literal[SYSTEM_BUTTONS]] = None  # type: ignore[valid-type]
    time: Optional[StrictFloat] = Field(None, ge=0, le=120)
    status: Optional[Literal[STATUSES]] = None  # type: ignore[valid-type]
    element: Optional[StrictInt] = Field(None, ge=0, le=100_000)
    action_desc: Optional[str] = Field(None, max_length=1000)


class StepRequest(BaseModel):
    model_config = _STRICT
    action: ActionModel


class _FieldError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


# ---- sessions ------------------------------------------------------------------------------------

class _HTTPError(Exception):
    def __init__(self, status: int, message: str, field: Optional[str] = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


@dataclasses.dataclass
class Session:
    id: str
    env: object
    options: EnvOptions
    last_used: float
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    in_episode: bool = False
    closed: bool = False


class SessionStore:
    """Live sessions of one backend; thread-safe. `clock` is injectable for reaping tests."""

    def __init__(self, backend: Backend, max_sessions: int, idle_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic):
        self.backend, self.max_sessions, self.idle_timeout_s, self.clock = backend, max_sessions, idle_timeout_s, clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.reaped = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, options: EnvOptions) -> Session:
        self.reap()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise _HTTPError(429, f"session limit reached ({self.max_sessions} open); close one first")
            sid = secrets.token_urlsafe(32)
            s = Session(sid, None, options, self.clock())
            self._sessions[sid] = s
        try:
            s.env = self.backend.make_env(options)
        except Exception:
            with self._lock:
                self._sessions.pop(sid, None)
            raise
        return s

    def get(self, sid: str) -> Session:
        s = self._sessions.get(sid) if _SESSION_ID.fullmatch(sid) else None
        if s is None or s.closed or s.env is None:
            raise _HTTPError(404, "unknown session id (never created, closed, or reaped after idling)",
                             "session_id")
        s.last_used = self.clock()
        return s

    def close(self, sid: str) -> None:
        with self._lock:
            s = self._sessions.pop(sid, None) if _SESSION_ID.fullmatch(sid) else None
        if s is None:
            raise _HTTPError(404, "unknown session id (never created, closed, or reaped after idling)",
                             "session_id")
        self._close_env(s)

    def _close_env(self, s: Session) -> None:
        s.closed = True
        try:
            if s.env is not None:
                s.env.close()
        except Exception:
            pass  # closing is best effort; the session is gone either way

    def reap(self) -> int:
        now = self.clock()
        with self._lock:
            stale = [s for s in self._sessions.values()
                     if now - s.last_used > self.idle_timeout_s and not s.lock.locked()]
            for s in stale:
                del self._sessions[s.id]
        for s in stale:
            self._close_env(s)
        self.reaped += len(stale)
        return len(stale)

    def close_all(self) -> None:
        with self._lock:
            items, self._sessions = list(self._sessions.values()), {}
        for s in items:
            self._close_env(s)


# ---- ASGI guards (run before any body parsing) ---------------------------------------------------

async def _send_json(send, status: int, body: dict, headers: tuple = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


class GuardMiddleware:
    """Bearer-token check (constant time) and a hard request-body size limit."""

    def __init__(self, app, token: Optional[str], max_body_bytes: int):
        self.app, self.max_body_bytes = app, max_body_bytes
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        if self.expected is not None:
            got = headers.get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                why = "missing Authorization header" if not got else "wrong bearer token"
                return await _send_json(send, 401, {"error": f"unauthorized: {why}", "field": "Authorization"},
                                        ((b"www-authenticate", b"Bearer"),))
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                n = int(declared)
            except ValueError:
                return await _send_json(send, 400, {"error": "Content-Length is not an integer",
                                                    "field": "Content-Length"})
            if n > self.max_body_bytes:
                return await _send_json(send, 413, {"error": f"request body of {n} bytes exceeds the limit of "
                                                             f"{self.max_body_bytes} bytes", "field": "body"})
        # Read the whole (bounded) body first, then replay it: a chunked body cannot sneak past the limit.
        chunks, size, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return await _send_json(send, 413, {"error": f"request body exceeds the limit of "
                                                             f"{self.max_body_bytes} bytes", "field": "body"})
            chunks.append(chunk)
            more = msg.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


# ---- the app -------------------------------------------------------------------------------------

def _validation_message(errors) -> tuple[str, Optional[str]]:
    e = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = [str(p) for p in e.get("loc", ()) if p != "body"]
    if e.get("type") == "json_invalid":
        return f"request body is not valid JSON: {e.get('ctx', {}).get('error', e.get('msg'))}", "body"
    field = ".".join(loc) or "body"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid field {field!r}: {e.get('msg', 'invalid')}{more}", field


def create_app(cfg: ServerConfig, clock: Callable[[], float] = time.monotonic):
    """The FastAPI app for `cfg` (token and size guards included). Does not check the bind address."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    backend = server_backend(cfg)
    max_sessions = min(cfg.max_sessions, len(cfg.serials)) if cfg.backend == "android" else cfg.max_sessions
    store = SessionStore(backend, max_sessions, cfg.idle_timeout_s, clock)
    names = frozenset(backend.task_names())
    started = time.monotonic()
    stop = threading.Event()

    def reaper():
        period = max(min(cfg.idle_timeout_s / 4, 30.0), 0.05)
        while not stop.wait(period):
            store.reap()

    @asynccontextmanager
    async def lifespan(app):
        threading.Thread(target=reaper, daemon=True, name="env-server-reaper").start()
        yield
        stop.set()
        store.close_all()

    app = FastAPI(title="gui_jax env server", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.exception_handler(_HTTPError)
    async def _http_error(request: Request, exc: _HTTPError):
        return JSONResponse({"error": exc.message, "field": exc.field}, status_code=exc.status)

    @app.exception_handler(_FieldError)
    async def _field_error(request: Request, exc: _FieldError):
        return JSONResponse({"error": f"invalid field {exc.field!r}: {exc.message}", "field": exc.field},
                            status_code=422)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        msg, field = _validation_message(exc.errors())
        return JSONResponse({"error": msg, "field": field}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _starlette(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": f"{exc.detail}: {request.method} {request.url.path}", "field": None},
                            status_code=exc.status_code)

    def _use(sid: str):
        s = store.get(sid)
        if not s.lock.acquire(blocking=False):
            raise _HTTPError(409, "session is busy with another request (one request at a time per session)")
        return s

    def _env_call(fn, *args):
        try:
            return fn(*args)
        except EnvFailure as e:
            raise _HTTPError(503, f"env failure: {e}") from None
        except Exception as e:  # a backend bug: report the type, not a trace
            raise _HTTPError(500, f"env error: {type(e).__name__}: {e}") from None

    @app.get("/health")
    def health():
        return {"status": "ok", "backend": backend.name, "sessions": len(store), "max_sessions": max_sessions,
                "uptime_s": round(time.monotonic() - started, 3)}

    @app.post("/sessions", status_code=201)
    def create_session(req: Optional[CreateSessionRequest] = None):
        opts = (req or CreateSessionRequest()).options.to_options()
        try:
            s = store.create(opts)
        except _HTTPError:
            raise
        except Exception as e:  # the backend could not build an env: a server-side fault
            raise _HTTPError(503, f"could not start a {backend.name} env: {type(e).__name__}: {e}") from None
        return {"session_id": s.id, "backend": backend.name, "options": dataclasses.asdict(opts)}

    @app.post("/sessions/{sid}/reset")
    def reset(sid: str, req: ResetRequest):
        if req.task.name not in names:
            raise _HTTPError(422, f"invalid field 'task.name': unknown task {req.task.name!r} for backend "
                                  f"{backend.name!r}", "task.name")
        s = _use(sid)
        try:
            try:
                task = backend.make_task(req.task.name, req.task.seed)
            except (KeyError, ValueError) as e:
                raise _HTTPError(422, f"invalid field 'task': {e}", "task") from None
            s.in_episode = False  # until the reset succeeds
            obs = _env_call(s.env.reset, task)
            s.in_episode = True
            return {"observation": encode_observation(obs)}
        finally:
            s.last_used = clock()
            s.lock.release()

    @app.post("/sessions/{sid}/step")
    def step(sid: str, req: StepRequest):
        try:
            action = Action.from_dict(req.action.model_dump(exclude_none=True))
        except ActionError as e:
            raise _HTTPError(422, f"invalid field 'action': {e}", "action") from None
        s = _use(sid)
        try:
            if not s.in_episode:
                raise _HTTPError(409, "no episode in progress in this session: call reset first")
            obs, done, info = _env_call(s.env.step, action)
            s.in_episode = not done
            return {"observation": encode_observation(obs), "done": bool(done), "info": json_safe(info)}
        finally:
            s.last_used = clock()
            s.lock.release()

    @app.delete("/sessions/{sid}")
    def close(sid: str):
        store.close(sid)
        return {"closed": True}

    guarded = GuardMiddleware(app, cfg.token, cfg.max_body_bytes)
    guarded.store, guarded.config = store, cfg  # for tests and monitoring
    return guarded


class ServerThread:
    """A uvicorn server on 127.0.0.1 in a daemon thread (tests, notebooks, single-host fleets).

        srv = ServerThread(ServerConfig(max_sessions=4)); env = RemoteEnv(srv.url); ...; srv.stop()
    """

    def __init__(self, cfg: ServerConfig, port: int = 0, start_timeout_s: float = 20.0):
        import socket

        import uvicorn
        check_bind(cfg.host, cfg.token)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((cfg.host, port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://{cfg.host}:{self.port}"
        self.app = create_app(cfg)
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="error", lifespan="on",
                                                    timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name=f"env-server:{self.port}")
        self.thread.start()
        deadline = time.monotonic() + start_timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"env server on port {self.port} did not start within {start_timeout_s}s")
            time.sleep(0.01)

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout_s)
        self.sock.close()


def parse_args(argv=None) -> tuple[ServerConfig, str]:
    """(ServerConfig, uvicorn log level) from the command line."""
    from gui_jax.envs.backends import backend_names
    p = argparse.ArgumentParser(description="gui_jax env server (see module docstring)")
    p.add_argument("--backend", default="phonesim", choices=sorted({*backend_names(), "android"}))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token-file", default=None, help=f"file whose first line is the bearer token "
                                                      f"(default: ${TOKEN_ENV_VAR})")
    p.add_argument("--max-sessions", type=int, default=16)
    p.add_argument("--idle-timeout-s", type=float, default=600.0)
    p.add_argument("--max-body-bytes", type=int, default=64 * 1024)
    p.add_argument("--serial", action="append", default=[], help="android: an adb serial (repeat for several "
                                                                  "devices; one session per device)")
    p.add_argument("--task", action="append", default=[], help="android: a goal to serve, 'App|goal' to launch "
                                                                "App first (repeat); clients name it android.<goal words>")
    p.add_argument("--connect-timeout-s", type=float, default=10.0, help="android: bound on reaching a device")
    p.add_argument("--log-level", default="warning")
    a = p.parse_args(argv)
    if a.backend != "android" and (a.serial or a.task):
        p.error(f"--serial / --task are android options; --backend is {a.backend!r}")
    token = load_token(a.token_file)
    cfg = ServerConfig(a.backend, a.host, a.port, token, a.max_sessions, a.idle_timeout_s, a.max_body_bytes,
                       serials=tuple(a.serial), tasks=tuple(a.task), connect_timeout_s=a.connect_timeout_s)
    return cfg, a.log_level


def main(argv=None) -> None:
    cfg, log_level = parse_args(argv)
    try:
        check_bind(cfg.host, cfg.token)
        check_devices(cfg)  # an offline device: one line, within --connect-timeout-s
        server_backend(cfg)  # bad --task values: one line
    except (BindRefused, EnvFailure, ValueError) as e:
        raise SystemExit(f"env server: {' '.join(str(e).split())}") from None
    import uvicorn
    uvicorn.run(create_app(cfg), host=cfg.host, port=cfg.port, log_level=log_level, server_header=False,
                date_header=False, timeout_keep_alive=30)


if __name__ == "__main__":
    main()
