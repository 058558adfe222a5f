"""The `forge` command line: one typer app; each verb lives in its own module."""

import typer
import typer.main

from workers.cli.access import keys_app, tenants_app
from workers.cli.api import api_cmd
from workers.cli.artifacts import artifacts_cmd, receipts_cmd
from workers.cli.budget import budget_app
from workers.cli.capsule import capsule_app
from workers.cli.common import (
    EXIT_REJECTED,
    OneErrorFormat,
    one_line_errors,
    print_error,
    record_masked_output,
)
from workers.cli.compile import compile_cmd, explain_cmd
from workers.cli.deploy import deploy_app
from workers.cli.dev import dev_app
from workers.cli.doctor import doctor_cmd
from workers.cli.errors import errors_cmd
from workers.cli.events import db_app, events_app
from workers.cli.gates import approve_cmd, gates_cmd, reject_cmd
from workers.cli.guard import guard_app
from workers.cli.packs import packs_app
from workers.cli.recipes import recipes_app
from workers.cli.run import resume_cmd, run_cmd, worker_cmd
from workers.cli.sandbox import sandbox_app
from workers.cli.schedule import schedule_app
from workers.cli.schemas import schemas_app
from workers.cli.skills import skills_app
from workers.cli.status import cancel_cmd, runs_cmd, status_cmd, watch_cmd
from workers.cli.tenant_settings import tenants_show, tenants_update
from workers.cli.timings import timings_cmd
from workers.cli.webhooks import webhooks_app

app = typer.Typer(
    name="forge",
    help="Forge compiles plans into governed, hashed step contracts that run on Temporal.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=OneErrorFormat,  # click's usage errors and stray ForgeErrors: one line, exit 2
    rich_markup_mode=None,  # click's plain help, for every group and verb: see VerbGroup
)
app.command("compile")(compile_cmd)
app.command("explain")(explain_cmd)
app.command("run")(one_line_errors(run_cmd))  # a quota refusal, a missing attribute: one line
app.command("status")(status_cmd)
app.command("watch")(watch_cmd)
app.command("runs")(runs_cmd)
app.command("cancel")(cancel_cmd)
app.command("artifacts")(artifacts_cmd)
app.command("receipts")(receipts_cmd)
app.command("worker")(worker_cmd)
app.command("resume")(one_line_errors(resume_cmd))
app.command("gates")(gates_cmd)
app.command("approve")(approve_cmd)
app.command("reject")(reject_cmd)
app.command("errors")(errors_cmd)
app.command("api")(api_cmd)
app.command("doctor")(doctor_cmd)
app.add_typer(budget_app, name="budget")
app.add_typer(capsule_app, name="capsule")
app.add_typer(deploy_app, name="deploy")
app.add_typer(dev_app, name="dev")
events_app.command("timings")(timings_cmd)
app.add_typer(events_app, name="events")
app.add_typer(guard_app, name="guard")
app.add_typer(keys_app, name="keys")
app.add_typer(db_app, name="db")
app.add_typer(packs_app, name="packs")
app.add_typer(recipes_app, name="recipes")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(schedule_app, name="schedule")
app.add_typer(schemas_app, name="schemas")
app.add_typer(skills_app, name="skills")
tenants_app.command("update")(tenants_update)
tenants_app.command("show")(tenants_show)
app.add_typer(tenants_app, name="tenants")
app.add_typer(webhooks_app, name="webhooks")


def main() -> None:
    """Console-script entry point: a ForgeError no verb handled is one line and exit 2."""
    from schemas.errors import ForgeError
    from workers.process import logmask
    from workers.process.runtime import tune_gc

    tune_gc()
    logmask.install()
    try:
        app()
    except ForgeError as exc:  # raised outside a verb (the root group sends a verb's to fail_error)
        print_error(exc)
        raise SystemExit(EXIT_REJECTED) from None
    finally:
        record_masked_output()  # what it masked in its lines and logs, as guard events


def command_path(args: list[str]) -> str:
    """The verb `args` name, as `forge schedule create` (its arguments and options left out)."""
    words, command = ["forge"], typer.main.get_command(app)
    for arg in args:
        sub = getattr(command, "commands", {}).get(arg)  # a group's verbs; a verb has none
        if sub is None:
            break
        words.append(arg)
        command = sub
    return " ".join(words)
