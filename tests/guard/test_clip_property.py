"""Mask, then cut: no credential, nor any 16-character part of one, is ever written.

Every credential format of the corpus (tests/guard/corpus.py) is put at a random place in
random prose of random length. `clip` (mask first, cut after) must never return the secret
or any 16-character part of it, at the limits Forge cuts to and at any other. A PEM key or a
JWT on several lines may also reach Forge already cut, as a capture limit cuts (a sandbox's
stderr kept as its last bytes, a failure kept as its last lines): `mask_text` on such a text,
cut at any character with its head or its tail kept, must not show a 16-character part of
the key's body or of the token either.

One exception, by construction: a text that starts inside a JWT's signature holds a random
token and nothing else of the JWT, so nothing can tell it from any other; a tail kept from
the signature on is not required to be masked (see compiler/ladder/secrets/jwts.py).
"""

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.ladder.secrets.mask import clip, mask_text
from tests.guard.corpus import CREDENTIALS, MULTILINE, generator, secret

LIMITS = (120, 200, 300, 500, 2000, 4000, 8000)
FRAGMENT = 16
WORDS = (
    "the run failed at step render while the worker retried twice and then gave up "
    "see logs below for details order total shipped customer plan invoice queue "
    "timeout exceeded connecting to db host retry in 5 seconds ok done warning note"
).split()
SEPARATORS = (" ", "\n", ": ", "\n\n", ", ")
# After a sample: what ends a value in the formats' own contexts. A colon does not end HTTP
# Basic credentials (secrets/forge_rules.py): "Basic dXNlcjpwdw==: details" is missed.
ENDS = (" ", "\n", "\n\n", ", ")
_SPACE = re.compile(r"\s+")


def prose(rng: random.Random, words: int) -> str:
    parts: list[str] = []
    for _ in range(words):
        parts += [rng.choice(WORDS), rng.choice(SEPARATORS)]
    return "".join(parts)


def embed(name: str, seed: int, before: int, after: int) -> tuple[str, str, int]:
    """A sample of `name` in prose: the text, its secret, and where the sample starts."""
    rng = random.Random(seed)
    sample = generator(name)(rng)
    head = prose(rng, before) + rng.choice(SEPARATORS)
    text = head + sample + rng.choice(ENDS) + prose(rng, after)
    return text, secret(name, sample), len(head)


def shown(out: str, secret_part: str) -> list[str]:
    """The parts of `secret_part` that `out` shows: the whole, or any 16 characters of it.

    Line breaks are left out on both sides, so a part that a cut or a wrap split across lines
    is found too.
    """
    flat, key = _SPACE.sub("", out), _SPACE.sub("", secret_part)
    if len(key) < FRAGMENT:
        return [key] if key in flat else []
    return [
        key[i : i + FRAGMENT]
        for i in range(len(key) - FRAGMENT + 1)
        if key[i : i + FRAGMENT] in flat
    ]


def cuts(name: str, text: str, start: int) -> range:
    """The positions a tail may be kept from: anywhere, but from inside a JWT's signature."""
    if name != "jwt-wrapped":
        return range(len(text) + 1)
    token = text[start:]
    signature = start + token.index(".", token.index(".") + 1)
    return range(signature + 1)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(CREDENTIALS),
    seed=st.integers(0, 2**32 - 1),
    before=st.integers(0, 400),
    after=st.integers(0, 400),
    limit=st.integers(0, 10_000),
    keep=st.sampled_from(("head", "tail")),
)
def test_clip_never_shows_a_credential_or_any_16_characters_of_one(
    name: str, seed: int, before: int, after: int, limit: int, keep: str
) -> None:
    text, key, _ = embed(name, seed, before, after)
    for n in (*LIMITS, limit):
        out, _found = clip(text, n, keep="head" if keep == "head" else "tail")
        assert len(out) <= n
        assert shown(out, key) == [], (name, n, keep, out)


def test_no_credential_format_is_shown_by_clip_at_any_limit_forge_uses() -> None:
    for name in CREDENTIALS:
        text, key, _ = embed(name, 5, 30, 30)
        out, found = mask_text(text)
        assert found and shown(out, key) == [], (name, out)
        for limit in LIMITS:
            for keep in ("head", "tail"):
                out = clip(text, limit, keep="head" if keep == "head" else "tail")[0]
                assert shown(out, key) == [], (name, limit, keep, out)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(tuple(MULTILINE)),
    seed=st.integers(0, 7),  # a few keys, each cut in many places (fresh text is slow to scan)
    before=st.integers(0, 60),
    after=st.integers(0, 60),
    data=st.data(),
)
def test_a_key_or_token_cut_before_it_was_masked_is_still_masked(
    name: str, seed: int, before: int, after: int, data: st.DataObject
) -> None:
    text, key, start = embed(name, seed, before, after)
    at = data.draw(st.integers(0, len(text)), label="head cut")
    out = mask_text(text[:at])[0]
    assert shown(out, key) == [], ("head", at, out)
    at = data.draw(st.sampled_from(cuts(name, text, start)), label="tail cut")
    out = mask_text(text[at:])[0]
    assert shown(out, key) == [], ("tail", at, out)


def sweep(text: str, start: int, end: int) -> list[int]:
    """Cut positions through a sample: every 16th, and each one beside a line break, a dot or
    a dash (where the part of a line, a segment or an armour line that is left changes)."""
    marks = {i + d for i in range(start, end) if text[i] in "\n.-" for d in (-1, 0, 1, 2)}
    return sorted({*range(start, end + 1, 16), *marks, end})


def test_a_multiline_key_or_token_cut_where_its_lines_and_parts_meet_is_masked() -> None:
    for name in MULTILINE:
        text, key, start = embed(name, 11, 8, 8)
        end = start + len(generator(name)(random.Random(11)))
        for at in sweep(text, start, end):
            assert shown(mask_text(text[:at])[0], key) == [], (name, "head", at)
            if at in cuts(name, text, start):
                assert shown(mask_text(text[at:])[0], key) == [], (name, "tail", at)


def test_clip_scans_only_the_kept_end_and_its_margin_and_still_masks_it() -> None:
    """A megabytes-long stderr is not scanned whole; what is kept is masked all the same."""
    from compiler.ladder.secrets.mask import CLIP_MARGIN

    key_id = "AKIA" + "QX7ZK2M4PW9RT3VB"
    far = f"{key_id} " + "log line\n" * 300_000  # 2.7 MB: the secret is far from the tail
    text = far + f"the key was {key_id}\n" + "x" * 50
    out, found = clip(text, 200, keep="tail")
    assert key_id not in out and "[REDACTED:aws_key]" in out
    assert len(found) == 1, "only the kept end and the margin were scanned"
    # A secret straddling the margin's far edge cannot reach the kept end.
    pad = "y" * (CLIP_MARGIN - 10)
    edge = f"{key_id}{pad}" + "z" * 200
    out, _ = clip(edge, 200, keep="tail")
    assert out == "z" * 200
