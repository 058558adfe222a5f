"""Deterministic billing-audit data set (753 time entries) with an exact answer key.

Files written to OUT_DIR:

* ``time_entries.csv`` — one row per logged block of time: ``entry_id, consultant_id, client_id,
  project_id, work_date (YYYY-MM-DD), hours, billable (true/false), description, billed_rate,
  billed_amount``. The last two are what the invoice actually billed for the entry.
* ``rate_cards.csv`` — ``rate_code, consultant_id, client_id, hourly_rate, currency,
  effective_from, effective_to`` (empty ``effective_to`` = open-ended; both ends inclusive).
* ``contracts.json`` — JSON array of ``contract_id, client_id, start_date, end_date, cap_hours,
  cap_amount, discount_pct, currency`` (``null`` cap = no cap; dates inclusive).
* ``answer_key.json`` — the seeded discrepancies, sorted by ``entry_id``:
  ``[{entry_id, kind, expected_amount, billed_amount, delta}]``.

Definitions (the frozen steps implement exactly these; everything not seeded is billed correctly,
so the answer key is the complete list of discrepancies):

* money(h, r, d) = h × r × (100 − d) / 100 computed in decimal and rounded once to the cent,
  half-even. Amounts are compared to the cent; delta = billed_amount − expected_amount.
* Applicable rate: the rate card of the entry's (consultant_id, client_id) whose
  [effective_from, effective_to] contains work_date. Applicable contract: the client's contract
  whose [start_date, end_date] contains work_date (exactly one exists for every entry).
* Duplicate: an entry with the same (consultant_id, client_id, project_id, work_date, hours,
  description) as an entry with a smaller entry_id; the smallest entry_id is the original.
* Countable entry: billable, not a duplicate, with an applicable rate. Only countable entries
  consume a contract's caps; they are taken in (work_date, entry_id) order per contract.
  For a countable entry with ``cum_h``/``cum_a`` hours/amount consumed by earlier countable
  entries of its contract: allowed_hours = hours if cap_hours is null else
  min(hours, max(0, cap_hours − cum_h)); expected = money(allowed_hours, rate, discount), then,
  if cap_amount is set, min(expected, max(0, cap_amount − cum_a)). The entry consumes its full
  hours and its expected amount. Every non-countable entry has expected_amount 0.00.
* Each entry yields at most one discrepancy, checked in this order, and only when
  billed_amount ≠ expected_amount:
  1. duplicate_entry — the entry is a duplicate (expected 0.00);
  2. non_billable_billed — billable is false (expected 0.00);
  3. missing_rate — billable but no applicable rate (expected 0.00);
  4. over_cap — countable and allowed_hours < hours or the amount cap cut the amount;
  5. discount_missing — billed_rate equals the applicable rate, discount_pct > 0 and
     billed_amount = money(hours, rate, 0);
  6. rate_mismatch — any other difference (billed_rate differs from the applicable rate, or the
     amount does not follow from it).

Seeded: 9 rate_mismatch (4 billed at the pre-change rate after a rate change, 5 at a wrong
rate), 7 over_cap (4 past an hours cap, 3 past an amount cap; the first of each straddles the
cap), 6 missing_rate (4 for a consultant with no rate card for that client, 2 in a gap between
two rate cards), 8 duplicate_entry, 6 non_billable_billed, 7 discount_missing.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

TOTAL_ENTRIES = 753
QUARTER_START = date(2025, 1, 1)
QUARTER_END = date(2025, 3, 31)
RATE_CHANGE = date(2025, 2, 15)  # rate cards of RATE_CHANGE_PAIRS step up on this date
CENT = Decimal("0.01")
_DAY = timedelta(days=1)

CONSULTANTS = {  # consultant_id -> base hourly rate
    "CON-01": Decimal("150"),
    "CON-02": Decimal("175"),
    "CON-03": Decimal("192.50"),
    "CON-04": Decimal("140"),
    "CON-05": Decimal("210"),
    "CON-06": Decimal("167.50"),
}
CLIENT_PREMIUM = {
    "CL-ACME": Decimal("0"),
    "CL-BOREAL": Decimal("10"),
    "CL-CIRRUS": Decimal("-5"),
    "CL-DELTA": Decimal("15"),
    "CL-EMBER": Decimal("7.50"),
}
ASSIGNMENTS = {  # who works for whom (each pair has a rate card)
    "CON-01": ["CL-ACME", "CL-BOREAL", "CL-DELTA"],
    "CON-02": ["CL-ACME", "CL-CIRRUS"],
    "CON-03": ["CL-BOREAL", "CL-DELTA", "CL-EMBER"],
    "CON-04": ["CL-CIRRUS", "CL-EMBER", "CL-ACME"],
    "CON-05": ["CL-DELTA", "CL-BOREAL"],
    "CON-06": ["CL-EMBER", "CL-ACME", "CL-DELTA"],
}
PROJECTS = {
    "CL-ACME": ["ACME-ERP", "ACME-DATA"],
    "CL-BOREAL": ["BOREAL-CLOUD"],
    "CL-CIRRUS": ["CIRRUS-AUDIT", "CIRRUS-BI"],
    "CL-DELTA": ["DELTA-CRM", "DELTA-OPS"],
    "CL-EMBER": ["EMBER-WEB"],
}
BILLABLE_WORK = [
    "Requirements workshop",
    "Solution design",
    "Implementation",
    "Data migration",
    "Testing and fixes",
    "Stakeholder review",
    "Documentation",
    "Deployment support",
]
NON_BILLABLE_WORK = ["Internal knowledge share", "Travel (non-billable)", "Onboarding"]
RATE_CHANGE_PAIRS = [("CON-01", "CL-ACME"), ("CON-03", "CL-DELTA"), ("CON-05", "CL-BOREAL")]
# A consultant who worked for a client without any rate card for the pair.
UNRATED_PAIR, UNRATED_COUNT = ("CON-06", "CL-CIRRUS"), 4
# A pair whose rate cards leave a gap (no rate in force on these dates).
GAP_PAIR, GAP_DAYS = ("CON-04", "CL-EMBER"), [date(2025, 2, 11), date(2025, 2, 13)]
GAP_FROM, GAP_TO = date(2025, 2, 8), date(2025, 2, 16)

SEED_COUNTS = {
    "stale_rate": 4,
    "wrong_rate": 5,
    "hours_cap_tail": 4,
    "amount_cap_tail": 3,
    "duplicate_entry": 8,
    "non_billable_billed": 6,
    "discount_missing": 7,
}
CSV_COLUMNS = [
    "entry_id",
    "consultant_id",
    "client_id",
    "project_id",
    "work_date",
    "hours",
    "billable",
    "description",
    "billed_rate",
    "billed_amount",
]


def money(hours: Decimal, rate: Decimal, discount_pct: Decimal = Decimal(0)) -> Decimal:
    """Hours × rate less the discount, rounded once to the cent (half-even)."""
    raw = hours * rate * (Decimal(100) - discount_pct) / Decimal(100)
    return raw.quantize(CENT, rounding=ROUND_HALF_EVEN)


@dataclass
class Contract:
    contract_id: str
    client_id: str
    start: date
    end: date | None
    discount_pct: Decimal
    cap_hours: Decimal | None = None
    cap_amount: Decimal | None = None

    def covers(self, day: date) -> bool:
        return self.start <= day and (self.end is None or day <= self.end)


@dataclass
class RateCard:
    rate_code: str
    consultant_id: str
    client_id: str
    hourly_rate: Decimal
    effective_from: date
    effective_to: date | None

    def covers(self, day: date) -> bool:
        return self.effective_from <= day and (
            self.effective_to is None or day <= self.effective_to
        )


@dataclass
class Entry:
    consultant_id: str
    client_id: str
    project_id: str
    work_date: date
    hours: Decimal
    billable: bool
    description: str
    entry_id: str = ""
    rate: RateCard | None = None
    contract: Contract | None = None
    expected: Decimal = Decimal("0.00")
    billed_rate: Decimal = Decimal("0.00")
    billed_amount: Decimal = Decimal("0.00")
    kind: str | None = None  # the seeded discrepancy kind, if any
    duplicate_of: Entry | None = field(default=None, repr=False)

    @property
    def order(self) -> tuple[date, str, str]:
        return (self.work_date, self.consultant_id, self.client_id)


def _business_days() -> list[date]:
    days, day = [], QUARTER_START
    while day <= QUARTER_END:
        if day.weekday() < 5 and day != date(2025, 1, 1):  # New Year's Day is a holiday
            days.append(day)
        day += _DAY
    return days


def _rate_cards() -> list[RateCard]:
    cards = []
    for consultant, clients in sorted(ASSIGNMENTS.items()):
        for client in clients:
            rate = CONSULTANTS[consultant] + CLIENT_PREMIUM[client]
            tag = f"RC-{consultant[-2:]}-{client[3:]}"
            if (consultant, client) in RATE_CHANGE_PAIRS:
                before = RATE_CHANGE - _DAY
                cards.append(RateCard(f"{tag}-1", consultant, client, rate, QUARTER_START, before))
                cards.append(RateCard(f"{tag}-2", consultant, client, rate + 20, RATE_CHANGE, None))
            elif (consultant, client) == GAP_PAIR:
                cards.append(
                    RateCard(f"{tag}-1", consultant, client, rate, QUARTER_START, GAP_FROM - _DAY)
                )
                cards.append(
                    RateCard(f"{tag}-2", consultant, client, rate + 10, GAP_TO + _DAY, None)
                )
            else:
                cards.append(RateCard(f"{tag}-1", consultant, client, rate, QUARTER_START, None))
    return cards


def _contracts() -> list[Contract]:
    # Caps of ACME (hours) and BOREAL (amount) are set from the data so that exactly the seeded
    # tail of entries goes over; CIRRUS and EMBER get caps that the quarter never reaches.
    end = date(2025, 12, 31)
    return [
        Contract("K-ACME-2025", "CL-ACME", date(2025, 1, 1), end, Decimal("10")),
        Contract("K-BOREAL-2025", "CL-BOREAL", date(2025, 1, 1), end, Decimal("5")),
        Contract("K-CIRRUS-2025", "CL-CIRRUS", date(2025, 1, 1), end, Decimal("0")),
        Contract("K-DELTA-2024", "CL-DELTA", date(2024, 7, 1), RATE_CHANGE - _DAY, Decimal("10")),
        Contract("K-DELTA-2025", "CL-DELTA", RATE_CHANGE, None, Decimal("12.5")),
        Contract("K-EMBER-2025", "CL-EMBER", date(2025, 1, 1), end, Decimal("7.5")),
    ]


def _new_entry(rng: random.Random, consultant: str, client: str, day: date) -> Entry:
    billable = rng.random() < 0.9
    work = rng.choice(BILLABLE_WORK if billable else NON_BILLABLE_WORK)
    hours = Decimal(rng.randint(2, 32)) / 4  # 0.5 .. 8.0 in quarter hours
    return Entry(consultant, client, rng.choice(PROJECTS[client]), day, hours, billable, work)


def _base_entries(rng: random.Random, count: int) -> list[Entry]:
    days = _business_days()
    # One slot per (consultant, client, day): no two base entries can look like duplicates.
    slots = [
        (consultant, client, day)
        for consultant, clients in sorted(ASSIGNMENTS.items())
        for client in clients
        for day in days
        if not ((consultant, client) == GAP_PAIR and GAP_FROM <= day <= GAP_TO)
    ]
    special = [(*GAP_PAIR, day) for day in GAP_DAYS]
    special += [(*UNRATED_PAIR, day) for day in sorted(rng.sample(days, UNRATED_COUNT))]
    picked = rng.sample(slots, count - len(special))
    entries = [_new_entry(rng, *slot) for slot in picked]
    for slot in special:  # these must be billable to be missing_rate findings
        entry = _new_entry(rng, *slot)
        entry.billable, entry.description = True, rng.choice(BILLABLE_WORK)
        entries.append(entry)
    return sorted(entries, key=lambda e: e.order)


def _resolve(entries: list[Entry], cards: list[RateCard], contracts: list[Contract]) -> None:
    for entry in entries:
        rates = [
            c
            for c in cards
            if (c.consultant_id, c.client_id) == (entry.consultant_id, entry.client_id)
            and c.covers(entry.work_date)
        ]
        entry.rate = rates[0] if rates else None
        (entry.contract,) = [
            k for k in contracts if k.client_id == entry.client_id and k.covers(entry.work_date)
        ]


def _countable(entries: list[Entry], contract: Contract) -> list[Entry]:
    return [e for e in entries if e.contract is contract and e.billable and e.rate is not None]


def _apply_caps(entries: list[Entry], contracts: list[Contract]) -> None:
    """Expected amounts of countable entries in (work_date, entry order), per the definitions."""
    for contract in contracts:
        cum_hours, cum_amount = Decimal(0), Decimal(0)
        for entry in _countable(entries, contract):
            assert entry.rate is not None
            allowed = entry.hours
            if contract.cap_hours is not None:
                allowed = min(entry.hours, max(Decimal(0), contract.cap_hours - cum_hours))
            amount = money(allowed, entry.rate.hourly_rate, contract.discount_pct)
            if contract.cap_amount is not None:
                amount = min(amount, max(Decimal(0), contract.cap_amount - cum_amount))
            entry.expected = amount
            cum_hours += entry.hours
            cum_amount += amount


def _set_caps(entries: list[Entry], contracts: list[Contract]) -> list[Entry]:
    """Choose caps so that exactly the seeded tails go over; return the tail entries."""
    by_id = {k.contract_id: k for k in contracts}
    _apply_caps(entries, contracts)  # uncapped amounts first
    tails: list[Entry] = []
    acme = _countable(entries, by_id["K-ACME-2025"])
    cut = len(acme) - SEED_COUNTS["hours_cap_tail"]
    before = sum((e.hours for e in acme[:cut]), Decimal(0))
    # Half of the first tail entry (rounded down to a quarter hour) still fits under the cap.
    by_id["K-ACME-2025"].cap_hours = before + Decimal(int(acme[cut].hours * 2)) / 4
    tails += acme[cut:]
    boreal = _countable(entries, by_id["K-BOREAL-2025"])
    cut = len(boreal) - SEED_COUNTS["amount_cap_tail"]
    before = sum((e.expected for e in boreal[:cut]), Decimal(0))
    by_id["K-BOREAL-2025"].cap_amount = Decimal(int(before + boreal[cut].expected / 2))
    tails += boreal[cut:]
    for contract_id in ("K-CIRRUS-2025", "K-EMBER-2025"):  # generous caps, never reached
        rows = _countable(entries, by_id[contract_id])
        hours = sum((e.hours for e in rows), Decimal(0))
        amount = sum((e.expected for e in rows), Decimal(0))
        by_id[contract_id].cap_hours = Decimal(int(hours / 100) * 100 + 200)
        by_id[contract_id].cap_amount = Decimal(int(amount / 10000) * 10000 + 20000)
    _apply_caps(entries, contracts)
    return tails


def _bill_correctly(entries: list[Entry]) -> None:
    for entry in entries:
        if entry.billable and entry.rate is not None:
            entry.billed_rate, entry.billed_amount = entry.rate.hourly_rate, entry.expected


def _full_amount(entry: Entry, rate: Decimal) -> Decimal:
    assert entry.contract is not None
    return money(entry.hours, rate, entry.contract.discount_pct)


def _seed(rng: random.Random, entries: list[Entry], tails: list[Entry]) -> list[Entry]:
    """Introduce every seeded error; return the duplicate copies to add."""
    for entry in tails:  # billed in full although the cap cut (part of) the entry
        assert entry.rate is not None
        entry.kind = "over_cap"
        entry.billed_amount = _full_amount(entry, entry.rate.hourly_rate)
    for entry in entries:
        if entry.billable and entry.rate is None:  # billed at the consultant's base rate
            entry.kind = "missing_rate"
            entry.billed_rate = CONSULTANTS[entry.consultant_id]
            entry.billed_amount = _full_amount(entry, entry.billed_rate)
    # Seeds below only touch entries that are billed correctly so far (no kind yet).
    clean = [e for e in entries if e.kind is None and e.billable and e.rate is not None]
    stale = [
        e
        for e in clean
        if (e.consultant_id, e.client_id) in RATE_CHANGE_PAIRS
        and e.rate
        and e.rate.effective_from == RATE_CHANGE
    ]
    for entry in rng.sample(stale, SEED_COUNTS["stale_rate"]):  # the rate before the change
        entry.kind, entry.billed_rate = "rate_mismatch", entry.billed_rate - 20
        entry.billed_amount = _full_amount(entry, entry.billed_rate)
    clean = [e for e in clean if e.kind is None]
    for entry in rng.sample(clean, SEED_COUNTS["wrong_rate"]):
        entry.kind = "rate_mismatch"
        entry.billed_rate += rng.choice([Decimal(-25), Decimal(-10), Decimal(15), Decimal(30)])
        entry.billed_amount = _full_amount(entry, entry.billed_rate)
    discounted = [e for e in clean if e.kind is None and e.contract and e.contract.discount_pct]
    for entry in rng.sample(discounted, SEED_COUNTS["discount_missing"]):
        assert entry.rate is not None
        entry.kind = "discount_missing"
        entry.billed_amount = money(entry.hours, entry.rate.hourly_rate)
    non_billable = [e for e in entries if not e.billable]
    for entry in rng.sample(non_billable, SEED_COUNTS["non_billable_billed"]):
        entry.kind = "non_billable_billed"
        rate = entry.rate.hourly_rate if entry.rate else CONSULTANTS[entry.consultant_id]
        entry.billed_rate, entry.billed_amount = rate, _full_amount(entry, rate)
    copies = []
    for original in rng.sample(
        [e for e in clean if e.kind is None], SEED_COUNTS["duplicate_entry"]
    ):
        copy = Entry(
            **{**original.__dict__, "kind": "duplicate_entry", "expected": Decimal("0.00")}
        )
        copy.duplicate_of = original
        copies.append(copy)
    return copies


def _number(entries: list[Entry], copies: list[Entry]) -> list[Entry]:
    """Entry ids in date order; a duplicate copy comes right after its original."""
    after = {id(c.duplicate_of): c for c in copies}
    ordered = []
    for entry in entries:
        ordered.append(entry)
        if id(entry) in after:
            ordered.append(after[id(entry)])
    for number, entry in enumerate(ordered, start=1):
        entry.entry_id = f"TE-{number:05d}"
    return ordered


def _write(
    out_dir: Path, rows: list[Entry], cards: list[RateCard], contracts: list[Contract]
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "time_entries.csv").open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for e in rows:
            writer.writerow(
                [e.entry_id, e.consultant_id, e.client_id, e.project_id, e.work_date.isoformat()]
                + [f"{e.hours:.2f}", "true" if e.billable else "false", e.description]
                + [f"{e.billed_rate:.2f}", f"{e.billed_amount:.2f}"]
            )
    with (out_dir / "rate_cards.csv").open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(
            ["rate_code", "consultant_id", "client_id", "hourly_rate", "currency"]
            + ["effective_from", "effective_to"]
        )
        for c in cards:
            to = c.effective_to.isoformat() if c.effective_to else ""
            writer.writerow(
                [c.rate_code, c.consultant_id, c.client_id, f"{c.hourly_rate:.2f}", "USD"]
                + [c.effective_from.isoformat(), to]
            )
    docs = [
        {
            "contract_id": k.contract_id,
            "client_id": k.client_id,
            "start_date": k.start.isoformat(),
            "end_date": k.end.isoformat() if k.end else None,
            "cap_hours": float(k.cap_hours) if k.cap_hours is not None else None,
            "cap_amount": float(k.cap_amount) if k.cap_amount is not None else None,
            "discount_pct": float(k.discount_pct),
            "currency": "USD",
        }
        for k in contracts
    ]
    (out_dir / "contracts.json").write_text(json.dumps(docs, indent=2) + "\n")


def _answer_key(rows: list[Entry]) -> list[dict]:
    key = []
    for e in rows:
        if e.kind is None:
            continue
        delta = e.billed_amount - e.expected
        assert delta != 0, e.entry_id  # every seed must change the money
        key.append(
            {
                "entry_id": e.entry_id,
                "kind": e.kind,
                "expected_amount": float(e.expected),
                "billed_amount": float(e.billed_amount),
                "delta": float(delta),
            }
        )
    return key


def generate(out_dir: Path, seed: int = 2) -> dict:
    """Write the three inputs and answer_key.json to out_dir; return a summary."""
    rng = random.Random(seed)
    cards, contracts = _rate_cards(), _contracts()
    entries = _base_entries(rng, TOTAL_ENTRIES - SEED_COUNTS["duplicate_entry"])
    _resolve(entries, cards, contracts)
    tails = _set_caps(entries, contracts)
    _bill_correctly(entries)
    copies = _seed(rng, entries, tails)
    rows = _number(entries, copies)
    assert len(rows) == TOTAL_ENTRIES
    _write(out_dir, rows, cards, contracts)
    key = _answer_key(rows)
    (out_dir / "answer_key.json").write_text(json.dumps(key, indent=2) + "\n")
    counts: dict[str, int] = {}
    for item in key:
        counts[item["kind"]] = counts.get(item["kind"], 0) + 1
    return {"entries": len(rows), "rate_cards": len(cards), "contracts": len(contracts)} | {
        "discrepancies": len(key),
        "by_kind": dict(sorted(counts.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(generate(args.out_dir, args.seed), indent=2))


if __name__ == "__main__":
    main()
