"""docs/cli-schedules.md's transcript, run live: a weekly schedule of the billing-audit capsule,
its backfill, the same backfill again, a forced re-run, pause, list, unpause, trigger, update,
delete, and the refusals.

Every `$ forge …` line of the page runs in order on one FORGE_HOME against the session's dev
server, with a worker for the test's task queue in a thread of its own (the CLI's commands each
run their own event loop). The page's relative paths are used as they are, under a temporary
working directory that holds the capsule's source data and one directory per ISO week a run
reads. Before each `describe`, the scheduled workflows started so far have closed. What differs
from run to run is mapped back to what the page shows before comparing: the `next:` fire times
(checked against the calendar first), and the scheduled run ids (each new one to the shown one
it stands for: their 8 hex digits, and for the triggered run its time, are new each run).
"""

import asyncio
import re
import shlex
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from datetime import time as clock
from pathlib import Path
from zoneinfo import ZoneInfo

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from schemas.names import SCHEDULED_WORKFLOW
from tests.docs.running import assert_prints_shown, printed_by
from tests.docs.shown import ROOT, Shown, shown_commands
from tests.workflows.engine import engine
from workers.services.temporal_connect import open_client
from workers.settings import Settings

PAGE = ROOT / "docs" / "cli-schedules.md"
NAME = "billing-weekly"
SCHEDULE_ID = f"forge-default:{NAME}"  # workers/services/schedules.py schedule_id, default tenant
RUN_ID = re.compile(rf"sched-{NAME}-\d{{8}}-\d{{6}}-[0-9a-f]{{8}}")
NEXT = re.compile(r"^  next: (.*)$", re.MULTILINE)
WEEK_TEMPLATE = ".forge/demo/weeks/{scheduled:%G-W%V}/"
DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
INPUTS = (("time_entries", "csv"), ("rate_cards", "csv"), ("contracts", "json"))
WAIT_S = 120


def test_the_schedule_transcript(cli, temporal_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page's relative paths resolve here
    monkeypatch.setenv("FORGE_INPUT_ROOTS", str(tmp_path))
    settings = Settings.from_env()
    commands = list(shown_commands(PAGE))
    create = next(s for s in commands if s.command.startswith(f"forge schedule create {NAME} "))
    assert WEEK_TEMPLATE in create.command, "the page's inputs are no longer weekly directories"
    calendar = _calendar(create.command)
    weeks = {f"{at:%G-W%V}" for at in _weekly_reads(commands, calendar)}
    weeks |= {  # `trigger` runs now, on this week's files
        f"{datetime.now(ZoneInfo(calendar[1])) + timedelta(minutes=m):%G-W%V}" for m in (0, 15)
    }
    _data(tmp_path, weeks)
    source = cli(
        "run", ROOT / "examples" / "billing-audit" / "frozen-plan.json",
        *(f"--input={n}=.forge/demo/data/{n}.{ext}" for n, ext in INPUTS),
    )  # fmt: skip
    assert source.exit_code == 0, source.output
    [run_id] = set(re.findall(r"run-\d{8}-\d{6}-[0-9a-f]{6}", source.output))
    made = cli("capsule", "extract", run_id, "--name", "billing-audit")
    assert made.exit_code == 0, made.output
    ids: dict[str, str] = {}  # this test's run id -> the shown one it stands for
    started = 0  # scheduled workflows Temporal has been asked to start so far
    try:
        with _worker(temporal_env, settings):
            for shown in commands:
                args = shlex.split(shown.command)[1:]
                if args[:2] == ["schedule", "describe"]:
                    _wait_closed(settings, started)
                elif args[:2] == ["schedule", "update"]:
                    calendar = _calendar(shown.command)
                before = datetime.now(UTC)
                printed = printed_by(shown, shown.command)
                if args[:2] == ["schedule", "backfill"]:
                    started += len(_fires(calendar, *_span(args)))
                elif args[:2] == ["schedule", "trigger"]:
                    started += 1
                printed = _next_as_shown(printed, "\n".join(shown.output), calendar, before)
                _map_ids(printed, "\n".join(shown.output), ids)
                for new, old in ids.items():
                    printed = printed.replace(new, old)
                assert_prints_shown(shown, printed, str(settings.home))
    finally:
        asyncio.run(_delete_schedule(settings))  # a failed run leaves no schedule behind


def _data(tmp: Path, weeks: set[str]) -> None:
    """The capsule's source data (as `make demo` makes it) and each week's files."""
    sys.path.insert(0, str(ROOT / "examples" / "billing-audit"))
    try:
        import generate  # the generator `make demo` runs
    finally:
        sys.path.pop(0)
    generate.generate(tmp / ".forge" / "demo" / "data", seed=2)
    for week in sorted(weeks):
        generate.generate(tmp / ".forge" / "demo" / "weeks" / week, seed=int(week[-2:]))


def _calendar(command: str) -> tuple[str, str]:
    """The `--cron` and `--tz` of a shown create or update."""
    args = shlex.split(command)
    return args[args.index("--cron") + 1], args[args.index("--tz") + 1]


def _span(args: list[str]) -> tuple[datetime, datetime]:
    """A backfill's --start and --end."""
    start, end = (args[args.index(o) + 1] for o in ("--start", "--end"))
    return datetime.fromisoformat(start), datetime.fromisoformat(end)


def _fires(calendar: tuple[str, str], start: datetime, end: datetime) -> list[datetime]:
    """The UTC times a weekly `M H * * DAY` cron in its zone fires in [start, end]."""
    minute, hour, _, _, day = calendar[0].split()
    zone = ZoneInfo(calendar[1])
    first = start.astimezone(zone).date()
    found = []
    for offset in range((end - start).days + 2):
        date = first + timedelta(days=offset)
        at = datetime.combine(date, clock(int(hour), int(minute)), tzinfo=zone).astimezone(UTC)
        if DAYS[date.weekday()] == day and start <= at <= end:
            found.append(at)
    return found


def _weekly_reads(commands: list[Shown], calendar: tuple[str, str]) -> Iterator[datetime]:
    """Every time a shown backfill runs (each reads its ISO week's directory), in the zone."""
    for shown in commands:
        args = shlex.split(shown.command)[1:]
        if args[:2] == ["schedule", "backfill"]:
            for at in _fires(calendar, *_span(args)):
                yield at.astimezone(ZoneInfo(calendar[1]))


def _next_as_shown(printed: str, shown: str, calendar: tuple[str, str], before: datetime) -> str:
    """The printed `next:` times, once checked to be the calendar's next three, as shown (whose
    times must be three in a row of the same calendar)."""
    now, want = NEXT.search(printed), NEXT.search(shown)
    if now is None or want is None:
        return printed
    assert now.group(1) == _next_three(calendar, before), printed
    first = datetime.strptime(want.group(1)[:16], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert want.group(1) == _next_three(calendar, first), f"{PAGE}: {want.group(0)}"
    return printed.replace(now.group(0), want.group(0))


def _next_three(calendar: tuple[str, str], after: datetime) -> str:
    times = _fires(calendar, after, after + timedelta(days=22))[:3]
    return ", ".join(f"{t:%Y-%m-%d %H:%M} UTC" for t in times)


def _map_ids(printed: str, shown: str, ids: dict[str, str]) -> None:
    """Each run id first printed here stands for the shown id not yet mapped, in order."""
    new = [i for i in dict.fromkeys(RUN_ID.findall(printed)) if i not in ids]
    old = [i for i in dict.fromkeys(RUN_ID.findall(shown)) if i not in ids.values()]
    ids.update(zip(new, old, strict=False))


@contextmanager
def _worker(env: WorkflowEnvironment, settings: Settings) -> Iterator[None]:
    """A Forge worker for the test's task queue, in a thread with its own event loop."""
    ready = threading.Event()
    stop: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
    failed: list[BaseException] = []

    async def serve() -> None:
        stop.append((asyncio.get_running_loop(), asyncio.Event()))
        async with engine(env, settings.home, settings.task_queue, settings=settings):
            ready.set()
            await stop[0][1].wait()

    def main() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            failed.append(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=main, name="schedule-worker", daemon=True)
    thread.start()
    assert ready.wait(WAIT_S), "the worker did not start"
    try:
        if failed:
            raise failed[0]
        yield
    finally:
        if stop and thread.is_alive():
            loop, event = stop[0]
            loop.call_soon_threadsafe(event.set)
        thread.join(WAIT_S)
    if failed:  # the engine's own check of the events the runs wrote
        raise failed[0]


def _wait_closed(settings: Settings, n: int) -> None:
    """Wait until `n` scheduled workflows on the test's task queue have closed."""

    async def closed() -> int:
        client = await open_client(settings)
        query = f'WorkflowType = "{SCHEDULED_WORKFLOW}" AND TaskQueue = "{settings.task_queue}"'
        deadline = time.monotonic() + WAIT_S
        while True:
            done = 0
            async for wf in client.list_workflows(query):
                done += wf.status != WorkflowExecutionStatus.RUNNING
            if done >= n or time.monotonic() > deadline:
                return done
            await asyncio.sleep(0.25)

    done = asyncio.run(closed())
    assert done >= n, f"{done} of {n} scheduled runs of {NAME} closed in {WAIT_S}s"


async def _delete_schedule(settings: Settings) -> None:
    client = await open_client(settings)
    with suppress(RPCError):
        await client.get_schedule_handle(SCHEDULE_ID).delete()
