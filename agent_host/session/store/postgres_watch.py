"""News of other hosts' writes: LISTEN on the schema's channel, on a thread of its own.

Every write notifies ``"<origin> <head> <session id>"`` in its transaction, so a
notification arrives only once the write is committed, and never for a write that
rolled back. A store ignores its own (its origin). The listener starts with the
first subscriber and reconnects when its connection drops; what was appended while
it was away is not replayed (a reader's next look at the store sees it anyway).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import suppress

import psycopg
from psycopg import sql

from ..errors import StoreUnavailable
from .postgres_conn import Target, connect

log = logging.getLogger(__name__)
RECONNECT_SECONDS = 1.0

Callback = Callable[[str, int], None]


def channel(schema: str) -> str:
    return f"agent_host_{schema}"[:63]  # a channel name is an identifier: 63 bytes


class Watcher:
    def __init__(self, target: Target, name: str, origin: str) -> None:
        self._target = target
        self._channel = name
        self._origin = origin
        self._callbacks: list[Callback] = []
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self.listening = threading.Event()
        """Set while the listener is connected and listening (for tests and waits)."""

    def subscribe(self, callback: Callback) -> Callable[[], None]:
        with self._mutex:
            self._callbacks.append(callback)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="agent-host-pg-listen", daemon=True
                )
                self._thread.start()

        def unsubscribe() -> None:
            with self._mutex, suppress(ValueError):
                self._callbacks.remove(callback)

        return unsubscribe

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn = connect(self._target, autocommit=True)
            except StoreUnavailable as exc:
                log.warning("not listening for other hosts' writes: %s", exc)
                self._stop.wait(RECONNECT_SECONDS)
                continue
            self._conn = conn
            try:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                self.listening.set()
                while not self._stop.is_set():
                    for note in conn.notifies(timeout=0.5):
                        self._deliver(note.payload)
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    log.warning("listening for other hosts' writes: %s; reconnecting", exc)
            finally:
                self.listening.clear()
                self._conn = None
                with suppress(psycopg.Error):
                    conn.close()
            self._stop.wait(RECONNECT_SECONDS)

    def _deliver(self, payload: str) -> None:
        origin, _, rest = payload.partition(" ")
        head, _, session_id = rest.partition(" ")
        if origin == self._origin or not session_id:
            return
        with self._mutex:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            try:
                callback(session_id, int(head))
            except Exception:  # one subscriber's bug must not stop the others' news
                log.exception("a session-change callback failed")

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
