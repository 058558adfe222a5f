"""`forge api`: serve the HTTP API on this machine (FastAPI under uvicorn)."""

from typing import Annotated

import typer

from workers.cli.common import out, run_async, settings, temporal_client

__all__ = ["api_cmd"]


def api_cmd(
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8080,
) -> None:
    """Serve the HTTP API until interrupted: /v1, /openapi.json, docs at /docs."""
    import uvicorn  # noqa: PLC0415 - the server loads only for this verb

    from workers.api.app import create_app  # noqa: PLC0415 - FastAPI loads only for this verb
    from workers.telemetry import tracing  # noqa: PLC0415 - the SDK loads only when on

    s = settings()
    tracing.install(s, "api")  # FORGE_TELEMETRY off: nothing
    run_async(temporal_client(s))  # exits 2 with one line when Temporal cannot be reached
    out.print(
        f"Forge API on http://{host}:{port} · OpenAPI at /openapi.json · docs at /docs · "
        "Ctrl-C to stop"
    )
    uvicorn.run(create_app(s), host=host, port=port, log_level="warning", server_header=False)
