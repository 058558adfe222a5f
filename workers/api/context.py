"""What the API's handlers hold: settings, the Temporal client, the stores, the compile context."""

from dataclasses import dataclass

from temporalio.client import Client

from activities.compile.typelib import cached_library, load_profiles
from activities.store.access import AccessStore, open_access_store
from activities.store.idempotency import IdempotencyStore, open_idempotency_store
from compiler.plan.context import CompileContext
from workers.process.worker import Services
from workers.services.webhook_keys import server_signing_key
from workers.settings import Settings

__all__ = ["ApiContext"]


@dataclass
class ApiContext:
    """One per API process, built at start-up and closed at shutdown."""

    settings: Settings
    client: Client
    services: Services
    access: AccessStore
    idempotency: IdempotencyStore
    signing_key: bytes  # every webhook's secret derives from it (shown once, at registration)

    @classmethod
    def build(cls, settings: Settings, client: Client) -> "ApiContext":
        return cls(
            settings=settings,
            client=client,
            services=Services.from_settings(settings),
            access=open_access_store(settings.database_url),
            idempotency=open_idempotency_store(settings.database_url),
            signing_key=server_signing_key(settings),
        )

    def compile_context(self, profile: str | None = None) -> CompileContext:
        """The type library and profiles a submitted plan compiles against (as the CLI's).

        The library is loaded again only when a pack file changed (cached_library): loading
        it on every POST cost about a second of CPU each, shared by every tenant's requests.
        """
        s = self.settings
        layers, ref = load_profiles(s.packs_path, home=s.home, run_profile=profile)
        return CompileContext(
            library=cached_library(s.packs_path), profiles=layers, profile_ref=ref
        )

    def close(self) -> None:
        self.access.close()
        self.idempotency.close()
        self.services.close()
