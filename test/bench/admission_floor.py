"""The admission floor: our HTTPS server answering every review "allowed" without judging anything.

Why: the admission benchmark's added latency includes what no rule can avoid - the API server calling
two webhooks (mutating and validating) over TLS, and a Python HTTP server decoding each review and
answering. Registered exactly as `sriovop webhook` is, this server measures that cost on the same
machine in the same run, so a missed target can be split into the floor and what judging adds.

With `--barrier` it also keeps the webhook's informer caches (KUBECONFIG, NAMESPACE) and waits for
their read-your-writes barrier before allowing a validating review, as `sriovop webhook` does before
it judges: the floor of any webhook that answers from caches and is still correct right after a write
(issue 15 requires it), i.e. everything but the rules themselves. Like `sriovop webhook`, it then
freezes the synced caches out of full garbage collections (sriovop.runtime.gcfreeze), so the floor
pays the same collector pauses as the webhook and no other.

    python test/bench/admission_floor.py --port 8443 --tls-cert-file C --tls-private-key-file K [--barrier]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from collections.abc import Callable
from typing import Any

from sriovop.webhook.server import WebhookServer, server_ssl_context

#: The benchmark's registration probe: denied, so the benchmark can tell when this server is called.
PROBE = "probe"


class AllowEverything:
    """The `AdmissionHandler` surface the server calls: decode the review, allow it (but the probe);
    with `fresh`, wait for it before answering a validating review."""

    def __init__(self, fresh: Callable[[], None] | None = None) -> None:
        self._fresh = fresh

    def handle(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        request = json.loads(body)["request"]
        if self._fresh is not None and path.startswith("/validating"):
            self._fresh()
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if (request.get("object") or {}).get("metadata", {}).get("name") == PROBE:
            response = {"uid": request["uid"], "allowed": False,
                        "status": {"code": 403, "message": "the benchmark's registration probe"}}
        return 200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--tls-cert-file", required=True)
    parser.add_argument("--tls-private-key-file", required=True)
    parser.add_argument("--barrier", action="store_true",
                        help="wait for the webhook caches' read-your-writes barrier before a validating answer")
    args = parser.parse_args()
    from sriovop.runtime import gcpause

    gcpause.install()  # as `sriovop webhook` does: its /metrics shows the collector's pauses
    fresh = None
    if args.barrier:
        from sriovop.runtime.client import Client
        from sriovop.runtime.config import load_config
        from sriovop.webhook.informer_view import InformerClusterView

        view = InformerClusterView(Client(load_config(os.environ["KUBECONFIG"])), os.environ["NAMESPACE"])
        view.start()
        fresh = view.fresh
        from sriovop.runtime.gcfreeze import freeze_now

        freeze_now()
    server = WebhookServer((args.bind_address, args.port), AllowEverything(fresh),  # type: ignore[arg-type]
                           server_ssl_context(args.tls_cert_file, args.tls_private_key_file))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
