"""`forge schedule` refusals: each is one line, exit 2, and creates nothing on Temporal."""

from tests.workers.test_cli_capsule import _billing_run, forge, one_error_line

__all__ = ["forge"]

TEMPLATES = [
    "--input",
    "time_entries=data/{scheduled:%Y-%m-%d}/time_entries.csv",
    "--input",
    "rate_cards=data/{scheduled:%Y-%m-%d}/rate_cards.csv",
    "--input",
    "contracts=data/{scheduled:%Y-%m-%d}/contracts.json",
]


def test_bad_schedules_are_refused_and_nothing_is_created(cli, forge, tmp_path):
    run_id = _billing_run(cli, tmp_path, 2)
    made = cli("capsule", "extract", run_id, "--name", "billing")
    assert made.exit_code == 0, made.output
    every = ["--capsule", "billing", "--every", "1h"]
    cases = [
        (["--capsule", "billing", "--cron", "0 25 * * *", *TEMPLATES], "the hour field has '25'"),
        ([*every, "--tz", "Mars/Olympus", *TEMPLATES], "--tz 'Mars/Olympus' is not a known zone"),
        (["--capsule", "payroll", "--every", "1h", *TEMPLATES], "no capsule 'payroll'"),
        ([*every, *TEMPLATES, "--param", "limit=3"], "limit"),
        ([*every, *TEMPLATES, "--input", "extra=x.csv"], "has no input 'extra'"),
        (
            [*every, *TEMPLATES[:2]],
            "missing input template(s) for --input rate_cards, --input contracts",
        ),
        ([*every, *TEMPLATES[:4], "--input", "contracts=c/{when}.json"], "--input contracts"),
        ([*every, "--overlap", "sometimes", *TEMPLATES], "--overlap"),
        (["--capsule", "billing", "--every", "0m", *TEMPLATES], "--every"),
        (["--capsule", "billing", *TEMPLATES], "exactly one of --cron EXPR and --every"),
    ]
    for args, says in cases:
        one_error_line(forge("schedule", "create", "weekly", *args), says)
    listed = cli("schedule", "list")
    assert listed.exit_code == 0 and "no schedules for tenant default" in listed.output
    # A good one is created once; the same name again is refused.
    good = cli("schedule", "create", "weekly", *every, *TEMPLATES)
    assert good.exit_code == 0, good.output
    assert "next run uses billing@1 (the newest)" in good.output
    one_error_line(forge("schedule", "create", "weekly", *every, *TEMPLATES), "exists")
    one_error_line(forge("schedule", "describe", "nightly"), "no schedule 'nightly'")
    span = ["--start", "2026-11-02T00:00Z", "--end", "2026-11-03T00:00Z"]
    one_error_line(forge("schedule", "backfill", "nightly", *span, "--force"), "no schedule")
    backwards = ["--start", "2026-11-03T00:00Z", "--end", "2026-11-02T00:00Z"]
    one_error_line(forge("schedule", "backfill", "weekly", *backwards), "the start first")
    forced = cli("schedule", "backfill", "weekly", *span, "--force")
    assert forced.exit_code == 0, forced.output
    assert "forced backfill of weekly" in forced.output and "run once more" in forced.output
    described = cli("schedule", "describe", "weekly")
    assert "forced re-runs 0" in described.output, described.output  # no worker ran any
    # Another tenant sees none of it.
    one_error_line(forge("schedule", "describe", "weekly", "--tenant", "acme"), "no schedule")
    other = cli("schedule", "list", "--tenant", "acme")
    assert "no schedules for tenant acme" in other.output
    assert cli("schedule", "delete", "weekly").exit_code == 0
