"""The stdlib skill packages with scripts, loaded by the real loader and run in the real sandbox.

Each script runs the way a step calls it (seed 000 Part VII): `python /skills/<id>/scripts/...`
inside bubblewrap, cwd /workspace, with the package bound read-only at /skills/<id>. Outputs are
compared exactly and validated against the output schema the loader read from the package.
"""

from __future__ import annotations

from pathlib import Path

from schemas.skills import SkillPackage
from tests.stdlib.skill_packages.support import (
    SALES,
    TABLE,
    ok,
    put,
    read_json,
    run,
    schema_errors,
)
from tests.support.sandbox import needs_bwrap

# --- tabular-toolkit --------------------------------------------------------------------------


REGIONS = "region\tmanager\tamount\nnorth\tAnn\t1\nsouth\tBob\t2\nwest\tCy\t3\n"


@needs_bwrap
def test_profile_infers_types_counts_and_ranges(ws: Path, skills: dict[str, SkillPackage]) -> None:
    sales = put(ws, "sales.csv", SALES)
    summary = ok(run(ws, TABLE, "table.py", "profile", sales, "--out", "output/profile.json"))
    assert summary == {
        "command": "profile",
        "input": sales,
        "out": "output/profile.json",
        "rows": 4,
        "columns": 6,
    }
    profile = read_json(ws / "output" / "profile.json")
    assert profile == {
        "source": "input/sales.csv",
        "format": "csv",
        "rows": 4,
        "columns": [
            {"name": "id", "type": "integer", "nulls": 0, "distinct": 4, "min": 1, "max": 4},
            {"name": "region", "type": "string", "nulls": 0, "distinct": 3},
            {"name": "amount", "type": "number", "nulls": 1, "distinct": 3, "min": 5, "max": 20},
            {
                "name": "sold_on",
                "type": "date",
                "nulls": 0,
                "distinct": 4,
                "min": "2023-12-31",
                "max": "2024-02-10",
            },
            {"name": "code", "type": "string", "nulls": 0, "distinct": 4},
            {"name": "note", "type": "string", "nulls": 1, "distinct": 2},
        ],
    }
    assert schema_errors(skills[TABLE].output_schema, profile) == []


@needs_bwrap
def test_filter_join_aggregate_and_convert_give_exact_outputs(ws: Path) -> None:
    sales, regions = put(ws, "sales.csv", SALES), put(ws, "regions.tsv", REGIONS)
    filtered = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "filter",
            sales,
            "--where",
            "amount >= 10",
            "--where",
            "region != east",
            "--out",
            "output/big.csv",
        )
    )
    assert (filtered["rows_in"], filtered["rows_out"]) == (4, 2)
    assert (ws / "output" / "big.csv").read_text() == (
        "id,region,amount,sold_on,code,note\n"
        "1,north,10.5,2024-01-05,007,\n"
        '2,south,20,2024-02-10,008,"late, paid"\n'
    )
    dated = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "filter",
            sales,
            "--where",
            "sold_on < 2024-01-02",
            "--where",
            "note contains o",
            "--out",
            "output/early.jsonl",
        )
    )
    assert dated["rows_out"] == 2
    assert (ws / "output" / "early.jsonl").read_text() == (
        '{"id": 3, "region": "north", "amount": null, "sold_on": "2024-01-01", '
        '"code": "009", "note": "ok"}\n'
        '{"id": 4, "region": "east", "amount": 5, "sold_on": "2023-12-31", '
        '"code": "010", "note": "ok"}\n'
    )

    joined = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "join",
            "--left",
            sales,
            "--right",
            regions,
            "--on",
            "region",
            "--how",
            "left",
            "--out",
            "output/joined.csv",
        )
    )
    assert joined["columns"][-2:] == ["manager", "amount_right"] and joined["rows_out"] == 4
    assert (ws / "output" / "joined.csv").read_text() == (
        "id,region,amount,sold_on,code,note,manager,amount_right\n"
        "1,north,10.5,2024-01-05,007,,Ann,1\n"
        '2,south,20,2024-02-10,008,"late, paid",Bob,2\n'
        "3,north,,2024-01-01,009,ok,Ann,1\n"
        "4,east,5,2023-12-31,010,ok,,\n"
    )
    inner = ok(
        run(
            ws,
            TABLE,
            "table.py",
            "join",
            "--left",
            sales,
            "--right",
            regions,
            "--on",
            "region",
            "--out",
            "output/inner.json",
        )
    )
    assert inner["rows_out"] == 3
    assert [r["id"] for r in read_json(ws / "output" / "inner.json")] == [1, 2, 3]

    ok(
        run(
            ws,
            TABLE,
            "table.py",
            "aggregate",
            sales,
            "--group-by",
            "region",
            "--agg",
            "count:*",
            "sum:amount",
            "mean:amount",
            "max:sold_on",
            "distinct:note",
            "--out",
            "output/agg.csv",
        )
    )
    assert (ws / "output" / "agg.csv").read_text() == (
        "region,count,sum_amount,mean_amount,max_sold_on,distinct_note\n"
        "east,1,5,5.0,2023-12-31,1\n"
        "north,2,10.5,10.5,2024-01-05,1\n"
        "south,1,20,20.0,2024-02-10,1\n"
    )

    ok(run(ws, TABLE, "table.py", "convert", sales, "--out", "output/sales.json"))
    rows = read_json(ws / "output" / "sales.json")
    assert rows[0] == {
        "id": 1,
        "region": "north",
        "amount": 10.5,
        "sold_on": "2024-01-05",
        "code": "007",
        "note": None,
    }
    ok(run(ws, TABLE, "table.py", "convert", "output/sales.json", "--out", "output/back.csv"))
    assert (ws / "output" / "back.csv").read_text() == SALES
    ok(run(ws, TABLE, "table.py", "convert", regions, "--to", "jsonl", "--out", "work/r.txt"))
    assert (ws / "work" / "r.txt").read_text().splitlines()[0] == (
        '{"region": "north", "manager": "Ann", "amount": 1}'
    )


@needs_bwrap
def test_table_errors_name_the_file_row_and_column(ws: Path) -> None:
    sales = put(ws, "sales.csv", SALES)
    result = run(ws, TABLE, "table.py", "filter", sales, "--where", "note > 3", "--out", "o.csv")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "table.py filter: error: input/sales.csv, row 2 (line 3), column 'note': 'late, paid' "
        "is not a number, but --where 'note > 3' compares it as one"
    )
    ragged = put(ws, "ragged.csv", "a,b\n1,2\n3\n")
    result = run(ws, TABLE, "table.py", "profile", ragged)
    assert result.exit_code == 1
    assert "input/ragged.csv, row 2 (line 3): 1 fields but the header has 2 columns" in (
        result.stderr
    )
    result = run(ws, TABLE, "table.py", "aggregate", sales, "--agg", "sum:region", "--out", "o.csv")
    assert result.exit_code == 1
    assert "input/sales.csv, row 1 (line 2), column 'region': 'north' is not a number" in (
        result.stderr
    )
    result = run(ws, TABLE, "table.py", "filter", sales, "--where", "price > 3", "--out", "o.csv")
    assert "no column 'price'" in result.stderr and "'amount'" in result.stderr
