"""A webhook receiver, as a service of yours would be: verify, record, answer 204.

    pip install standardwebhooks  # the signature check
    python examples/api/receiver.py --port 9000 --out deliveries.jsonl

It reads the webhook's secret (the `secret` of `POST /v1/webhooks`, shown once) from
FORGE_WEBHOOK_SECRET, verifies every delivery's Standard Webhooks signature before it trusts a
byte of it, and appends each verified message as one JSON line to --out. A delivery whose
signature or timestamp is off is answered 401 and not recorded. Deciding a gate is then one
call to the message's `data.decision_path` (docs/api.md shows it with curl).
"""

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from standardwebhooks import Webhook, WebhookVerificationError


def serve(port: int, out: Path, secret: str) -> None:
    verifier = Webhook(secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                message = verifier.verify(body, dict(self.headers))
            except WebhookVerificationError as exc:
                print(f"refused a delivery: {exc}", file=sys.stderr, flush=True)
                self.send_response(401)
                self.end_headers()
                return
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(message, separators=(",", ":")) + "\n")
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_: object) -> None:  # quiet: the file is the record
            return

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--out", type=Path, default=Path("deliveries.jsonl"))
    args = parser.parse_args()
    secret = os.environ.get("FORGE_WEBHOOK_SECRET", "")
    if not secret.startswith("whsec_"):
        sys.exit("error: set FORGE_WEBHOOK_SECRET to the webhook's secret (whsec_…)")
    serve(args.port, args.out, secret)


if __name__ == "__main__":
    main()
