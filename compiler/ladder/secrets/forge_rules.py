"""Forge's own credential rules, in gitleaks' rule format: what gitleaks' set leaves to context.

Gitleaks' rules find credentials by their shape; these find Forge's own API keys by theirs,
and the rest by what surrounds them: a
password in a `password=` pair or a connection URL, HTTP Basic credentials, an AWS secret
access key named as such or written next to its key id, or an Azure storage account key named
as such. Each value must look like a secret, not like a placeholder (`changeme`, `<password>`,
`${DB_PASSWORD}`, `****`): see `compiler/ladder/secrets/allow.py`; a connection URL's password
that is a format field (`{P}`, `%s`) is a program's template, not a password.
"""

from compiler.ladder.secrets.rule import Allow, Rule

__all__ = ["FORGE_RULES"]

_END = r"(?:[\x60'\"\s;,&)}\]\\]|$)"  # a quote, space, separator, an escape, or the end
# A password in a URL that is a format field, not a value: `{P}`, `{password}`, `%s`,
# `%(pw)s`, `${PASS}`, `$PASS`, `{{ password }}`, `<password>`, `$(cat pw)`, each possibly
# followed by the backslashes that escape the `@` in source code (`…:{P}\\@host`): a program
# that builds its connection URL from a secret it was given, not one holding a password.
_FORMAT_FIELD = Allow(
    regexes=(
        r"^(?:\{[^{}\s]{0,60}\}|\{\{[^{}]{0,80}\}\}|\$\{?[A-Za-z_][\w.:-]{0,80}\}?"
        r"|%(?:\([\w.-]{1,60}\))?[-+ #0]{0,4}\d{0,3}(?:\.\d{1,3})?[sdrifx]"
        r"|<[^<>\s]{1,60}>|\$\([^()]{1,80}\))\\*$",
    )
)

FORGE_RULES: tuple[Rule, ...] = (
    Rule(
        id="forge-api-key",
        description="A Forge API key (fk_<key id>_<secret>, `forge keys create`).",
        regex=r"\b(fk_[0-9a-f]{12}_[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
        keywords=("fk_",),
        entropy=3.0,
    ),
    Rule(
        id="forge-webhook-secret",
        description="A webhook signing secret (whsec_<base64>, `POST /v1/webhooks`).",
        regex=r"\b(whsec_[A-Za-z0-9+/]{32,88}={0,2})(?:[^A-Za-z0-9+/=]|$)",
        keywords=("whsec_",),
        entropy=3.0,
    ),
    Rule(
        id="password-assignment",
        description="A password, passphrase or client secret assigned in text (key=value, "
        'key: value, "key": "value").',
        regex=r"(?i)(?:^|[^\w])[\w.-]{0,30}(?:passw(?:or)?d|passphrase|pwd|client[_.-]?secret"
        r"|secret[_.-]?key|api[_.-]?secret)[\w.-]{0,10}\\{0,2}[\"']?[ \t]{0,3}(?:=|:|=>)"
        r"[ \t]{0,3}\\{0,2}[\"']?([^\s\"'`;,&\\]{6,200})" + _END,
        keywords=("pass", "pwd", "secret"),
        entropy=2.0,
    ),
    Rule(
        id="connection-string-password",
        description="A URL or connection string with a password in it "
        "(postgres://user:password@host, amqp://, redis://, mongodb+srv://, ...).",
        regex=r"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:/@\"'`]{1,128}:([^\s@/\"'`]{3,200})@"
        r"[a-z0-9.\[\]_-]{1,253}",
        keywords=("://",),
        entropy=1.5,
        allows=(_FORMAT_FIELD,),
    ),
    Rule(
        id="http-basic-credentials",
        description="HTTP Basic credentials (Authorization: Basic base64(user:password)).",
        regex=r"(?i)\bbasic[ \t]{1,5}([a-z0-9+/]{8,500}={0,2})" + _END,
        keywords=("basic",),
        entropy=2.5,
    ),
    Rule(
        id="aws-secret-access-key",
        description="An AWS secret access key, named as one (aws_secret_access_key = ...).",
        regex=r"(?i)aws.{0,20}?(?:secret|sk)[\w.-]{0,20}[\"']?[ \t]{0,3}(?:=|:|=>)[ \t]{0,3}"
        r"[\"']?([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)",
        keywords=("aws",),
        entropy=3.0,
    ),
    Rule(
        id="azure-storage-account-key",
        description="An Azure storage account key or SAS signature in a connection string.",
        regex=r"(?i)(?:AccountKey|SharedAccessKey)=([a-z0-9+/]{40,100}={0,2})" + _END,
        keywords=("accountkey", "sharedaccesskey"),
        entropy=3.0,
    ),
)
