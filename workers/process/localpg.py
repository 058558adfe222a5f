"""A local PostgreSQL cluster in FORGE_HOME for `forge dev up --postgres`.

initdb and pg_ctl run as a dedicated non-root user (`forge-pg`, created when missing) when
Forge runs as root, because PostgreSQL refuses to run as root. The cluster listens on loopback
only (no Unix socket) and asks every role for its password (scram-sha-256); the passwords are
generated once into FORGE_HOME/postgres-credentials.json (mode 0600). It is a development
cluster, never a deployment's. Its database `forge` is owned by `forge_owner`, which
migrations run as, and the application role `forge_app` (NOSUPERUSER, NOBYPASSRLS, owning
nothing) is what Forge's processes connect as, so row security holds as in production
(docs/isolation.md).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy.exc import SQLAlchemyError

from activities.store.errors import StoreError
from activities.store.migrate import upgrade
from workers.process.devserver import TopologyError
from workers.process.procs import HOST, PROBE_TIMEOUT, cmdline, log_tail

__all__ = [
    "APP_ROLE",
    "DATABASE",
    "OWNER_ROLE",
    "SERVICE_USER",
    "LocalPostgres",
    "find_bindir",
    "service_user",
]

SERVICE_USER = "forge-pg"
OWNER_ROLE = "forge_owner"
APP_ROLE = "forge_app"
DATABASE = "forge"
_SUPERUSER = "postgres"
_CREDENTIALS = "postgres-credentials.json"  # beside the cluster, not readable by its user
_BINDIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
_TIMEOUT = 120


def find_bindir() -> Path:
    """The directory holding initdb and pg_ctl.

    Raises:
        TopologyError: No PostgreSQL server binaries are installed.
    """
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            candidates.append(Path(found.stdout.strip()))
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for bindir in (*candidates, *_BINDIRS):
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise TopologyError(
        "--postgres needs the PostgreSQL server programs initdb and pg_ctl, found neither on "
        "PATH nor under /usr/lib/postgresql/*/bin; install them (e.g. `apt-get install "
        "postgresql-15`) or leave out --postgres"
    )


@dataclass(frozen=True)
class LocalPostgres:
    """The cluster under `home/postgres`: its data directory, log and service user."""

    home: Path
    bindir: Path
    user: str | None

    @classmethod
    def at(cls, home: Path) -> LocalPostgres:
        """The cluster of FORGE_HOME `home` (nothing is started or created).

        Raises:
            TopologyError: The binaries are missing, or the service user cannot be made.
        """
        return cls(home=home, bindir=find_bindir(), user=service_user())

    @property
    def root(self) -> Path:
        return self.home / "postgres"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, role: str, port: int) -> str:
        """A SQLAlchemy URL of the `forge` database as `role`, with its password."""
        password = self._passwords()[role]  # token_urlsafe: nothing to escape in a URL
        return f"postgresql+psycopg://{role}:{password}@{HOST}:{port}/{DATABASE}"

    def _passwords(self) -> dict[str, str]:
        path = self.home / _CREDENTIALS
        try:
            found: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
            return found
        except FileNotFoundError:
            pass
        if (self.data / "PG_VERSION").is_file():
            raise TopologyError(
                f"the PostgreSQL cluster in {self.data} has no {path} with its passwords; "
                f"delete {self.root} to make a new cluster (its data is lost)"
            )
        made = {role: secrets.token_urlsafe(24) for role in (_SUPERUSER, OWNER_ROLE, APP_ROLE)}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(made, out)
        return made

    def pid(self) -> int | None:
        """The postmaster's pid when it runs from this data directory, else None."""
        try:
            first = (self.data / "postmaster.pid").read_text().split("\n", 1)[0]
        except FileNotFoundError:
            return None
        if not first.strip().isdigit():
            return None
        pid = int(first)
        argv = cmdline(pid)
        return pid if argv and str(self.data) in argv[1:] else None

    def start(self, port: int) -> int:
        """Create the cluster if it is new and start it on `port`; returns its pid.

        Raises:
            TopologyError: initdb or pg_ctl failed (the log tail is the detail).
        """
        self._prepare_root()
        if not (self.data / "PG_VERSION").is_file():
            self._initdb()
        options = (
            f"-p {port} -c listen_addresses={HOST} -c unix_socket_directories= "
            "-c max_connections=200"
        )
        self._run(
            "pg_ctl",
            ["-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"],
        )
        pid = self.pid()
        if pid is None:
            raise TopologyError(
                f"PostgreSQL started from {self.data} but no postmaster runs; see {self.log}",
                log_tail(self.log),
            )
        return pid

    def migrate(self, port: int) -> None:
        """Create the roles and the database if missing; migrate it as the owner.

        Raises:
            TopologyError: The migrations failed.
        """
        try:
            self._create_roles(port)
            upgrade(self.url(OWNER_ROLE, port), grant_to=APP_ROLE)
        except (psycopg.Error, StoreError, SQLAlchemyError) as exc:
            raise TopologyError(
                f"setting up or migrating the local PostgreSQL database failed: {exc}; "
                f"see {self.log}, fix it and run `forge dev up` again"
            ) from exc

    def stop(self) -> bool:
        """`pg_ctl stop -m fast`; returns whether a server was running.

        Raises:
            TopologyError: pg_ctl could not stop it.
        """
        if self.pid() is None:
            return False
        self._run("pg_ctl", ["-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop"])
        return True

    def answers(self, port: int) -> bool:
        """Whether the application role can connect and query (a real probe)."""
        try:
            with psycopg.connect(
                host=HOST,
                port=port,
                user=APP_ROLE,
                password=self._passwords()[APP_ROLE],
                dbname=DATABASE,
                connect_timeout=PROBE_TIMEOUT,
            ) as conn:
                return conn.execute("SELECT 1").fetchone() == (1,)
        except psycopg.Error:
            return False

    def _prepare_root(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.user is None:
            return
        info = pwd.getpwnam(self.user)
        os.chown(self.root, info.pw_uid, info.pw_gid)
        if (self.data).exists():
            return
        probe = subprocess.run(
            ["runuser", "-u", self.user, "--", "test", "-w", str(self.root)],
            capture_output=True,
            check=False,
        )
        if probe.returncode != 0:
            raise TopologyError(
                f"the PostgreSQL service user {self.user} cannot write {self.root}: a parent "
                "directory of FORGE_HOME is closed to other users; make the parents "
                "traversable (chmod o+x) or set FORGE_HOME to a directory under /var/lib or /srv"
            )

    def _initdb(self) -> None:
        # The superuser's password reaches initdb in a file only the service user reads.
        pwfile = self.root / "initdb-password"
        try:
            _write_private(pwfile, self._passwords()[_SUPERUSER] + "\n", self.user)
            args = ["-D", str(self.data), "-U", _SUPERUSER, f"--pwfile={pwfile}"]
            args += ["--auth-host=scram-sha-256", "--auth-local=peer", "--encoding=UTF8"]
            self._run("initdb", args)
        finally:
            pwfile.unlink(missing_ok=True)

    def _run(self, program: str, args: list[str]) -> None:
        argv = [str(self.bindir / program), *args]
        command = ["runuser", "-u", self.user, "--", *argv] if self.user else argv
        try:
            done = subprocess.run(
                command,
                cwd=self.root,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TopologyError(
                f"{program} did not finish within {_TIMEOUT} s; see {self.log}", log_tail(self.log)
            ) from None
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            raise TopologyError(
                f"{program} failed with exit {done.returncode} for {self.data}; see {self.log}",
                f"{output}\n{log_tail(self.log)}" if self.log.exists() else output,
            )

    def _create_roles(self, port: int) -> None:
        passwords = self._passwords()
        with psycopg.connect(
            host=HOST,
            port=port,
            user=_SUPERUSER,
            password=passwords[_SUPERUSER],
            dbname="postgres",
            autocommit=True,
        ) as conn:
            roles = {r for (r,) in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
            for role, attributes in ((OWNER_ROLE, ""), (APP_ROLE, " NOBYPASSRLS")):
                verb = "ALTER" if role in roles else "CREATE"
                statement = f"{verb} ROLE {{}} LOGIN NOSUPERUSER{attributes} PASSWORD {{}}"
                conn.execute(
                    sql.SQL(statement).format(sql.Identifier(role), sql.Literal(passwords[role]))
                )
            found = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if found is None:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(DATABASE), sql.Identifier(OWNER_ROLE)
                    )
                )


def _write_private(path: Path, text: str, user: str | None) -> None:
    """Write `text` to a new file `path`, mode 0600, owned by `user` (None: by us).

    Raises:
        TopologyError: Something else created `path` between our unlink and our create.
    """
    # The directory is the service user's: as root, a symlink it planted would be written
    # through, and a path chowned after closing could be swapped for one. So: a fresh file,
    # never a symlink, chowned through its descriptor.
    path.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise TopologyError(
            f"{path} was created again while Forge replaced it: another process writes "
            f"{path.parent}; stop it, then run `forge dev up` again"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        if user is not None:
            info = pwd.getpwnam(user)
            os.fchown(out.fileno(), info.pw_uid, info.pw_gid)
        out.write(text)


def service_user() -> str | None:
    """The unprivileged account PostgreSQL runs as when we are root (initdb refuses root).

    Raises:
        TopologyError: It is missing and could not be created.
    """
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVICE_USER)
        return SERVICE_USER
    except KeyError:
        pass
    argv = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
    created = subprocess.run([*argv, SERVICE_USER], capture_output=True, text=True, check=False)
    if created.returncode != 0:
        raise TopologyError(
            f"could not create the PostgreSQL service user {SERVICE_USER}: "
            f"{created.stderr.strip() or created.returncode}; create it yourself "
            f"(`useradd --system {SERVICE_USER}`) or run `forge dev up` as a non-root user"
        )
    return SERVICE_USER
