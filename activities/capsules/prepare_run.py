"""Preparing a capsule run: `prepare_capsule_run`, the one the CLI, the API and scheduled runs call.

Every parameter is checked before anything is uploaded or started: each input is present, in a
location the run's tenant may read (its input roots and S3 buckets or prefixes, set with `forge
tenants update`; the default tenant also reads FORGE_INPUT_ROOTS and FORGE_INPUT_BUCKETS;
`file://` elsewhere and other schemes are refused), parses as the capsule's
source run saw it and has the columns its code needs with compatible types; each scalar has its
declared type. A refusal is one ForgeError naming the parameter and what was expected.
"""

import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from activities.capsules.instantiate import sealed_nodes, sealed_plan
from activities.harness.receipts import schema_summary, validate_parse
from activities.harness.receipts_masking import masked_summary
from activities.store.artifacts import ArtifactStore
from activities.store.capsules import CapsuleStore
from compiler.plan.params import ParameterInvalid, bind_params
from schemas.capsule import CapsuleRunSpec, CapsuleVersion, InputParameter
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import ParameterDecl
from schemas.run import RunInput
from schemas.run_source import CapsuleSource
from schemas.scope import DEFAULT_TENANT, Scope
from schemas.tenant_settings import InputBucket

__all__ = [
    "CapsuleRun",
    "InputLocationRefused",
    "InputPolicy",
    "capsule_ref",
    "check_input",
    "local_copy",
    "prepare_capsule_run",
]

_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_.-]{0,63})(?:@(?P<version>[1-9][0-9]{0,8}))?$")
_TEXT_TYPES = frozenset({"string", "mixed"})
MAX_INPUT_BYTES = 1 << 30


class InputLocationRefused(ForgeError, ValueError):
    """An input location Forge is not configured to read."""

    code = ErrorCode.INPUT_LOCATION_REFUSED
    message_is_complete = True  # each message says where Forge reads and what to set


def _bad_input(message: str) -> ParameterInvalid:
    return ParameterInvalid(message, hint="`forge capsule show NAME` lists what each input holds")


def capsule_ref(text: str) -> tuple[str, int | None]:
    """NAME or NAME@V as (name, version or None for the newest)."""
    match = _REF.fullmatch(text)
    if match is None:
        raise ForgeError(
            f"{text!r} is not a capsule: write NAME or NAME@VERSION (e.g. billing@2); "
            "see `forge capsule list`",
            code=ErrorCode.CAPSULE_REFUSED,
        )
    version = match["version"]
    return match["name"], int(version) if version else None


@dataclass(frozen=True)
class InputPolicy:
    """Where one tenant's runs may read inputs: local roots and S3 buckets or prefixes."""

    roots: tuple[Path, ...]
    buckets: tuple[InputBucket, ...] = ()
    s3_endpoint: str | None = None
    tenant: str = DEFAULT_TENANT

    def how_to_add(self, flag: str, example: str) -> str:
        """What an administrator runs to let the tenant read there."""
        also = ""
        if self.tenant == DEFAULT_TENANT:
            env = "FORGE_INPUT_ROOTS" if flag == "root" else "FORGE_INPUT_BUCKETS"
            also = f" (or add it to {env})"
        command = f"forge tenants update {self.tenant} --add-input-{flag} {example}"
        return f"an admin adds it with `{command}`{also}"


@dataclass(frozen=True)
class CapsuleRun:
    """A checked capsule run: what starts it, and what the person asked for."""

    run: RunInput
    version: CapsuleVersion
    fresh: list[str]
    needs: set[str]  # the model providers its fresh and evaluator steps need


def prepare_capsule_run(
    capsules: CapsuleStore,
    artifacts: ArtifactStore,
    policy: InputPolicy,
    scope: Scope,
    ref: str,
    *,
    run_id: str,
    inputs: Mapping[str, str],
    params: Mapping[str, str],
    fresh: Sequence[str] = (),
) -> CapsuleRun:
    """Check every parameter of a capsule run, upload its inputs, and build its RunInput.

    `ref` is NAME or NAME@VERSION; `policy` says where the run's tenant may read inputs
    (workers/services/capsule_runs.input_policy builds it from the tenant's settings); `run_id`
    is the caller's (a new one from the CLI and the API, the claimed one for a scheduled time).

    Raises:
        ValueError: `policy` is another tenant's than the run's (a caller's mistake).
        CapsuleNotFound: no such capsule (or version) for the scope's tenant.
        ForgeError: CAPSULE_REFUSED, a --fresh step that is not model-coded.
        ParameterInvalid: a missing, unknown, malformed or mistyped parameter or input.
        InputLocationRefused: an input in a place Forge may not read.
    """
    if policy.tenant != scope.tenant:
        raise ValueError(
            f"input policy of tenant {policy.tenant!r} for a run of tenant {scope.tenant!r}: "
            "build the policy from the run's tenant's settings"
        )
    name, number = capsule_ref(ref)
    version = capsules.get(scope, name, number)
    content = version.content
    # Checked here too, so a tampered capsule is refused before anything is uploaded.
    plan = sealed_plan(artifacts, scope, version)
    programs = {p.step_key: p for p in content.programs}
    for key in fresh:
        program = programs.get(key)
        if program is None or program.source != "session":
            coded = [k for k, p in programs.items() if p.source == "session"] or ["none"]
            raise ForgeError(
                f"--fresh {key}: not a model-coded step of {version.ref}; steps that can get "
                f"fresh code: {', '.join(coded)}",
                code=ErrorCode.CAPSULE_REFUSED,
            )
    decls = [ParameterDecl(name=s.name, type=s.type, default=s.default) for s in content.scalars]
    declared = {i.name: i for i in content.inputs}
    clash = sorted(set(params) & set(declared))
    if clash:
        raise _bad_input(f"--param {clash[0]}: {clash[0]} is an input; give it as --input")
    values = bind_params(decls, params)
    unknown = sorted(set(inputs) - set(declared))
    if unknown:
        raise _bad_input(
            f"--input {unknown[0]}: {version.ref} has no input {unknown[0]!r}; its inputs: "
            f"{', '.join(declared) or 'none'}"
        )
    missing = [i for i in content.inputs if i.required and i.name not in inputs]
    if missing:
        raise _bad_input(
            "missing input(s): "
            + ", ".join(f"--input {i.name}=PATH|s3://BUCKET/KEY ({i.path})" for i in missing)
        )
    with ExitStack() as stack:
        files = {n: stack.enter_context(local_copy(n, inputs[n], policy)) for n in sorted(inputs)}
        for n, path in files.items():
            check_input(declared[n], inputs[n], path)
        refs = {
            n: artifacts.put_file(scope, path, logical_path=declared[n].path)
            for n, path in files.items()
        }
    structural = {p.step_key for p in content.programs if p.structural}
    spec = CapsuleRunSpec(
        name=version.name,
        version=version.version,
        capsule_hash=version.capsule_hash,
        mode="structural" if structural or fresh else "sealed",
        fresh=sorted(set(fresh) | structural),
    )
    source = CapsuleSource(capsule=spec)
    run = RunInput(run_id=run_id, scope=scope, source=source, inputs=refs, params=values)
    nodes = sealed_nodes(version, plan, set(spec.fresh))
    needs = {n.model_provider for n in nodes if n.model_provider is not None}
    return CapsuleRun(run=run, version=version, fresh=spec.fresh, needs=needs)


@contextmanager
def local_copy(name: str, raw: str, policy: InputPolicy) -> Iterator[Path]:
    """The input as a local file: a path under an input root, or an S3 object fetched."""
    parts = urlsplit(raw)
    if parts.scheme == "s3":
        with tempfile.TemporaryDirectory(prefix="forge-input-") as tmp:
            yield _fetch_s3(name, raw, parts.netloc, parts.path.lstrip("/"), policy, Path(tmp))
        return
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise InputLocationRefused(f"--input {name}={raw}: file URLs must be local")
        path = Path(unquote(parts.path))
    elif parts.scheme == "" or (len(parts.scheme) == 1 and raw[1:3] in (":\\", ":/")):
        path = Path(raw).expanduser()
    else:
        raise InputLocationRefused(
            f"--input {name}={raw}: Forge does not read {parts.scheme}:// locations; give a "
            f"path under an input root of tenant {policy.tenant!r} or s3://BUCKET/KEY in one of "
            "its input buckets (`forge tenants show` lists them)"
        )
    yield _under_roots(name, raw, path, policy)


def _under_roots(name: str, raw: str, path: Path, policy: InputPolicy) -> Path:
    resolved = path.absolute().resolve()
    roots = policy.roots
    if not any(resolved.is_relative_to(root) for root in roots):
        shown = ", ".join(str(r) for r in roots) or "none"
        raise InputLocationRefused(
            f"--input {name}={raw}: {resolved} is outside the input roots of tenant "
            f"{policy.tenant!r} ({shown}); move the file under one, or "
            + policy.how_to_add("root", str(resolved.parent))
        )
    if not resolved.exists():
        raise _bad_input(f"--input {name}={raw}: no such file")
    if not resolved.is_file():
        raise _bad_input(f"--input {name}={raw}: not a file (a directory or a device)")
    return resolved


def _fetch_s3(name: str, raw: str, bucket: str, key: str, policy: InputPolicy, tmp: Path) -> Path:
    if any(part in (".", "..") for part in key.split("/")):
        raise InputLocationRefused(f"--input {name}={raw}: a key may not hold '.' or '..' parts")
    if not any(b.admits(bucket, key) for b in policy.buckets):
        shown = ", ".join(map(str, policy.buckets)) or "none"
        folder = key.rpartition("/")[0]
        raise InputLocationRefused(
            f"--input {name}={raw}: s3://{bucket}/{key} is outside the input buckets of tenant "
            f"{policy.tenant!r} ({shown}); "
            + policy.how_to_add("bucket", f"{bucket}/{folder}/" if folder else bucket)
        )
    if not key or key.endswith("/"):
        raise _bad_input(f"--input {name}={raw}: name an object, s3://{bucket}/KEY")
    # Imported here: boto3 loads only when an input is on S3.
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    from activities.store.artifacts_s3 import s3_client  # noqa: PLC0415

    dest = tmp / Path(key).name
    try:
        client = s3_client(policy.s3_endpoint)
        head = client.head_object(Bucket=bucket, Key=key)
        if int(head.get("ContentLength", 0)) > MAX_INPUT_BYTES:
            raise _bad_input(f"--input {name}={raw}: larger than {MAX_INPUT_BYTES:,} bytes")
        client.download_file(bucket, key, str(dest))
    except ClientError as exc:
        status = exc.response.get("Error", {}).get("Code", "error")
        what = "no such object" if status in ("404", "NoSuchKey", "NotFound") else status
        raise _bad_input(f"--input {name}={raw}: {what}") from None
    except BotoCoreError as exc:
        raise _bad_input(f"--input {name}={raw}: S3 could not be read: {exc}") from None
    return dest


def check_input(param: InputParameter, raw: str, path: Path) -> None:
    """The file parses as the source run's did and has the columns its code reads.

    Raises:
        ParameterInvalid: naming the input, what it expected and what the file holds.
    """
    where = f"--input {param.name}={raw}"
    if param.validator is None:
        return
    parsed = validate_parse(path, param.validator)
    if not parsed.ok:
        raise _bad_input(
            f"{where}: not a valid {param.validator} file ({parsed.error}); the capsule "
            f"reads {param.path} as {param.kind_key or param.validator}"
        )
    if not param.columns:
        return
    # Masked as the source run's receipt was: a column named like a credential matches its mask.
    summary = masked_summary(schema_summary(path, param.validator))
    found = {
        str(c.get("name")): str(c.get("type", "string"))
        for c in summary.get("columns") or []
        if isinstance(c, dict)
    }
    absent = [c.name for c in param.columns if c.name not in found]
    if absent:
        raise _bad_input(
            f"{where}: missing column(s) {', '.join(absent)}; the capsule needs "
            f"{', '.join(c.name for c in param.columns)}"
        )
    for column in param.columns:
        if not _compatible(column.type, found[column.name]):
            raise _bad_input(
                f"{where}: column {column.name} holds {found[column.name]} values, the "
                f"capsule's code read {column.type} values there"
            )


def _compatible(expected: str, found: str) -> bool:
    if expected == found or "null" in (expected, found) or expected in _TEXT_TYPES:
        return True
    pairs = ({"integer", "number"}, {"date", "datetime"})
    return any({expected, found} <= pair for pair in pairs)
