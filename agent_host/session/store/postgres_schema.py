"""The PostgreSQL store's tables: numbered migrations in a schema of the store's own.

``<schema>.schema_version`` holds one row per applied step. Steps run on first use,
in one transaction under a transaction-level advisory lock (PostgreSQL's DDL is
transactional), so stores starting at once on several hosts migrate once, in order.
Append only: a released step is never edited; a database newer than this version
is refused, not guessed at.
"""

from __future__ import annotations

import hashlib

import psycopg
from psycopg import sql

from ..errors import StoreUnavailable

# {s} is the schema, quoted. Append only.
MIGRATIONS: list[str | tuple[str, ...]] = [
    # 1: sessions and their summaries, events, truncations, blobs in chunks.
    """
    CREATE TABLE {s}.sessions (
        id text PRIMARY KEY,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        head bigint NOT NULL,
        turns integer NOT NULL,
        title text NOT NULL,
        workspace text NOT NULL
    );
    CREATE INDEX sessions_newest_first ON {s}.sessions (updated_at DESC, id DESC);
    CREATE TABLE {s}.events (
        session_id text NOT NULL,
        seq bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE {s}.truncations (
        session_id text NOT NULL,
        id integer NOT NULL,
        seq bigint NOT NULL,
        ts double precision NOT NULL,
        events bytea NOT NULL,
        PRIMARY KEY (session_id, id)
    );
    CREATE TABLE {s}.blobs (
        id text PRIMARY KEY,
        size bigint NOT NULL,
        touched_at double precision NOT NULL
    );
    CREATE TABLE {s}.blob_chunks (
        blob_id text NOT NULL REFERENCES {s}.blobs (id) ON DELETE CASCADE,
        n integer NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (blob_id, n)
    );
    """,
    # 2: an append in one statement, so in one round trip, its own transaction
    # (see PostgresCheckpointer._append_batch). Each event comes as its JSON after
    # '{"seq":N' (the seq is the head's business: a blind append learns it here). A
    # stale p_expected raises SQLSTATE AH409 with the head found as its message.
    (
        """
    CREATE FUNCTION {s}.append_batch(
        p_id text, p_expected bigint, p_rests bytea[], p_ts double precision,
        p_prompts integer, p_set_title text, p_first_title text, p_workspace text,
        p_channel text, p_origin text
    ) RETURNS bigint LANGUAGE plpgsql AS $body$
    DECLARE
        found_head bigint;
        new_head bigint;
    BEGIN
        -- Writers of one session queue here first, in order, each woken alone: on
        -- the row lock every waiter wakes at each commit and all but one sleep again.
        -- (Two int4 keys: a space apart from the turn leases' bigint keys.)
        PERFORM pg_advisory_xact_lock(1096, hashtext(p_id));
        SELECT head INTO found_head FROM {s}.sessions WHERE id = p_id FOR UPDATE;
        IF NOT FOUND AND COALESCE(p_expected, 0) = 0 THEN
            INSERT INTO {s}.sessions (id, created_at, updated_at, head, turns, title, workspace)
            VALUES (p_id, p_ts, p_ts, 0, 0, '', '') ON CONFLICT (id) DO NOTHING;
            SELECT head INTO found_head FROM {s}.sessions WHERE id = p_id FOR UPDATE;
        END IF;
        found_head := COALESCE(found_head, 0);
        IF p_expected IS NOT NULL AND found_head <> p_expected THEN
            RAISE EXCEPTION USING ERRCODE = 'AH409', MESSAGE = found_head::text;
        END IF;
        new_head := found_head + cardinality(p_rests);
        INSERT INTO {s}.events (session_id, seq, data)
        SELECT p_id, found_head + n, convert_to('{{"seq":' || (found_head + n), 'UTF8') || r
        FROM unnest(p_rests) WITH ORDINALITY AS x(r, n);
        UPDATE {s}.sessions SET
            created_at = CASE WHEN found_head = 0 THEN p_ts ELSE created_at END,
            updated_at = p_ts,
            head = new_head,
            turns = turns + p_prompts,
            title = COALESCE(p_set_title, CASE WHEN title = '' THEN p_first_title ELSE title END),
            workspace = COALESCE(p_workspace, workspace)
        WHERE id = p_id;
        PERFORM pg_notify(p_channel, p_origin || ' ' || new_head || ' ' || p_id);
        RETURN new_head;
    END
    $body$
    """,
    ),
    # 3: each session's resume snapshot (session.resume_snapshot), a cache of its log.
    """
    CREATE TABLE {s}.snapshots (
        session_id text PRIMARY KEY,
        head bigint NOT NULL,
        data bytea NOT NULL
    );
    """,
    # 4: blobs a live holder (a workspace index) relies on, kept from gc until its
    # pins expire (see session.blob_pins).
    """
    CREATE TABLE {s}.blob_holders (
        holder text PRIMARY KEY,
        expires_at double precision NOT NULL
    );
    CREATE TABLE {s}.blob_pins (
        holder text NOT NULL REFERENCES {s}.blob_holders (holder) ON DELETE CASCADE,
        blob_id text NOT NULL,
        PRIMARY KEY (holder, blob_id)
    );
    CREATE INDEX blob_pins_by_blob ON {s}.blob_pins (blob_id);
    """,
    # 5: fenced turn leases (see postgres_leases). Each take of a session's lease gets
    # a new epoch from one sequence, never reused, even after a delete; writes made
    # under a lease pass it, and are refused (SQLSTATE AH410, the epoch found as the
    # message) once another holder took the lease. Epochs are taken and checked under
    # the per-session transaction lock append_batch queues on, so a take and a write
    # never overlap: a write either commits before the take or is refused.
    (
        "CREATE SEQUENCE {s}.lease_epochs",
        "CREATE TABLE {s}.leases (session_id text PRIMARY KEY, epoch bigint NOT NULL)",
        """
    CREATE FUNCTION {s}.check_lease(p_id text, p_epoch bigint) RETURNS void
    LANGUAGE plpgsql AS $body$
    DECLARE
        found_epoch bigint;
    BEGIN
        PERFORM pg_advisory_xact_lock(1096, hashtext(p_id));
        IF p_epoch IS NULL THEN
            RETURN;  -- a write made under no lease (a fork, a tool): the head checks it
        END IF;
        SELECT epoch INTO found_epoch FROM {s}.leases WHERE session_id = p_id;
        IF found_epoch IS DISTINCT FROM p_epoch THEN
            RAISE EXCEPTION USING ERRCODE = 'AH410', MESSAGE = COALESCE(found_epoch::text, '');
        END IF;
    END
    $body$
    """,
        # p_epoch NULL: a new take, a new epoch; else the holder taking its lease
        # back on a new connection, only if no one took it meanwhile. NULL: not taken.
        """
    CREATE FUNCTION {s}.take_lease(p_key bigint, p_id text, p_epoch bigint) RETURNS bigint
    LANGUAGE plpgsql AS $body$
    DECLARE
        taken bigint;
    BEGIN
        IF NOT pg_try_advisory_lock(p_key) THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock(1096, hashtext(p_id));
        IF p_epoch IS NULL THEN
            taken := nextval('{s}.lease_epochs');
            INSERT INTO {s}.leases (session_id, epoch) VALUES (p_id, taken)
            ON CONFLICT (session_id) DO UPDATE SET epoch = excluded.epoch;
            RETURN taken;
        END IF;
        IF EXISTS (SELECT 1 FROM {s}.leases WHERE session_id = p_id AND epoch = p_epoch) THEN
            RETURN p_epoch;
        END IF;
        PERFORM pg_advisory_unlock(p_key);
        RETURN NULL;
    END
    $body$
    """,
        # append_batch with the writer's epoch; the one of step 2 stays for hosts
        # that ran it before this step (they write unfenced until upgraded).
        """
    CREATE FUNCTION {s}.append_batch(
        p_id text, p_expected bigint, p_rests bytea[], p_ts double precision,
        p_prompts integer, p_set_title text, p_first_title text, p_workspace text,
        p_channel text, p_origin text, p_epoch bigint
    ) RETURNS bigint LANGUAGE plpgsql AS $body$
    BEGIN
        PERFORM {s}.check_lease(p_id, p_epoch);
        RETURN {s}.append_batch(p_id, p_expected, p_rests, p_ts, p_prompts, p_set_title,
                                p_first_title, p_workspace, p_channel, p_origin);
    END
    $body$
    """,
    ),
    # 6: the segments appended after a resume snapshot (session.resume_snapshot),
    # in order; writing the snapshot whole drops them.
    """
    CREATE TABLE {s}.snapshot_segments (
        session_id text NOT NULL,
        n bigint NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (session_id, n)
    );
    """,
    # 7: the blobs gc stored as deltas, and each one's base (see session.blob_delta).
    # The base's key is checked at commit: a base is never deleted while a blob
    # that needs it is kept, and a dead chain goes in one statement.
    """
    CREATE TABLE {s}.blob_bases (
        id text PRIMARY KEY REFERENCES {s}.blobs (id) ON DELETE CASCADE,
        base text NOT NULL REFERENCES {s}.blobs (id) DEFERRABLE INITIALLY DEFERRED
    );
    CREATE INDEX blob_bases_by_base ON {s}.blob_bases (base);
    """,
]


def lock_key(*parts: str) -> int:
    """A stable signed 64-bit advisory lock key for ``parts``."""
    digest = hashlib.sha256("\0".join(("agent-host", *parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def migrate(conn: psycopg.Connection, schema: str, where: str) -> None:
    """Bring ``schema`` up to date on ``conn`` (not in a transaction)."""
    s = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("migrate", schema),))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {s}").format(s=s))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {s}.schema_version ("
                "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(s=s)
        )
        row = conn.execute(
            sql.SQL("SELECT COALESCE(MAX(version), 0) FROM {s}.schema_version").format(s=s)
        ).fetchone()
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise StoreUnavailable(
                f"{where}: schema {schema!r} is at version {version}, newer than this "
                f"agent-host knows ({len(MIGRATIONS)}); upgrade agent-host"
            )
        for number, step in enumerate(MIGRATIONS[version:], version + 1):
            # A step is statements split at ';', or a tuple of whole ones (a body).
            statements = step if isinstance(step, tuple) else step.split(";")
            for statement in filter(str.strip, statements):
                conn.execute(sql.SQL(statement).format(s=s))
            conn.execute(
                sql.SQL("INSERT INTO {s}.schema_version (version) VALUES (%s)").format(s=s),
                (number,),
            )
