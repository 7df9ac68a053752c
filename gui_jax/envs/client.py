"""`RemoteEnv`: the env protocol over HTTP, against `python -m gui_jax.envs.server`.

    env = RemoteEnv("http://127.0.0.1:8765", token=os.environ.get("GUI_JAX_ENV_TOKEN"), timeout_s=30)
    obs = env.reset(make_task("settings.wifi_on", seed=3))   # opens a server session on first use
    obs, done, info = env.step(Action("open", text="Settings"))
    env.close()                                                # closes the session

Every call has a timeout. Infrastructure faults raise `EnvFailure` subclasses so the pool retries the
episode elsewhere: `EnvConnectionError` (refused / reset / lost connection), `EnvTimeoutError`,
`EnvServerError` (5xx), `EnvSessionLost` (the server no longer knows our session: restarted or reaped
it), `EnvCapacityError` (429: session limit). Any other 4xx is our bug and raises `ValueError` with the
server's message (which names the bad field).
"""
from __future__ import annotations

from typing import Any, Optional

from gui_jax.core.types import Action, Observation
from gui_jax.envs.backends import EnvOptions, decode_observation, task_ref
from gui_jax.envs.base import EnvFailure


class EnvConnectionError(EnvFailure, ConnectionError):
    """Could not reach the env server, or the connection broke mid-request."""


class EnvTimeoutError(EnvFailure, TimeoutError):
    """The env server did not answer within the call's timeout."""


class EnvServerError(EnvFailure):
    """The env server answered 5xx (its env crashed or raised)."""


class EnvSessionLost(EnvFailure):
    """The server does not know our session any more (it restarted, or reaped the session)."""


class EnvCapacityError(EnvFailure):
    """The server is at its session limit."""


class RemoteEnv:
    """Env protocol client for one server session (see module docstring). Not thread-safe: one
    episode at a time, as with any env."""

    def __init__(self, url: str, token: Optional[str] = None, timeout_s: float = 60.0, *,
                 connect_timeout_s: float = 5.0, reset_timeout_s: Optional[float] = None,
                 options: Optional[EnvOptions] = None, client: Any = None):
        import httpx
        self.url = url.rstrip("/")
        self.timeout_s, self.reset_timeout_s = float(timeout_s), float(reset_timeout_s or timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.options = options or EnvOptions()
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._own_client = client is None
        # `client` lets tests pass a Starlette TestClient (an httpx.Client bound to an in-process app).
        self._http = client if client is not None else httpx.Client(base_url=self.url)
        self._httpx = httpx
        self.session_id: Optional[str] = None

    # ---- transport -------------------------------------------------------------------------------
    def _timeout(self, seconds: float):
        return self._httpx.Timeout(seconds, connect=min(self.connect_timeout_s, seconds))

    def _request(self, method: str, path: str, body: Optional[dict], timeout_s: float) -> dict:
        httpx = self._httpx
        where = f"{method} {self.url}{path}"
        try:
            kw = {"timeout": self._timeout(timeout_s)} if self._own_client else {}  # TestClient: no timeouts
            r = self._http.request(method, path, json=body, headers=self._headers, **kw)
        except httpx.TimeoutException as e:
            raise EnvTimeoutError(f"{where}: no answer within {timeout_s:.1f}s ({type(e).__name__})") from None
        except httpx.TransportError as e:
            raise EnvConnectionError(f"{where}: {type(e).__name__}: {e}") from None
        try:
            data = r.json()
        except ValueError:
            data = {"error": r.text[:200]}
        if not isinstance(data, dict):
            raise EnvServerError(f"{where}: answer is not a JSON object: {str(data)[:200]}")
        if r.status_code < 400:
            return data
        msg = f"{where} -> {r.status_code}: {data.get('error', data)}"
        if r.status_code >= 500:
            raise EnvServerError(msg)
        if r.status_code == 404 and data.get("field") == "session_id":
            self.session_id = None
            raise EnvSessionLost(msg)
        if r.status_code == 429:
            raise EnvCapacityError(msg)
        raise ValueError(msg)

    # ---- env protocol ----------------------------------------------------------------------------
    def open_session(self) -> str:
        o = self.options
        body = {"options": {"render": bool(o.render), "resolution": [int(v) for v in o.resolution],
                            "max_steps": int(o.max_steps), "tree": bool(o.tree)}}
        self.session_id = self._request("POST", "/sessions", body, self.reset_timeout_s)["session_id"]
        return self.session_id

    def reset(self, task: Any) -> Observation:
        ref = task_ref(task)
        if self.session_id is None:
            self.open_session()
        try:
            data = self._request("POST", f"/sessions/{self.session_id}/reset", {"task": ref}, self.reset_timeout_s)
        except EnvSessionLost:  # reaped while idle between episodes: open a fresh session once
            self.open_session()
            data = self._request("POST", f"/sessions/{self.session_id}/reset", {"task": ref}, self.reset_timeout_s)
        return self._observation(data)

    def step(self, action: Action) -> tuple[Observation, bool, dict]:
        if not isinstance(action, Action):
            raise TypeError(f"RemoteEnv.step expects gui_jax.core.Action, got {type(action).__name__}")
        if self.session_id is None:
            raise RuntimeError("RemoteEnv.step called before reset()")
        data = self._request("POST", f"/sessions/{self.session_id}/step", {"action": action.to_dict()},
                             self.timeout_s)
        if not isinstance(data.get("done"), bool) or not isinstance(data.get("info"), dict):
            raise EnvServerError(f"malformed step answer from {self.url}: keys {sorted(data)}")
        return self._observation(data), data["done"], data["info"]

    def _observation(self, data: dict) -> Observation:
        try:
            return decode_observation(data["observation"])
        except (KeyError, ValueError) as e:
            raise EnvServerError(f"malformed observation from {self.url}: {e}") from None

    def health(self, timeout_s: Optional[float] = None) -> dict:
        data = self._request("GET", "/health", None, timeout_s or self.connect_timeout_s)
        if data.get("status") != "ok":
            raise EnvServerError(f"{self.url} reports unhealthy: {data}")
        return data

    def close(self) -> None:
        sid, self.session_id = self.session_id, None
        try:
            if sid is not None:
                self._request("DELETE", f"/sessions/{sid}", None, min(self.timeout_s, 10.0))
        except (EnvFailure, ValueError):
            pass  # the server may already be gone; the session will be reaped
        finally:
            if self._own_client:
                self._http.close()

    def __repr__(self) -> str:
        return f"RemoteEnv({self.url!r}, session={'open' if self.session_id else 'none'})"
