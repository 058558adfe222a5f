"""What every `forge` command shares: consoles, exit codes, errors, settings, Temporal, context."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer._click.core import Context as ClickContext  # typer vendors click: no public names
from typer._click.exceptions import NoArgsIsHelpError
from typer._click.formatting import HelpFormatter

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope_ids import DEFAULT_TENANT

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowUpdateFailedError

    from compiler.errors import CompilerError, PackError
    from compiler.plan.context import CompileContext
    from schemas.diagnostics import Diagnostic
    from schemas.scope import Scope
    from workers.settings import Settings

out = Console()
err = Console(stderr=True)
P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK = 0
EXIT_REJECTED = 2
# sysexits' EX_TEMPFAIL: nothing changed, and the same command may succeed later (no worker
# took a gate decision in time).
EXIT_UNAVAILABLE = 75


def fail(message: str, hint: str | None = None, *, code: ErrorCode) -> NoReturn:
    """`error: CODE: message — hint` as one stderr line (no hint: the catalogue's); exit 2.

    `code` has no default: each call names the catalogue code of its problem (USAGE_INVALID
    only for an argument or option the user got wrong), so a script can tell them apart.
    """
    fail_error(ForgeError(message, code=code, hint=hint))


def masked(text: str) -> str:
    """`text` as the CLI may print it: credentials masked (and noted), markup escaped."""
    from activities import masked_output
    from compiler.ladder.secrets.mask import mask_text

    new, found = mask_text(text)
    if found:
        from workers.cli import command_path  # the app, which imports this module

        masked_output.note("cli", command_path(sys.argv[1:]), found)
    return escape(new)


def record_masked_output() -> None:
    """Write what this command masked as guard events in its store; say so if it cannot."""
    if "activities.masked_output" not in sys.modules:
        return  # nothing was masked: the module that keeps the notes never loaded
    from activities import masked_output

    if not masked_output.pending():
        return
    from activities.store.events import open_event_store  # the store loads only to record
    from activities.store.output_masking import record_noted
    from compiler.ladder.secrets.mask import mask_text
    from workers.settings import Settings

    try:
        with open_event_store(Settings.from_env().database_url) as events:
            record_noted(events)
    except Exception as exc:  # noqa: BLE001 - the command's own outcome stands; one dim line
        lost = masked_output.take()[0]
        err.print(
            f"[dim]note: {len(lost)} masked credential finding(s) were not recorded as guard "
            f"events: {escape(mask_text(str(exc))[0])}[/]"
        )


TenantOption = Annotated[
    str, typer.Option("--tenant", metavar="TENANT", help="The tenant to act for (its store).")
]
ProjectOption = Annotated[
    str, typer.Option("--project", metavar="PROJECT", help="The project within the tenant.")
]


def scope_of(tenant: str = DEFAULT_TENANT, project: str | None = None) -> Scope:
    """The Scope a command's --tenant (and --project) name, or exit 2 saying what is wrong."""
    from pydantic import ValidationError

    from activities import masked_output
    from schemas.scope import SCOPE_ID_PATTERN, Scope

    try:
        scope = (
            Scope.of_tenant(tenant) if project is None else Scope(tenant=tenant, project=project)
        )
    except ValidationError:
        fail(
            f"--tenant {tenant!r}"
            + (f" / --project {project!r}" if project is not None else "")
            + " is not a valid id",
            f"ids match {SCOPE_ID_PATTERN}: a lower-case letter or digit, then lower-case "
            "letters, digits, '_', '-', '.'",
            code=ErrorCode.TENANT_INVALID,
        )
    masked_output.act_for(scope)  # what this command masks is recorded in its tenant's log
    return scope


def one_line_errors(verb: Callable[P, R]) -> Callable[P, R]:
    """A verb whose ForgeErrors (refusals, missing things, tampered data) exit 2 with one line."""
    from schemas.errors import ForgeError

    @functools.wraps(verb)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return verb(*args, **kwargs)
        except ForgeError as exc:
            fail_error(exc)

    return guarded


def fail_error(exc: ForgeError) -> NoReturn:
    """A ForgeError as its one line, `CODE: message (where) — what to do`, on stderr; exit 2."""
    print_error(exc)
    raise typer.Exit(EXIT_REJECTED)


def print_error(exc: ForgeError) -> None:
    """The one error line of `exc` on stderr, credentials masked."""
    err.print(f"[red]error:[/] {masked(_one_line(exc.line()))}", soft_wrap=True)


def _one_line(text: str) -> str:
    # A message listing several problems keeps them, on the one line a script reads.
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def fail_usage(exc: typer.TyperException) -> NoReturn:
    """A usage or type error click found (`--tokens abc`, a missing option): USAGE_INVALID."""
    if isinstance(exc, NoArgsIsHelpError):
        raise exc  # `forge budget` alone: its help, as asked
    message = exc.format_message().rstrip(".")
    ctx = getattr(exc, "ctx", None)
    hint = f"`{ctx.command_path} --help` lists its arguments and options" if ctx else None
    fail(message, hint, code=ErrorCode.USAGE_INVALID)


class VerbGroup(typer.core.TyperGroup):
    """A group whose help lists each verb with its whole first sentence, wrapped to the terminal.

    Help is click's plain format (the root app sets `rich_markup_mode=None`): typer's rich help
    loads its Markdown and traceback renderers, over 100 ms, on every `--help` (issue 34 §1).
    Click cuts a verb's line at the terminal's width with "..."; this wraps it instead.
    """

    def format_commands(self, ctx: ClickContext, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            verb = self.get_command(ctx, name)
            if verb is not None and not verb.hidden:
                rows.append((name, verb.get_short_help_str(limit=_WHOLE_SENTENCE)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


_WHOLE_SENTENCE = 1_000  # click stops a short help at its first sentence's end


class OneErrorFormat(VerbGroup):
    """The root group: every error any verb meets leaves through fail_usage or fail_error.

    Click's own errors (a bad type, an unknown option, a missing argument) would otherwise be its
    boxed usage panel; a ForgeError no verb caught would be a traceback.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: ClickContext | None = None,
        **extra: Any,
    ) -> ClickContext:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except typer.TyperException as exc:
            fail_usage(exc)

    def invoke(self, ctx: ClickContext) -> Any:
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:
            fail_usage(exc)
        except ForgeError as exc:
            fail_error(exc)


def run_async(coro: Coroutine[Any, Any, R]) -> R:
    """`asyncio.run(coro)`, asyncio imported only by the verbs that run one (issue 34 §1)."""
    import asyncio

    return asyncio.run(coro)


def settings() -> Settings:
    """This invocation's settings, or exit 2 naming the variable that is wrong."""
    from workers.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as exc:
        fail_error(exc)


async def temporal_client(s: Settings, *, read_only: bool = False) -> Client:
    """Connect to Temporal (starting the embedded dev server if needed), or exit 2 saying why.

    `read_only`: a verb that only reads or signals runs (`status`, `runs`, `budget show`)
    connects without ForgePlugin, which loads the workflows and the worker (issue 34 §1).
    """
    from workers.process.devserver import DevServerError
    from workers.services.temporal_connect import TemporalConnectError

    if read_only:
        from workers.services.run_reads import connect_reader as connect
    else:
        from workers.services.runs import connect
        from workers.telemetry import tracing

        # A verb that submits runs (or serves them in process, `forge run`) records them; the
        # worker and API verbs installed theirs first, under their own role.
        tracing.install(s, "cli")
    try:
        return await connect(s)
    except DevServerError as exc:
        if exc.detail:  # a log tail: its own dim lines, above the one error line
            err.print(f"[dim]{masked(exc.detail)}[/]")
        fail_error(exc)
    except TemporalConnectError as exc:
        fail_error(exc)


def diagnostics_table(diagnostics: list[Diagnostic], source: str) -> Table:
    table = Table(
        title=f"{len(diagnostics)} problem(s) in {source}", title_justify="left", show_lines=True
    )
    table.add_column("code", style="bold red", no_wrap=True)
    table.add_column("where", style="cyan", overflow="fold")
    table.add_column("problem", overflow="fold")
    table.add_column("what to do", style="green", overflow="fold")
    for d in diagnostics:
        where = " / ".join(x for x in (d.step_key, d.slot, d.field) if x) or "plan"
        table.add_row(d.code, masked(where), masked(d.message), masked(d.hint))
    return table


def reject_plan(exc: CompilerError, source: str) -> NoReturn:
    err.print(diagnostics_table(exc.diagnostics, source))
    err.print("[red]rejected:[/] nothing was compiled; fix every problem above and compile again.")
    raise typer.Exit(EXIT_REJECTED)


def reject_packs(exc: PackError) -> NoReturn:
    table = Table(
        title=f"{len(exc.problems)} problem(s) in the type library",
        title_justify="left",
        show_lines=True,
    )
    table.add_column("file", style="cyan", overflow="fold")
    table.add_column("field", style="bold", overflow="fold")
    table.add_column("problem", overflow="fold")
    for source, field, message in exc.problems:
        table.add_row(masked(source), masked(field), masked(message))
    err.print(table)
    err.print("[red]rejected:[/] fix the pack files above (see `forge packs check DIR`).")
    raise typer.Exit(EXIT_REJECTED)


def compile_context(profile: str | None) -> CompileContext:
    """The type library (stdlib + FORGE_PACKS_PATH) and profile layers for this invocation."""
    from activities.compile.typelib import load_library, load_profiles
    from compiler.errors import PackError
    from compiler.plan.context import CompileContext

    s = settings()
    try:
        library = load_library(s.packs_path)
        layers, ref = load_profiles(s.packs_path, home=s.home, run_profile=profile)
    except PackError as exc:
        reject_packs(exc)
    return CompileContext(library=library, profiles=layers, profile_ref=ref)


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing file or a syntax error exits 2 naming file, line, column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: no such file", code=ErrorCode.PLAN_FILE_INVALID)
    except IsADirectoryError:
        fail(f"{path}: is a directory, expected a plan JSON file", code=ErrorCode.PLAN_FILE_INVALID)
    except UnicodeDecodeError as exc:
        fail(f"{path}: not UTF-8 text (byte {exc.start})", code=ErrorCode.PLAN_FILE_INVALID)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        fail(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
            "a plan is one JSON object in the forge.plan/1 schema",
            code=ErrorCode.PLAN_FILE_INVALID,
        )


def read_plan(path: Path) -> dict[str, Any]:
    """A plan file as every verb reads it: JSON, each step's `code_file` inlined as its `code`."""
    from workers.services import runs

    try:
        return runs.load_plan_document(path, read_json(path))
    except runs.PlanFileError as exc:
        fail_error(exc)


def refusal(exc: WorkflowUpdateFailedError) -> str:
    """Why a run refused an update, as it said it (without the exception's class)."""
    from temporalio.exceptions import ApplicationError

    cause = exc.cause
    return cause.message if isinstance(cause, ApplicationError) else str(cause)


def refusal_code(exc: WorkflowUpdateFailedError, default: ErrorCode) -> ErrorCode:
    """The code a run refused an update with (its failure type), or `default` if it named none."""
    from temporalio.exceptions import ApplicationError

    from schemas.error_codes import parse_code

    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type:
        code = parse_code(cause.type)
        if code is not ErrorCode.ERROR:
            return code
    return default
