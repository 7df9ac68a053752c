"""Name → function tables (advantage estimators, policy losses): one lookup and one registration rule."""
from __future__ import annotations

from typing import Callable, MutableMapping


def lookup(table: MutableMapping[str, Callable], name: str, what: str, error: type = ValueError) -> Callable:
    """table[name]; otherwise `error` naming `what` and the registered names."""
    try:
        return table[name]
    except KeyError:
        raise error(f"unknown {what} {name!r}; known: {sorted(table)}") from None


def register(table: MutableMapping[str, Callable], name: str, fn: Callable, what: str,
             error: type = ValueError) -> Callable:
    """table[name] = fn; registering a name twice raises `error`."""
    if name in table:
        raise error(f"{what} {name!r} is already registered")
    table[name] = fn
    return fn
