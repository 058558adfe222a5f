"""webhooks__send: one signed POST of a delivery through the outbound client, judged by status.

Every attempt is signed anew (the timestamp is the attempt's), under the same delivery id.
2xx is delivered. 408, 429 and 5xx, like a connection that failed or timed out, are retried
by Temporal (workflows/policies.webhook_retry); any other status, and a URL whose address is
not public and not allowed by the operator (FORGE_WEBHOOK_ALLOW_IPS), fail at once: a retry
would get the same answer. The webhook's secret never leaves this process.
"""

import time
from collections.abc import Collection

from temporalio import activity

from activities import telemetry_metrics
from activities.errors import to_application_error
from activities.masked_output import clipped
from activities.net.outbound import OutboundClient
from activities.webhooks.signing import signature_headers, webhook_secret_bytes
from compiler.addresses import IpAddress
from schemas import names
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.webhooks import WebhookSendInput, WebhookSendResult

__all__ = ["SEND_TIMEOUT_S", "WebhookActivities"]

SEND_TIMEOUT_S = 10.0  # one attempt: connect, send, and the receiver's answer
_MAX_ANSWER = 4096  # a receiver's body is read only to show its start in a failure
_RETRIED = frozenset({408, 429})


class WebhookActivities:
    """The outbound client, the IPs the operator allows, and the server's signing key."""

    def __init__(
        self, outbound: OutboundClient, allowed: Collection[IpAddress], server_key: bytes
    ) -> None:
        self._outbound = outbound
        self._allowed = tuple(allowed)
        self._key = server_key

    @activity.defn(name=names.WEBHOOK_SEND)
    def send(self, inp: WebhookSendInput) -> WebhookSendResult:
        """POST the delivery once; raise what Temporal should retry or give up on."""
        attempt = activity.info().attempt
        try:
            status = self._post(inp)
        except ForgeError as exc:
            telemetry_metrics.webhook_attempt(str(exc.code))
            exc.details = [{"attempt": attempt, **_status_of(exc)}]
            raise to_application_error(exc) from None
        telemetry_metrics.webhook_attempt("delivered")
        return WebhookSendResult(status=status, attempts=attempt)

    def _post(self, inp: WebhookSendInput) -> int:
        secret = webhook_secret_bytes(self._key, inp.webhook_id)
        headers = {
            **signature_headers(secret, inp.delivery_id, int(time.time()), inp.body),
            "Content-Type": "application/json",
        }
        answer = self._outbound.send(
            "POST",
            inp.url,
            headers=headers,
            body=inp.body.encode(),
            timeout_s=SEND_TIMEOUT_S,
            max_body=_MAX_ANSWER,
            named=self._allowed,
        )
        if 200 <= answer.status < 300:
            return answer.status
        said = clipped(answer.body.decode("utf-8", "replace").strip(), 200, "event")
        what = f"the receiver answered {answer.status} {answer.reason}" + (
            f": {said}" if said else ""
        )
        if answer.status >= 500 or answer.status in _RETRIED:
            raise _Answered(what, answer.status, code=ErrorCode.WEBHOOK_UNAVAILABLE)
        raise _Answered(what, answer.status, code=ErrorCode.WEBHOOK_REFUSED)


class _Answered(ForgeError):
    """The receiver answered, but not with 2xx."""

    def __init__(self, message: str, status: int, *, code: ErrorCode) -> None:
        super().__init__(message, code=code)
        self.status = status


def _status_of(exc: ForgeError) -> dict[str, int]:
    return {"status": exc.status} if isinstance(exc, _Answered) else {}
