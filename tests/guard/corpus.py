"""The guard's corpus: credential and PII samples in the formats the anchors document, and
benign high-entropy strings of the kinds Forge and its users write.

Formats follow gitleaks' rules and detect-secrets' plugins (the issue's anchors) and the
issuers' own documentation; every sample is generated from a seeded RNG, so the corpus is the
same in every run and holds no real credential. `FORMATS` maps a format to a generator of one
sample *in context* (a line as it would appear in a config file, a log or a payload); its
`secret(sample)` is the part that must never be shown (a PEM key's body, a token itself).
`MULTILINE` samples span lines: PEM keys with a wrapped body, a JWT wrapped by a log.
"""

# ruff: noqa: E501  (a table of formats: one generator per line reads best)

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable

from compiler.ladder.secrets.checksums import github_token

Gen = Callable[[random.Random], str]
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def github(prefix: str) -> Gen:
    """GitHub's token format: prefix, 30 random base62 characters, CRC32 of them in base62."""
    return lambda rng: github_token(prefix, pick(rng, ALNUM, 30))


def luhn_complete(partial: str) -> str:
    for check in DIGITS:
        digits = partial + check
        total = 0
        for i, c in enumerate(reversed(digits)):
            n = int(c)
            if i % 2:
                n = n * 2 - 9 if n > 4 else n * 2
            total += n
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def iban(country: str, length: int) -> Gen:
    def gen(rng: random.Random) -> str:
        bban = pick(rng, DIGITS, length - 4)
        moved = bban + country + "00"
        check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
        return f"{country}{check:02d}{bban}"

    return gen


def part(obj: dict[str, object], separators: tuple[str, str] = (", ", ": ")) -> str:
    """A JWT's header or claims: JSON, base64url-encoded without padding."""
    text = json.dumps(obj, separators=separators)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def jwt(rng: random.Random) -> str:
    header = part({"alg": "HS256", "typ": "JWT"})
    claims = part({"sub": pick(rng, DIGITS, 10), "name": pick(rng, LOWER, 8), "iat": 1700000000})
    return f"{header}.{claims}.{pick(rng, URLSAFE, 43)}"


class InContext:
    """One sample in its context (`template` holds it at `{}`), and which part is the secret."""

    def __init__(self, template: str, gen: Gen) -> None:
        self.template, self.gen = template, gen

    def __call__(self, rng: random.Random) -> str:
        return self.template.format(self.gen(rng))

    def secret(self, sample: str) -> str:
        """What must never be shown: the value in the template; of a PEM key, its body."""
        head, _, tail = self.template.format("\0").partition("\0")
        value = sample[len(head) : len(sample) - len(tail)]
        if value.startswith("-----BEGIN"):
            return "\n".join(value.splitlines()[1:-1])
        return value


def ctx(template: str, gen: Gen) -> InContext:
    return InContext(template, gen)


def wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def pem(label: str, der: bytes) -> str:
    """A PEM block as OpenSSL writes one: the base64 body wrapped at 64 characters."""
    body = wrap(base64.b64encode(der).decode(), 64)
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def rsa_der(rng: random.Random) -> bytes:
    """The shape of a 2048-bit PKCS#1 RSA key (1,192 bytes: 25 lines), its numbers random."""
    return bytes.fromhex("308204a40201000282010100") + rng.randbytes(1180)


def ec_der(rng: random.Random) -> bytes:
    """A P-521 SEC 1 EC key (223 bytes: 5 lines): version, secret, curve, public point."""
    secret = bytes.fromhex("020101" + "0442") + rng.randbytes(66)
    curve = bytes.fromhex("a00706052b81040023")
    point = bytes.fromhex("a181890381860004") + rng.randbytes(132)
    return bytes.fromhex("3081dc") + secret + curve + point


def jwt_rs256(rng: random.Random) -> str:
    """An OpenID Connect ID token as a library writes one: compact JSON, a 2048-bit signature."""
    compact = (",", ":")
    header = part({"alg": "RS256", "typ": "JWT", "kid": pick(rng, HEX, 16)}, compact)
    user = {"sub": pick(rng, DIGITS, 12), "email": f"{pick(rng, LOWER, 7)}@acme.internal"}
    claims = part({"iss": "https://login.acme.internal/", **user, "iat": 1700000000}, compact)
    signature = base64.urlsafe_b64encode(rng.randbytes(256)).decode().rstrip("=")
    return f"{header}.{claims}.{signature}"


def tok(prefix: str, alphabet: str, n: int, suffix: str = "") -> Gen:
    return lambda rng: prefix + pick(rng, alphabet, n) + suffix


def password(rng: random.Random) -> str:
    return pick(rng, ALNUM, 6) + rng.choice("!#%*+?") + pick(rng, ALNUM, 7)


FORMATS: dict[str, Gen] = {
    # credentials, found by their shape
    "anthropic-key": ctx("ANTHROPIC_API_KEY={}", tok("sk-ant-api03-", URLSAFE, 93, "AA")),
    "openai-key": ctx(
        "OPENAI_API_KEY={}",
        lambda r: f"sk-proj-{pick(r, URLSAFE, 74)}T3BlbkFJ{pick(r, URLSAFE, 74)}",
    ),
    "github-pat": ctx("token {}", github("ghp")),
    "github-oauth": ctx("GITHUB_TOKEN={}", github("gho")),
    "github-app": ctx("installation token {}", github("ghs")),
    "github-user-to-server": ctx("{}", github("ghu")),
    "github-refresh": ctx("refresh_token: {}", github("ghr")),
    "github-fine-grained": ctx(
        "{}", lambda r: f"github_pat_{pick(r, ALNUM, 22)}_{pick(r, ALNUM, 59)}"
    ),
    "forge-api-key": ctx(
        "export FORGE_KEY={}", lambda r: f"fk_{pick(r, HEX, 12)}_{pick(r, URLSAFE, 43)}"
    ),
    "forge-webhook-secret": ctx("FORGE_WEBHOOK_SECRET={}", tok("whsec_", B64, 43, "=")),
    "gitlab-pat": ctx("private-token: {}", tok("glpat-", URLSAFE, 20)),
    "gitlab-runner": ctx('token = "{}"', tok("glrt-", URLSAFE, 20)),
    "gitlab-deploy": ctx("{}", tok("gldt-", URLSAFE, 20)),
    "slack-bot": ctx(
        "SLACK_BOT_TOKEN={}",
        lambda r: f"xoxb-{pick(r, DIGITS, 12)}-{pick(r, DIGITS, 13)}-{pick(r, ALNUM, 24)}",
    ),
    "slack-webhook": ctx(
        "{}",
        lambda r: (
            f"https://hooks.slack.com/services/T{pick(r, UPPER + DIGITS, 8)}/B{pick(r, UPPER + DIGITS, 8)}/{pick(r, ALNUM, 24)}"
        ),
    ),
    "aws-access-key-id": ctx("aws_access_key_id = {}", tok("AKIA", UPPER + "234567", 16)),
    "aws-secret-access-key": ctx("aws_secret_access_key = {}", tok("", B64, 40)),
    "stripe-secret": ctx("STRIPE_SECRET_KEY={}", tok("sk_live_", ALNUM, 24)),
    "stripe-restricted": ctx("{}", tok("rk_live_", ALNUM, 24)),
    "google-api-key": ctx("key={}", tok("AIza", URLSAFE, 35)),
    "jwt": ctx("Authorization: Bearer {}", jwt),
    "jwt-bare": ctx("session={}", jwt),
    "twilio-api-key": ctx("TWILIO_API_KEY={}", tok("SK", HEX, 32)),
    "sendgrid": ctx(
        "SENDGRID_API_KEY={}", lambda r: f"SG.{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 43)}"
    ),
    "npm": ctx("//registry.npmjs.org/:_authToken={}", tok("npm_", ALNUM, 36)),
    "huggingface": ctx("HF_TOKEN={}", tok("hf_", LOWER + UPPER, 34)),
    "shopify-access": ctx("{}", tok("shpat_", HEX, 32)),
    "shopify-shared-secret": ctx("{}", tok("shpss_", HEX, 32)),
    "shopify-custom-app": ctx("{}", tok("shpca_", HEX, 32)),
    "pypi": ctx("password = {}", tok("pypi-AgEIcHlwaS5vcmc", URLSAFE, 70)),
    "digitalocean-pat": ctx("{}", tok("dop_v1_", HEX, 64)),
    "digitalocean-oauth": ctx("{}", tok("doo_v1_", HEX, 64)),
    "digitalocean-refresh": ctx("{}", tok("dor_v1_", HEX, 64)),
    "vault-service": ctx("VAULT_TOKEN={}", tok("hvs.", URLSAFE, 95)),
    "doppler": ctx("DOPPLER_TOKEN={}", tok("dp.pt.", ALNUM, 43)),
    "linear": ctx("{}", tok("lin_api_", ALNUM, 40)),
    "postman": ctx("{}", lambda r: f"PMAK-{pick(r, HEX, 24)}-{pick(r, HEX, 34)}"),
    "pulumi": ctx("PULUMI_ACCESS_TOKEN={}", tok("pul-", HEX, 40)),
    "age-secret-key": ctx("{}", tok("AGE-SECRET-KEY-1", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    "databricks": ctx("DATABRICKS_TOKEN={}", tok("dapi", HEX, 32)),
    "grafana-cloud": ctx("{}", tok("glc_", ALNUM, 48)),
    "grafana-service-account": ctx("{}", lambda r: f"glsa_{pick(r, ALNUM, 32)}_{pick(r, HEX, 8)}"),
    "sentry-user": ctx("{}", tok("sntryu_", HEX, 64)),
    "square": ctx("{}", tok("sq0atp-", URLSAFE, 22)),
    "dynatrace": ctx(
        "{}", lambda r: f"dt0c01.{pick(r, UPPER + DIGITS, 24)}.{pick(r, UPPER + DIGITS, 64)}"
    ),
    "flyio": ctx("FLY_API_TOKEN={}", tok("fo1_", URLSAFE, 43)),
    "planetscale": ctx("{}", tok("pscale_tkn_", URLSAFE, 43)),
    "prefect": ctx("PREFECT_API_KEY={}", tok("pnu_", ALNUM, 36)),
    "readme": ctx("{}", tok("rdme_", LOWER + DIGITS, 70)),
    "rubygems": ctx("{}", tok("rubygems_", HEX, 48)),
    "shippo": ctx("{}", tok("shippo_live_", HEX, 40)),
    "alibaba": ctx("{}", tok("LTAI", ALNUM, 20)),
    "clojars": ctx("{}", tok("CLOJARS_", LOWER + DIGITS, 60)),
    "easypost": ctx("{}", tok("EZAK", ALNUM, 54)),
    "duffel": ctx("{}", tok("duffel_live_", ALNUM, 43)),
    "heroku-v2": ctx("HEROKU_API_KEY={}", tok("HRKU-AA", URLSAFE, 58)),
    "openshift": ctx("oc login --token={}", tok("sha256~", URLSAFE, 43)),
    "notion": ctx("{}", lambda r: f"ntn_{pick(r, DIGITS, 11)}{pick(r, ALNUM, 35)}"),
    "private-key-rsa": ctx(
        "{}",
        lambda r: (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + pick(r, B64, 64)
            + "\n-----END RSA PRIVATE KEY-----"
        ),
    ),
    "private-key-openssh": ctx(
        "{}",
        lambda r: (
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            + pick(r, B64, 70)
            + "\n-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    # credentials, found by their context
    "azure-storage-connection": ctx(
        "DefaultEndpointsProtocol=https;AccountName=acmedata;AccountKey={};EndpointSuffix=core.windows.net",
        tok("", B64, 86, "=="),
    ),
    "postgres-url": ctx("DATABASE_URL=postgres://app:{}@db.internal:5432/billing", password),
    "mysql-url": ctx("mysql://root:{}@127.0.0.1:3306/shop", password),
    "mongodb-url": ctx("mongodb+srv://svc:{}@cluster0.ab1cd.mongodb.net/prod", password),
    "redis-url": ctx("REDIS_URL=redis://default:{}@cache:6379/0", password),
    "amqp-url": ctx("amqp://worker:{}@rabbit:5672/", password),
    "http-basic": ctx(
        "Authorization: Basic {}",
        lambda r: base64.b64encode(f"svc-{pick(r, LOWER, 5)}:{password(r)}".encode()).decode(),
    ),
    "password-pair": ctx("password={}", password),
    "password-yaml": ctx("  db_password: {}", password),
    "password-json": ctx('{{"password": "{}"}}', password),
    "client-secret": ctx("client_secret = {}", lambda r: pick(r, URLSAFE, 32)),
    "bearer-token": ctx("Authorization: Bearer {}", lambda r: pick(r, URLSAFE, 40)),
    # personal data (checksums and issuing rules confirm them)
    "email": ctx(
        "contact: {}", lambda r: f"{pick(r, LOWER, 6)}.{pick(r, LOWER, 5)}@example-mail.com"
    ),
    "phone-us": ctx("call {}", lambda r: f"({rng_area(r)}) 555-{pick(r, DIGITS, 4)}"),
    "phone-intl": ctx("tel {}", lambda r: f"+44 20 7946 {pick(r, DIGITS, 4)}"),
    "card-visa": ctx("card {}", lambda r: luhn_complete("4" + pick(r, DIGITS, 14))),
    "card-mastercard": ctx(
        "card {}", lambda r: luhn_complete("5" + r.choice("12345") + pick(r, DIGITS, 13))
    ),
    "card-amex": ctx(
        "card {}", lambda r: luhn_complete(r.choice(["34", "37"]) + pick(r, DIGITS, 12))
    ),
    "iban-de": ctx("IBAN {}", iban("DE", 22)),
    "iban-gb-like": ctx("IBAN {}", iban("NL", 18)),
    "us-ssn": ctx(
        "SSN {}", lambda r: f"{r.randint(100, 665)}-{r.randint(10, 99)}-{r.randint(1000, 9999)}"
    ),
}


PERSONAL = frozenset(
    "email phone-us phone-intl card-visa card-mastercard card-amex iban-de iban-gb-like us-ssn".split()
)
# Credentials on several lines: found by a header, and by their body alone when text was cut
# before Forge saw it. Not in FORMATS, whose recall is measured through `forge guard scan`,
# which reads a text line by line.
MULTILINE: dict[str, InContext] = {
    "private-key-rsa-wrapped": ctx("{}", lambda r: pem("RSA PRIVATE KEY", rsa_der(r))),
    "private-key-ec-wrapped": ctx("{}", lambda r: pem("EC PRIVATE KEY", ec_der(r))),
    "jwt-wrapped": ctx("id_token:\n{}", lambda r: wrap(jwt_rs256(r), 76)),
}
CREDENTIALS = tuple(name for name in FORMATS if name not in PERSONAL) + tuple(MULTILINE)


def generator(name: str) -> InContext:
    """The generator of format `name`, one line (`FORMATS`) or several (`MULTILINE`)."""
    gen = MULTILINE.get(name) or FORMATS[name]
    assert isinstance(gen, InContext), name
    return gen


def secret(name: str, sample: str) -> str:
    """The part of a sample of format `name` that must never be shown."""
    return generator(name).secret(sample)


def rng_area(rng: random.Random) -> str:
    return f"{rng.randint(2, 9)}{rng.randint(0, 8)}{rng.randint(2, 9)}"


def samples(per_format: int = 4, seed: int = 18) -> list[tuple[str, str]]:
    """(format, sample) pairs, `per_format` of each."""
    rng = random.Random(seed)
    return [(name, gen(rng)) for name, gen in FORMATS.items() for _ in range(per_format)]


def forge_values(seed: int = 7) -> list[str]:
    """Values Forge itself writes: digests, hashes, UUIDs, run ids, keys, contract refs."""
    rng = random.Random(seed)
    found: list[str] = []
    for i in range(60):
        digest = hashlib.sha256(f"{seed}-{i}".encode()).hexdigest()
        run = f"run-2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}-{pick(rng, DIGITS, 6)}-{pick(rng, HEX, 6)}"
        found += [
            digest,
            f"sha256:{digest}",
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            run,
            json.dumps({"call_key": f"{run}:totals:attempt-{i % 3 + 1}:call-{i}"}),
            json.dumps(
                {"idempotency_key": f"{run}-step-{pick(rng, LOWER, 6)}-{pick(rng, HEX, 8)}"}
            ),
            json.dumps({"contract_hash": f"sha256:{digest}", "step_key": f"step_{i}"}),
            f"sched-billing-weekly-2026110{i % 9 + 1}-080000-{pick(rng, HEX, 8)}",
            json.dumps({"event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4))}),
        ]
    return found


def benign(n: int = 1200, seed: int = 11) -> list[str]:
    """High-entropy strings users and Forge write that are no secret."""
    rng = random.Random(seed)
    makers: list[Gen] = [
        lambda r: hashlib.sha1(pick(r, ALNUM, 12).encode()).hexdigest(),  # git commits
        lambda r: f"commit {hashlib.sha1(pick(r, ALNUM, 9).encode()).hexdigest()}",
        lambda r: (
            f"image: ghcr.io/acme/api@sha256:{hashlib.sha256(pick(r, ALNUM, 9).encode()).hexdigest()}"
        ),
        lambda r: f"integrity sha512-{base64.b64encode(r.randbytes(64)).decode()}",
        lambda r: (
            f"s3://acme-data/raw/{r.randint(2020, 2026)}/{pick(r, HEX, 8)}/part-{r.randint(0, 999):05d}.parquet"
        ),
        lambda r: f"https://cdn.example.com/assets/app.{pick(r, HEX, 20)}.js",
        lambda r: (
            f"order ord_{pick(r, ALNUM, 14)} shipped to warehouse WH-{pick(r, UPPER + DIGITS, 5)}"
        ),
        lambda r: f"customer cus_{pick(r, ALNUM, 14)} upgraded plan",
        lambda r: (
            f"SKU-{pick(r, UPPER + DIGITS, 4)}-{pick(r, UPPER + DIGITS, 4)},{r.randint(1, 99)},{r.randint(100, 99999) / 100}"
        ),
        lambda r: (
            f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{pick(r, DIGITS, 6)}Z request_id={uuid.UUID(int=r.getrandbits(128))}"
        ),
        lambda r: f"trace_id={pick(r, HEX, 32)} span_id={pick(r, HEX, 16)}",
        lambda r: base64.b64encode(r.randbytes(48)).decode(),  # a blob, no context
        lambda r: f"data:image/png;base64,{base64.b64encode(r.randbytes(60)).decode()}",
        lambda r: (
            f"/home/runner/work/acme/{pick(r, LOWER, 8)}/src/{pick(r, LOWER, 6)}_{pick(r, HEX, 6)}.py"
        ),
        lambda r: (
            f"version {r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 99)}+build.{pick(r, HEX, 7)}"
        ),
        lambda r: json.dumps(
            {"token_count": r.randint(10, 90000), "max_tokens": 4096, "model": "claude-sonnet"}
        ),
        lambda r: json.dumps(
            {
                "step_key": f"render_{pick(r, LOWER, 6)}",
                "status": "done",
                "sha256": pick(r, HEX, 64),
            }
        ),
        lambda r: (
            f"invoice INV-{r.randint(2024, 2026)}-{pick(r, DIGITS, 6)} total {r.randint(10, 9999)}.{r.randint(0, 99):02d} EUR"
        ),
        lambda r: (
            f"{pick(r, LOWER, 7)} {pick(r, LOWER, 5)} {pick(r, LOWER, 9)} {pick(r, LOWER, 4)} {pick(r, LOWER, 8)}"
        ),
        lambda r: f'etag "{pick(r, HEX, 32)}"',
        lambda r: (
            f"session started for user_{pick(r, DIGITS, 6)} from 10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(0, 255)}"
        ),
        lambda r: (
            f"api_version=2023-06-01 region=eu-west-{r.randint(1, 3)} retries={r.randint(0, 5)}"
        ),
        lambda r: f"key_id {pick(r, DIGITS, 4)} rotated",
        lambda r: f"uuid {uuid.UUID(int=r.getrandbits(128), version=4)}",
    ]
    return [makers[i % len(makers)](rng) for i in range(n)]
