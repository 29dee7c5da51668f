"""Running the service: uvicorn on the guarded app, with the service's own one-line request log."""

from __future__ import annotations

import logging
import sys

from planopt.service.settings import Settings


def configure_logging() -> None:
    """One line per request on stderr (``security.Guard`` writes it); uvicorn's access log is off, so there is one."""
    log = logging.getLogger("planopt.service")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def serve(settings: Settings, host: str, port: int) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM stop it cleanly: jobs cancelled, the cluster closed)."""
    import uvicorn
    from planopt.service.app import create_app
    configure_logging()
    # proxy_headers off: uvicorn would otherwise take the client's address from X-Forwarded-For when the
    # peer is loopback, and nothing a client sends may change who it is (caps and jobs follow the token)
    uvicorn.run(create_app(settings), host=host, port=port, access_log=False, log_level="warning",
                timeout_graceful_shutdown=5, proxy_headers=False)
