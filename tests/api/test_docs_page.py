"""The interactive docs at /docs render in real headless Chromium from files the API serves
itself: no request leaves the machine (every other host is unresolvable for the browser)."""

import asyncio
import shutil
import subprocess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def render(url: str) -> str:
    """The page's DOM after its scripts ran, as headless Chromium (Debian's package) saw it."""
    assert CHROMIUM, "chromium is missing: `make test` installs it (apt package chromium)"
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--virtual-time-budget=15000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


async def test_the_docs_page_renders_every_operation_without_a_cdn(api):
    async with api.anonymous() as http:
        page = (await http.get("/docs")).text
        spec = (await http.get("/openapi.json")).json()
    assert "cdn." not in page and "https://" not in page  # its scripts are served from here
    dom = await asyncio.to_thread(render, f"{api.url}/docs")
    assert "swagger-ui" in dom
    summaries = [op["summary"] for path in spec["paths"].values() for op in path.values()]
    missing = [s for s in summaries if s not in dom]
    assert not missing, f"the rendered page lacks: {missing}"
    assert "/v1/gates/{gate}/decision" in dom
