"""The HTTP API (`forge api`): FastAPI under /v1, OpenAPI at /openapi.json, docs without a CDN.

Every route is authenticated by an API key and authorized by its role (workers/services/access.py),
answers errors as RFC 9457 problem+json (workers/api/problems.py), and acts through the same
code as the CLI.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from temporalio.client import Client

from compiler.ladder.secrets.mask import mask_text
from workers.api import (
    artifacts,
    capsules,
    gates,
    keys,
    openapi_doc,
    problems,
    quota,
    schedules,
    webhooks,
)
from workers.api import runs as run_routes
from workers.api.context import ApiContext
from workers.api.limits import BodyLimit
from workers.api.nul import RefuseNul
from workers.api.protocol import MediaTypes
from workers.process import logmask
from workers.process.guard_recorder import recording
from workers.services import runs
from workers.settings import Settings
from workers.telemetry.observe import observed

__all__ = ["ROUTERS", "create_app"]

_DOCS_STATIC = Path(fastapi_offline.__file__).parent / "static"
VERSION = "1"
ROUTERS = (
    run_routes.router,
    artifacts.router,
    capsules.router,
    schedules.router,
    gates.router,
    keys.router,
    webhooks.router,
    quota.router,
)


def _operation_id(route: APIRoute) -> str:
    """Operation ids are the handlers' names: generated clients read `start_run`, not a path."""
    return route.name


def create_app(settings: Settings, client: Client | None = None) -> FastAPI:
    """The API app; it connects to Temporal (or uses `client`) and opens the stores on start."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logmask.install()
        mask_text("warm up")  # compile the credential rules before the first request
        # /metrics on its own port (FORGE_METRICS_PORT), not this one: metrics span tenants,
        # this port serves each tenant its own (docs/observability.md).
        async with observed(settings, "api"):
            connected = client or await runs.connect(settings)
            ctx = ApiContext.build(settings, connected)
            app.state.forge = ctx
            try:
                async with recording(ctx.services.events):
                    yield
            finally:
                ctx.close()

    app = FastAPI(
        title="Forge",
        version=VERSION,
        summary="Runs, capsules, schedules and gates of a Forge installation, per tenant.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    problems.install(app)
    openapi_doc.install(app)
    app.add_middleware(MediaTypes, api=app)
    app.add_middleware(RefuseNul)
    # Added last, so outermost: a body is counted (and refused) before anything reads it.
    app.add_middleware(
        BodyLimit,
        limit=settings.api_max_body_bytes,
        uploads={"/v1/uploads": settings.api_max_upload_bytes},
    )
    for router in ROUTERS:
        app.include_router(router)
    app.mount("/static-docs", StaticFiles(directory=_DOCS_STATIC), name="static-docs")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="Forge API",
            swagger_js_url="/static-docs/swagger-ui-bundle.js",
            swagger_css_url="/static-docs/swagger-ui.css",
            swagger_favicon_url="/static-docs/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title="Forge API",
            redoc_js_url="/static-docs/redoc.standalone.js",
            redoc_favicon_url="/static-docs/favicon.png",
            with_google_fonts=False,
        )

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
