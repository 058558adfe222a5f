"""`parse_pack`: one context pack document to a ContextPack, or every problem with file and field.

Beyond the schema, a pack must be coherent: unique intent, tool, bundle and rule ids; intents
of the pack's own consumer; policy rules that are well-formed JsonLogic and name only tools of
the registry; permissions for registry tools; budget splits for known intents that sum to 1;
redaction rules that are valid regexes; tool input schemas whose integers RFC 8785 can hash
(below 2**53 in magnitude: every compile hashes them, compiler/hashing.py).
"""

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from compiler.context.budget import split_problem
from compiler.context.errors import ContextError
from compiler.hashing import first_unsafe_int, unsafe_integer_message
from compiler.ladder.rules import rule_problem
from schemas.context import ContextPack
from schemas.error_codes import ErrorCode

MAX_RULE_DEPTH = 32


def _dupes(ids: Iterable[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def _policy_problems(pack: ContextPack, tools: set[str], intents: set[str]) -> list[str]:
    out = [
        f"policy_bundles: duplicate bundle_id {d!r}"
        for d in _dupes(b.bundle_id for b in pack.policy_bundles)
    ]
    for i, bundle in enumerate(pack.policy_bundles):
        where = f"policy_bundles[{i}] ({bundle.bundle_id})"
        out += [
            f"{where}.rules: duplicate rule_id {d!r}"
            for d in _dupes(r.rule_id for r in bundle.rules)
        ]
        for j, rule in enumerate(bundle.rules):
            at = f"{where}.rules[{j}] ({rule.rule_id})"
            problem = rule_problem(rule.if_, MAX_RULE_DEPTH)
            if problem is not None:
                out.append(f"{at}.if: {problem}; write a JsonLogic expression")
            named = [*rule.then.forbids, *rule.then.downgrade]
            out += [
                f"{at}.then: tool {t!r} is not in the pack's tools; use a registry tool id"
                for t in named
                if t not in tools
            ]
            if rule.applies_to_intent is not None and rule.applies_to_intent not in intents:
                out.append(
                    f"{at}.applies_to_intent: {rule.applies_to_intent!r} is not one of the "
                    f"pack's intents ({', '.join(sorted(intents))})"
                )
    return out


def _problems(pack: ContextPack) -> list[str]:
    intents = {r.intent_id for r in pack.intents}
    tools = {t.tool_id for t in pack.tools}
    out = [f"intents: duplicate intent_id {d!r}" for d in _dupes(r.intent_id for r in pack.intents)]
    out += [
        f"intents[{i}].consumer: {r.consumer!r} in a pack for {pack.consumer!r}; "
        "move the intent to that consumer's pack"
        for i, r in enumerate(pack.intents)
        if r.consumer != pack.consumer
    ]
    out += [f"tools: duplicate tool_id {d!r}" for d in _dupes(t.tool_id for t in pack.tools)]
    for i, tool in enumerate(pack.tools):
        big = first_unsafe_int(tool.input_schema)
        if big is not None:
            out.append(f"tools[{i}] ({tool.tool_id}).input_schema: {unsafe_integer_message(big)}")
    out += [
        f"permissions[{i}]: tool {p.tool_id!r} is not in the pack's tools"
        for i, p in enumerate(pack.permissions)
        if p.tool_id not in tools
    ]
    out += _policy_problems(pack, tools, intents)
    for intent_id, split in pack.budget.splits.items():
        if intent_id not in intents:
            out.append(f"budget.splits: {intent_id!r} is not one of the pack's intents")
        problem = split_problem(split)
        if problem is not None:
            out.append(f"budget.splits[{intent_id!r}]: {problem}; make them sum to 1")
    for i, rule in enumerate(pack.redaction_rules):
        try:
            re.compile(rule)
        except re.error as exc:
            out.append(f"redaction_rules[{i}]: {rule!r} is not a valid regex ({exc})")
    return out


def parse_pack(data: Any, source: str) -> ContextPack:
    """Validate one pack document; ContextError lists every problem as `source: field: what`."""
    if not isinstance(data, dict):
        raise ContextError(
            ErrorCode.CONTEXT_PACK_INVALID,
            f"{source}: (document): a context pack is a mapping, got {type(data).__name__}",
        )
    try:
        pack = ContextPack.model_validate(data)
    except ValidationError as exc:
        raise ContextError(
            ErrorCode.CONTEXT_PACK_INVALID,
            [
                f"{source}: {'.'.join(str(x) for x in e['loc']) or '(document)'}: {e['msg']}"
                for e in exc.errors()
            ],
        ) from None
    problems = _problems(pack)
    if problems:
        raise ContextError(ErrorCode.CONTEXT_PACK_INVALID, [f"{source}: {p}" for p in problems])
    return pack
