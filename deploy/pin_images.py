"""`make pin-images`: fill deploy/images.lock with the digest each image's tag resolves to.

Asks the registry (Docker Hub's by default) for each tag's manifest digest, the one
`docker pull IMAGE@DIGEST` fetches, and rewrites the DIGEST column. Nothing is written unless
every image resolved; an unreachable registry fails with one line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

LOCK = Path(__file__).with_name("images.lock")
REGISTRY = "https://registry-1.docker.io"
AUTH = "https://auth.docker.io/token?service=registry.docker.io&scope=repository:{repo}:pull"
# An index first: a multi-arch tag's digest is its index's, as `docker pull` records it.
ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
LOCAL = "local"  # built from deploy/Dockerfile, never pulled
TIMEOUT = 20.0


class PinError(Exception):
    """A digest could not be resolved; the message is the one line shown."""


def parse(text: str) -> list[tuple[str, str]]:
    """The (image, digest) rows of a lock file's text, comments skipped."""
    rows = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            image, digest = line.split()
            rows.append((image, digest))
    return rows


def render(text: str, digests: dict[str, str]) -> str:
    """The lock file's text with each image's DIGEST replaced; comments kept."""
    out = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            image = line.split()[0]
            line = f"{image:<55} {digests.get(image, line.split()[1])}"
        out.append(line)
    return "\n".join(out) + "\n"


def _get(url: str, headers: dict[str, str], method: str = "GET") -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers, method=method)  # noqa: S310 - https
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:  # noqa: S310 - https
        return answer.read(), dict(answer.headers)


def digest_of(image: str, registry: str, auth: str) -> str:
    """The manifest digest `image` (NAME:TAG on Docker Hub) resolves to.

    Raises:
        PinError: The registry could not be reached or did not know the tag.
    """
    name, tag = image.rsplit(":", 1)
    repo = name if "/" in name else f"library/{name}"
    try:
        body, _ = _get(auth.format(repo=repo), {})
        token = json.loads(body)["token"]
        _, headers = _get(
            f"{registry}/v2/{repo}/manifests/{tag}",
            {"Authorization": f"Bearer {token}", "Accept": ACCEPT},
            method="HEAD",
        )
    except urllib.error.HTTPError as err:
        raise PinError(
            f"pin-images: {registry} answered {err.code} for {image}; check the tag in "
            "docker-compose.yml and deploy/images.lock"
        ) from err
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise PinError(
            f"pin-images: cannot reach the registry for {image} ({reason}); run "
            "`make pin-images` where the registry is reachable; deploy/images.lock is unchanged"
        ) from err
    except (KeyError, ValueError) as err:
        raise PinError(f"pin-images: the token service gave no token for {image}") from err
    digest = {k.lower(): v for k, v in headers.items()}.get("docker-content-digest", "")
    if not digest.startswith("sha256:"):
        raise PinError(f"pin-images: {registry} gave no digest for {image}")
    return digest


def main(argv: list[str] | None = None) -> int:
    """Resolve every image of the lock file and rewrite it; 2 with one line on failure."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lock", type=Path, default=LOCK)
    parser.add_argument("--registry", default=REGISTRY)
    parser.add_argument("--auth", default=AUTH, help="token URL; {repo} is replaced")
    args = parser.parse_args(argv)
    text = args.lock.read_text()
    try:
        digests = {
            image: digest_of(image, args.registry, args.auth)
            for image, digest in parse(text)
            if digest != LOCAL
        }
    except PinError as err:
        print(err, file=sys.stderr)
        return 2
    args.lock.write_text(render(text, digests))
    print(f"pinned {len(digests)} images in {args.lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
