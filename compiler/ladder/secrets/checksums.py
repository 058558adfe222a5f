"""Credential formats that carry their own checksum: a value whose checksum fails is not one.

GitHub's tokens since 2021 (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 characters) end in
six base62 characters that are the CRC32 of the 30 before them: a string of that shape whose
checksum does not match was not issued by GitHub (a test fixture, a truncated or edited
token), as a card number whose Luhn check fails is no card. Longer tokens and fine-grained
`github_pat_` tokens carry no checksum and are left as their rules find them.
"""

import re
import string
import zlib
from collections.abc import Callable

__all__ = ["CHECKSUMS", "github_checksum_valid", "github_token"]

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
_GITHUB = re.compile(r"gh[pousr]_([A-Za-z0-9]{30})([A-Za-z0-9]{6})")


def _base62(n: int) -> str:
    digits = ""
    while n:
        n, r = divmod(n, 62)
        digits = BASE62[r] + digits
    return digits.rjust(6, "0")


def github_checksum_valid(token: str) -> bool:
    """False only for a 40-character GitHub token whose CRC32 checksum does not match."""
    m = _GITHUB.fullmatch(token)
    return m is None or _base62(zlib.crc32(m[1].encode())) == m[2]


def github_token(prefix: str, body: str) -> str:
    """The GitHub token with `prefix` (`ghp`, ...) and 30-character `body`, checksum appended."""
    return f"{prefix}_{body}{_base62(zlib.crc32(body.encode()))}"


# The gitleaks rules whose secrets carry a checksum, and the check.
CHECKSUMS: dict[str, Callable[[str], bool]] = {
    rule: github_checksum_valid
    for rule in ("github-pat", "github-oauth", "github-app-token", "github-refresh-token")
}
