"""`forge doctor`'s store checks: the event database as the application role, the artifact store.

PostgreSQL is reached as the role of FORGE_DATABASE_URL, the one every worker and the API use,
and that role is held to what row-level security needs (activities/store/roles.py, as `forge db
upgrade` holds it): not a superuser, no BYPASSRLS, owning none of the tables. The artifact
store is written to: a probe object put and deleted (S3), or a probe file (a local directory).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from schemas.doctor import DoctorCheck

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from workers.settings import Settings

__all__ = ["ARTIFACTS", "DATABASE", "artifacts_check", "database_check"]

DATABASE = "database"
ARTIFACTS = "artifacts"
_CONNECT_TIMEOUT_S = 10
_PROBE_BODY = b"forge doctor probe: safe to delete\n"
_SCHEMA = "SELECT to_regclass('alembic_version') IS NOT NULL"
# Every table but Alembic's must have row-level security enabled, forced (so it holds the
# owner too), and the tenant policy (activities/store/migrations/rls.py).
_UNGUARDED = (
    "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
    "AND c.relkind IN ('r', 'p') AND c.relname <> 'alembic_version' AND NOT ("
    "c.relrowsecurity AND c.relforcerowsecurity AND EXISTS (SELECT 1 FROM pg_policies p "
    "WHERE p.schemaname = current_schema() AND p.tablename = c.relname "
    "AND p.policyname = 'forge_tenant_isolation')) ORDER BY c.relname"
)


def _check(name: str, detail: str, fix: str | None = None) -> DoctorCheck:
    return DoctorCheck(name=name, ok=fix is None, detail=detail, fix=fix)


def database_check(settings: Settings) -> DoctorCheck:
    """SQLite: what it is. PostgreSQL: reachable as the app role, and that role held by RLS."""
    from activities.store.engine import backend_of, normalize_url

    url = normalize_url(settings.database_url)
    if backend_of(url) == "sqlite":
        return _check(
            DATABASE,
            f"SQLite at {url.database} (the embedded event log: one host, no roles, so no row "
            "security to check; use PostgreSQL, FORGE_DATABASE_URL, for a cluster)",
        )
    return _postgres_check(url)


def _postgres_check(url: URL) -> DoctorCheck:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import DBAPIError

    from activities.store.roles import AppRoleUnsafe, check_app_role

    where = f"{url.host or 'localhost'}:{url.port or 5432}/{url.database}"
    engine = create_engine(url, connect_args={"connect_timeout": _CONNECT_TIMEOUT_S})
    try:
        with engine.connect() as conn:
            role = conn.execute(text("SELECT current_user")).scalar_one()
            migrated = conn.execute(text(_SCHEMA)).scalar_one()
            if not migrated:
                return _check(
                    DATABASE,
                    f"PostgreSQL at {where} has no Forge tables in role {role!r}'s schema",
                    "run `forge db upgrade` (as the owner: FORGE_DATABASE_OWNER_URL) once",
                )
            check_app_role(conn, role)
            unguarded = list(conn.execute(text(_UNGUARDED)).scalars())
    except AppRoleUnsafe as exc:
        return _check(DATABASE, f"PostgreSQL at {where}: {exc.message}", exc.hint)
    except DBAPIError as exc:
        reason = _first_line(str(exc.orig)) if exc.orig is not None else type(exc).__name__
        return _check(
            DATABASE,
            f"cannot use PostgreSQL at {where} as {url.username or 'the default user'!r}: {reason}",
            "check FORGE_DATABASE_URL (host, port, database, user, password) and that the "
            "server accepts this role's connections (pg_hba.conf)",
        )
    finally:
        engine.dispose()
    if unguarded:
        return _check(
            DATABASE,
            f"PostgreSQL at {where}: row-level security is not enabled and forced, with the "
            f"tenant policy, on {', '.join(unguarded)}",
            "run `forge db upgrade` as the owner (FORGE_DATABASE_OWNER_URL); a table switched "
            "off by hand needs ALTER TABLE ... ENABLE and FORCE ROW LEVEL SECURITY again",
        )
    return _check(
        DATABASE,
        f"PostgreSQL at {where} as {role!r}: not a superuser, no BYPASSRLS, owns no table, so "
        "row-level security, on every table, holds it",
    )


def artifacts_check(settings: Settings) -> DoctorCheck:
    """The artifact store accepts a write: an S3 probe object, or a local probe file."""
    parts = urlsplit(settings.artifacts_url)
    if parts.scheme == "s3":
        return _s3_check(parts.netloc, parts.path.strip("/"), settings.s3_endpoint)
    root = Path(parts.path if parts.scheme == "file" else settings.artifacts_url)
    try:
        root.mkdir(parents=True, exist_ok=True)  # as the store does on its first write
        fd, probe = tempfile.mkstemp(dir=root, prefix=".forge-doctor-")
        try:
            os.write(fd, _PROBE_BODY)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return _check(
            ARTIFACTS,
            f"the local artifact directory {root} is not writable: {exc.strerror or exc}",
            "set FORGE_ARTIFACTS_URL to a directory this user can write (or s3://BUCKET/PREFIX)",
        )
    return _check(ARTIFACTS, f"the local artifact directory {root} is writable")


def _s3_check(bucket: str, prefix: str, endpoint: str | None) -> DoctorCheck:
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    from activities.store.artifacts_s3 import s3_client

    at = f" at {endpoint}" if endpoint else ""
    key = f"{prefix}/" if prefix else ""
    key += f".forge-doctor/{uuid.uuid4().hex}"
    where = f"s3://{bucket}/{key}{at}"
    client = s3_client(endpoint)
    try:
        client.put_object(Bucket=bucket, Key=key, Body=_PROBE_BODY)
        client.delete_object(Bucket=bucket, Key=key)
    except NoCredentialsError:
        return _check(
            ARTIFACTS,
            f"no AWS credentials to write {where}",
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or an instance role / AWS_PROFILE)",
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "?"), error.get("Message", "")
        if code == "NoSuchBucket":
            return _check(
                ARTIFACTS,
                f"bucket {bucket!r} does not exist{at}",
                f"create it (aws s3 mb s3://{bucket}), or fix FORGE_ARTIFACTS_URL / "
                "FORGE_S3_ENDPOINT",
            )
        return _check(
            ARTIFACTS,
            f"cannot write {where}: {code} {message}".rstrip(),
            "grant these credentials s3:PutObject and s3:DeleteObject on the bucket's prefix",
        )
    except BotoCoreError as exc:
        return _check(
            ARTIFACTS,
            f"cannot reach S3 for {where}: {exc}",
            "check FORGE_S3_ENDPOINT (or AWS's region and network access)",
        )
    return _check(ARTIFACTS, f"S3 bucket {bucket!r}{at} is writable (put and deleted {key})")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
