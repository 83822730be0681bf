"""Sessions in PostgreSQL: one store shared by many processes on many hosts.

Each write is one transaction. An append locks the session's row (an upsert that
returns it), checks the head, inserts the events -- the ``(session_id, seq)``
primary key makes a duplicate seq impossible -- updates the summary ``list()``
reads and notifies the other hosts, all before one commit (``synchronous_commit``
on: durable when acknowledged). Blobs live in the same database (see
postgres_blobs), turn leases are advisory locks fenced by epochs (postgres_leases:
a write made under a lease another holder has since taken is refused), and
LISTEN/NOTIFY tells every store holding a session that another appended to it
(postgres_watch). URLs, pooling and errors: postgres_conn.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, suppress
from typing import Any, TypeVar, overload
from urllib.parse import SplitResult

import psycopg
from psycopg import sql

from .. import events as ev
from ..errors import SessionNotFound, StoreUnavailable
from .base import ListCursor, SessionInfo, StoreBase, Truncation
from .postgres_blobs import PostgresBlobStore
from .postgres_conn import Pool, Target, connect, unavailable
from .postgres_leases import AdvisoryLeases, lease_lost
from .postgres_schema import migrate
from .postgres_watch import Watcher, channel
from .summary import Summary, summarize

T = TypeVar("T")
log = logging.getLogger(__name__)
_COLUMNS = "id, created_at, updated_at, head, turns, title, workspace"


class PostgresCheckpointer(StoreBase):
    def __init__(self, url: str) -> None:
        self._target = Target(url)
        self.origin = secrets.token_hex(8)
        """This store's name in its notifications, so it ignores its own."""
        # Migrate on a connection of its own: a wrong URL or a server that is down
        # fails here, with its reason, not later as a pool timeout.
        conn = connect(self._target, autocommit=True)
        try:
            migrate(conn, self._target.schema, self._target.url)
        except psycopg.Error as exc:
            raise unavailable(self._target, "set up the schema in", exc) from exc
        finally:
            conn.close()
        self._pool = Pool(self._target)
        self._q = _Queries(self._target.schema)
        self._channel = channel(self._target.schema)
        self.blobs = PostgresBlobStore(self._pool, self._target)
        self._leases = AdvisoryLeases(self._target)
        self._watcher = Watcher(self._target, self._channel, self.origin)

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({self._target.url!r})"

    @property
    def url(self) -> str:
        return self._target.url

    @property
    def where(self) -> str:
        return self._target.url

    @property
    def schema(self) -> str:
        return self._target.schema

    # -- the primitives (see StoreBase), on worker threads

    def _append(self, session_id: str, events: list[ev.Event], expected_head: int | None) -> int:
        # Once more after a lost connection (a server restart, pg_terminate_backend,
        # a connection dead in the pool): _append_once has made sure the first try
        # did not commit, so the retry cannot duplicate it.
        return _once_more(self._append_once, session_id, events, expected_head)

    def _append_once(
        self, session_id: str, events: list[ev.Event], expected_head: int | None
    ) -> int:
        ts = time.time()
        epoch = self._leases.epoch(session_id)
        if events:
            effect = _batch_effect(events)
            rests = _after_seq(events, ts)
            if effect is not None and rests is not None:
                return self._append_batch(session_id, rests, expected_head, ts, effect, epoch)
        q = self._q
        committing = False
        new_head = 0
        last: bytes = b""
        try:
            with self._pool.connection("append to") as conn:
                self._fence(conn, session_id, epoch)
                row = conn.execute(q.lock_session, (session_id,)).fetchone()
                summary = _summary(row)
                head = summary.head
                self.check_head(session_id, expected_head, head)
                if not events:
                    conn.rollback()  # the upsert made a row for nothing
                    return head
                if any(type(e) in (ev.Restore, ev.RestoreUndone) for e in events):
                    # The row does not know which prompts a restore hides: fold the log.
                    summary = summarize(self._events(conn, session_id, 0))
                seqs, datas = [], []
                for n, event in enumerate(events, head + 1):
                    data = ev.encode(event, n, ts)
                    seqs.append(n)
                    datas.append(data)
                    summary.add(ev.stamp(event, n, ts))
                new_head, last = summary.head, datas[-1]
                with conn.pipeline():
                    conn.execute(q.insert_events, (session_id, seqs, datas))
                    conn.execute(q.save_summary, (*_row(summary), session_id))
                    conn.execute(q.notify, (self._channel, self._payload(session_id, new_head)))
                committing = True
                conn.commit()
                return new_head
        except StoreUnavailable:
            # A lost connection during the commit leaves its outcome unknown: the
            # events are either all there or none is. Look, so that an append that
            # did commit is acknowledged and one that did not is not.
            if committing and self._landed(session_id, new_head, last):
                return new_head
            raise

    def _append_batch(
        self,
        session_id: str,
        rests: list[bytes],
        expected: int | None,
        ts: float,
        effect: tuple[int, str | None, str, str | None],
        epoch: int | None,
    ) -> int:
        """An append in one statement (append_batch): one round trip, its own
        transaction, the session's row locked only while the server runs it -- so
        writers in several processes queue on the server, not across the network."""
        prompts, set_title, first_title, workspace = effect
        sent = False
        try:
            with self._pool.connection("append to") as conn:
                conn.autocommit = True  # the statement is the transaction
                try:
                    sent = True
                    row = conn.execute(
                        self._q.append_batch,
                        (
                            session_id,
                            expected,
                            rests,
                            ts,
                            prompts,
                            set_title,
                            first_title,
                            workspace,
                            self._channel,
                            self.origin,
                            epoch,
                        ),  # fmt: skip
                    ).fetchone()
                except psycopg.Error as exc:
                    if exc.sqlstate == "AH409":
                        self.check_head(session_id, expected, int(str(exc.diag.message_primary)))
                    if exc.sqlstate == "AH410":
                        raise lease_lost(session_id) from exc
                    raise
                finally:
                    if not conn.broken:
                        with suppress(psycopg.Error):  # never hides what went wrong
                            conn.autocommit = False
                assert row is not None
                return int(row[0])
        except StoreUnavailable:
            if sent:
                landed = self._landed_at(session_id, rests[-1])
                if landed is not None:
                    return landed
            raise

    def _fence(self, conn: psycopg.Connection, session_id: str, epoch: int | None) -> None:
        """In ``conn``'s transaction: refuse a write under a lease another holder
        has taken since (LeaseLost), and keep any from taking it until the commit."""
        if epoch is None:
            return
        try:
            conn.execute(self._q.check_lease, (session_id, epoch))
        except psycopg.Error as exc:
            if exc.sqlstate == "AH410":
                raise lease_lost(session_id) from exc
            raise

    def _landed_at(self, session_id: str, rest: bytes) -> int | None:
        """The seq of the event stored with the JSON ``rest`` (a batch's last), if
        that append committed. If that cannot be found out either, the error says
        so, and is not retried."""
        try:
            with self._pool.connection("check an append to") as conn:
                row = conn.execute(self._q.find_rest, (session_id, rest)).fetchone()
        except StoreUnavailable as exc:
            raise StoreUnavailable(
                f"{exc}; an append to session {session_id!r} was being committed when the "
                "connection was lost: read the session to see whether it landed"
            ) from exc
        return None if row is None else int(row[0])

    def _landed(self, session_id: str, seq: int, data: bytes) -> bool:
        """Whether the append whose last event is ``data`` at ``seq`` committed. If
        that cannot be found out either, the error says so, and is not retried."""
        try:
            with self._pool.connection("check an append to") as conn:
                row = conn.execute(self._q.event_at, (session_id, seq)).fetchone()
        except StoreUnavailable as exc:
            raise StoreUnavailable(
                f"{exc}; an append to session {session_id!r} was being committed when the "
                "connection was lost: read the session to see whether it landed"
            ) from exc
        return row is not None and bytes(row[0]) == data

    def _events(self, conn: psycopg.Connection, session_id: str, since: int) -> list[ev.Event]:
        # Binary: bytea arrives as it is stored, not as hex text to decode.
        rows = conn.execute(self._q.read, (session_id, since), binary=True).fetchall()
        return self.decode_many([data for (data,) in rows])

    # Reads are tried once more after a lost connection: they change nothing.

    def _read(self, session_id: str, since_seq: int) -> list[ev.Event]:
        return _once_more(self._read_once, session_id, since_seq)

    def _read_once(self, session_id: str, since_seq: int) -> list[ev.Event]:
        with self._pool.connection("read") as conn:
            return self._events(conn, session_id, since_seq)

    def _head(self, session_id: str) -> int:
        return _once_more(self._query, self._q.head, (session_id,), "read")[0][0]

    def _query(self, query: sql.Composed, args: tuple, action: str) -> list[tuple]:
        with self._pool.connection(action) as conn:
            return conn.execute(query, args).fetchall() or [(0,)]

    def _list(self) -> list[SessionInfo]:
        rows = _once_more(self._rows, self._q.list_all, ())
        return [SessionInfo(*r) for r in rows]

    def _rows(self, query: sql.Composed, args: tuple) -> list[tuple]:
        with self._pool.connection("list sessions in") as conn:
            # Binary: numbers and bytea arrive as stored, not as text to parse
            # (half the time of a 10,000-session list).
            return conn.execute(query, args, binary=True).fetchall()

    def _list_page(self, limit: int, after: ListCursor | None) -> list[SessionInfo]:
        if after is None:
            rows = _once_more(self._rows, self._q.list_first, (limit,))
        else:
            rows = _once_more(self._rows, self._q.list_after, (after[0], after[1], limit))
        return [SessionInfo(*r) for r in rows]

    def _delete(self, session_id: str) -> None:
        q = self._q
        epoch = self._leases.epoch(session_id)
        with self._pool.connection("delete from") as conn:
            self._fence(conn, session_id, epoch)
            if conn.execute(q.delete_session, (session_id,)).fetchone() is None:
                raise SessionNotFound(session_id)
            conn.execute(q.delete_events, (session_id, 0))
            conn.execute(q.delete_truncations, (session_id,))
            conn.execute(q.delete_snapshot, (session_id,))
            conn.execute(q.delete_segments, (session_id,))
            conn.execute(q.delete_lease, (session_id,))
            conn.execute(q.notify, (self._channel, self._payload(session_id, 0)))

    def _truncate(self, session_id: str, seq: int, expected_head: int | None) -> Truncation:
        q = self._q
        epoch = self._leases.epoch(session_id)
        with self._pool.connection("truncate in") as conn:
            self._fence(conn, session_id, epoch)
            row = conn.execute(q.lock_existing, (session_id,)).fetchone()
            head = row[0] if row else 0
            if head == 0:
                raise SessionNotFound(session_id)
            self.check_cut(session_id, seq, head, expected_head)
            rows = conn.execute(q.read_all, (session_id,)).fetchall()
            kept = [self.decode(data) for s, data in rows if s <= seq]
            removed = [bytes(data) for s, data in rows if s > seq]
            (last,) = conn.execute(q.last_truncation, (session_id,)).fetchone()  # type: ignore[misc]
            now = time.time()
            stash = self.encode_truncation(removed)
            conn.execute(q.insert_truncation, (session_id, last + 1, seq, now, stash))
            conn.execute(q.delete_events, (session_id, seq))
            conn.execute(q.save_summary, (*_row(summarize(kept)), session_id))
            conn.execute(q.notify, (self._channel, self._payload(session_id, seq)))
        return self.decode_truncation(last + 1, seq, now, stash)

    def _truncations(self, session_id: str) -> list[Truncation]:
        rows = _once_more(self._rows, self._q.truncations, (session_id,))
        return [self.decode_truncation(tid, s, ts, bytes(data)) for tid, s, ts, data in rows]

    def _write_snapshot(self, session_id: str, head: int, data: bytes) -> None:
        with self._pool.connection("write a snapshot to") as conn:
            # One transaction: the new snapshot never meets the old one's segments.
            conn.execute(self._q.write_snapshot, (session_id, head, data))
            conn.execute(self._q.delete_segments, (session_id,))

    def _append_snapshot(self, session_id: str, data: bytes) -> tuple[int, int, int] | None:
        with self._pool.connection("write a snapshot to") as conn:
            row = conn.execute(self._q.lock_snapshot, (session_id,)).fetchone()
            if row is None:
                return None
            count, size, last = conn.execute(self._q.segments, (session_id,)).fetchone()  # type: ignore[misc]
            conn.execute(self._q.insert_segment, (session_id, last + 1, data))
        return count + 1, size + len(data), row[0]

    def _read_snapshot(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, list[ev.Event]] | None:
        return _once_more(self._read_snapshot_once, session_id, limit)

    def _read_snapshot_once(
        self, session_id: str, limit: int | None
    ) -> tuple[bytes, list[ev.Event]] | None:
        with self._pool.connection("read") as conn:
            # One statement: the snapshot and the log as of one moment.
            rows = conn.execute(
                self._q.read_snapshot,
                (limit, session_id, limit, session_id, session_id),
                binary=True,
            ).fetchall()
        if not rows:
            return None
        (_, data), events = rows[0], rows[1:]
        return bytes(data), self.decode_many([bytes(d) for _, d in events])

    def _lease(self, session_id: str) -> AbstractAsyncContextManager[None]:
        return self._leases.hold(session_id)

    def on_change(self, callback: Any) -> Any:
        return self._watcher.subscribe(callback)

    def _close(self) -> None:
        self._watcher.close()
        self._leases.close()
        self._pool.close()

    def _payload(self, session_id: str, head: int) -> str:
        return f"{self.origin} {head} {session_id}"


def _once_more(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, and once more if the connection was lost (only for what is
    safe to repeat: reads, and appends that checked theirs did not land)."""
    try:
        return fn(*args)
    except StoreUnavailable as exc:
        if not getattr(exc, "connection_lost", False):
            raise
        log.info("%s; trying once more on a new connection", exc)
        return fn(*args)


_SEQ_ZERO = b'{"seq":0'
"""How ev.encode(event, 0, ts) begins; append_batch puts the seq it assigns there."""
_SENTINEL = "\0unknown\0"


def _after_seq(events: list[ev.Event], ts: float) -> list[bytes] | None:
    """Each event's JSON after its leading seq, for append_batch; None if one's
    JSON does not lead with it (an event of a newer version's type)."""
    rests = []
    for event in events:
        data = ev.encode(event, 0, ts)
        if not data.startswith(_SEQ_ZERO):
            return None
        rests.append(data[len(_SEQ_ZERO) :])
    return rests


def _batch_effect(events: list[ev.Event]) -> tuple[int, str | None, str, str | None] | None:
    """What appending ``events`` does to a summary whatever it was, as append_batch
    takes it: (prompts added, title set, title if there was none, workspace set);
    None when that takes the whole log (a restore) or the title depends on the old
    one in another way (a blank title, then a prompt)."""
    if any(type(e) in (ev.Restore, ev.RestoreUndone) for e in events):
        return None
    blank = Summary(head=1, prompts=None)
    known = Summary(head=1, title=_SENTINEL, workspace=_SENTINEL, prompts=None)
    for n, event in enumerate(events, 2):
        blank.add_as(event, n, 0.0)
        known.add_as(event, n, 0.0)
    if known.title == _SENTINEL:
        set_title = None
    elif known.title == blank.title:
        set_title = blank.title
    else:
        return None
    workspace = None if known.workspace == _SENTINEL else known.workspace
    return blank.turns, _text(set_title), _text(blank.title), _text(workspace)


@overload
def _text(value: str) -> str: ...
@overload
def _text(value: None) -> None: ...
def _text(value: str | None) -> str | None:
    # A text column cannot hold NUL (the events, bytes, keep it): list() shows U+FFFD.
    return None if value is None else value.replace("\0", "\ufffd")


def _summary(row: tuple | None) -> Summary:
    if row is None:
        return Summary()
    created, updated, title, turns, head, workspace = row
    return Summary(created, updated, title, turns, head, workspace, prompts=None)


def _row(s: Summary) -> tuple:
    return (s.created_at, s.updated_at, s.head, s.turns, _text(s.title), _text(s.workspace))


class _Queries:
    """The store's SQL, its schema filled in once."""

    def __init__(self, schema: str) -> None:
        def q(text: str) -> sql.Composed:
            return sql.SQL(text).format(s=sql.Identifier(schema))

        # Locks the row, making it (head 0) for a new session: one round trip. A
        # rollback (a conflict, nothing to write) takes the new row back.
        self.lock_session = q(
            "INSERT INTO {s}.sessions AS t (" + _COLUMNS + ") VALUES (%s, 0, 0, 0, 0, '', '') "
            "ON CONFLICT (id) DO UPDATE SET head = t.head "
            "RETURNING created_at, updated_at, title, turns, head, workspace"
        )
        self.lock_existing = q("SELECT head FROM {s}.sessions WHERE id = %s FOR UPDATE")
        self.insert_events = q(
            "INSERT INTO {s}.events (session_id, seq, data) "
            "SELECT %s, unnest(%s::bigint[]), unnest(%s::bytea[])"
        )
        self.save_summary = q(
            "UPDATE {s}.sessions SET created_at = %s, updated_at = %s, head = %s, turns = %s, "
            "title = %s, workspace = %s WHERE id = %s"
        )
        self.notify = q("SELECT pg_notify(%s, %s)")
        self.append_batch = q(
            "SELECT {s}.append_batch(%s, %s, %s::bytea[], %s, %s, %s, %s, %s, %s, %s, %s::bigint)"
        )
        self.check_lease = q("SELECT {s}.check_lease(%s, %s)")
        self.delete_lease = q("DELETE FROM {s}.leases WHERE session_id = %s")
        # The ts in a batch's JSON is to the microsecond: its last event is found by it.
        self.find_rest = q(
            "SELECT seq FROM {s}.events WHERE session_id = %s AND position(%s IN data) > 0 "
            "ORDER BY seq DESC LIMIT 1"
        )
        self.event_at = q("SELECT data FROM {s}.events WHERE session_id = %s AND seq = %s")
        self.read = q("SELECT data FROM {s}.events WHERE session_id = %s AND seq > %s ORDER BY seq")
        self.read_all = q("SELECT seq, data FROM {s}.events WHERE session_id = %s ORDER BY seq")
        self.head = q("SELECT head FROM {s}.sessions WHERE id = %s")
        newest = " ORDER BY updated_at DESC, id DESC"
        self.list_all = q("SELECT " + _COLUMNS + " FROM {s}.sessions" + newest)
        self.list_first = q("SELECT " + _COLUMNS + " FROM {s}.sessions" + newest + " LIMIT %s")
        self.list_after = q(
            "SELECT "
            + _COLUMNS
            + " FROM {s}.sessions WHERE (updated_at, id) < (%s, %s)"
            + newest
            + " LIMIT %s"
        )
        self.delete_session = q("DELETE FROM {s}.sessions WHERE id = %s RETURNING id")
        self.delete_events = q("DELETE FROM {s}.events WHERE session_id = %s AND seq > %s")
        self.delete_truncations = q("DELETE FROM {s}.truncations WHERE session_id = %s")
        self.last_truncation = q(
            "SELECT COALESCE(MAX(id), 0) FROM {s}.truncations WHERE session_id = %s"
        )
        self.insert_truncation = q(
            "INSERT INTO {s}.truncations (session_id, id, seq, ts, events) "
            "VALUES (%s, %s, %s, %s, %s)"
        )
        self.truncations = q(
            "SELECT id, seq, ts, events FROM {s}.truncations WHERE session_id = %s ORDER BY id"
        )
        self.write_snapshot = q(
            "INSERT INTO {s}.snapshots (session_id, head, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id) DO UPDATE SET head = excluded.head, data = excluded.data"
        )
        self.delete_snapshot = q("DELETE FROM {s}.snapshots WHERE session_id = %s")
        self.delete_segments = q("DELETE FROM {s}.snapshot_segments WHERE session_id = %s")
        self.lock_snapshot = q(
            "SELECT length(data) FROM {s}.snapshots WHERE session_id = %s FOR UPDATE"
        )
        self.segments = q(
            "SELECT count(*), COALESCE(sum(length(data)), 0), COALESCE(max(n), 0) "
            "FROM {s}.snapshot_segments WHERE session_id = %s"
        )
        self.insert_segment = q(
            "INSERT INTO {s}.snapshot_segments (session_id, n, data) VALUES (%s, %s, %s)"
        )
        # The snapshot (seq -1: first; whole, its segments after it) and the log's
        # events from its head on.
        self.read_snapshot = q(
            "WITH snap AS (SELECT head, CASE WHEN %s::bigint IS NULL THEN data || COALESCE(("
            "SELECT string_agg(g.data, ''::bytea ORDER BY g.n) FROM {s}.snapshot_segments g "
            "WHERE g.session_id = %s), ''::bytea) "
            "ELSE substring(data FROM 1 FOR %s::int) END AS data "
            "FROM {s}.snapshots WHERE session_id = %s) "
            "SELECT -1::bigint AS seq, data FROM snap "
            "UNION ALL SELECT e.seq, e.data FROM {s}.events e, snap "
            "WHERE e.session_id = %s AND e.seq >= snap.head ORDER BY seq"
        )


def open_url(text: str, parts: SplitResult) -> PostgresCheckpointer:
    """The store for a ``postgresql:`` or ``postgres:`` URL (see open_store)."""
    return PostgresCheckpointer(text)
