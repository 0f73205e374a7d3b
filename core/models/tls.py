"""One TLS context per process for the httpx clients lab opens.

httpx builds a new `ssl.SSLContext` for each client and loads the whole CA bundle into
it: about 25 ms of CPU per client. lab opens clients often: each OpenAI-compatible
backend per event loop, each endpoint check of `lab models`, and each health probe of
an endpoint that is down (every few seconds while an outage lasts). A context can serve
any number of clients and connections at once, so they all share the one `tls_context`
returns. The Anthropic SDK's client is left as the SDK builds it: its own httpx fork
trusts the system's certificate store, not certifi's, and a lab behind a proxy with
its own CA relies on that.

It trusts what httpx would trust for ``verify=True``: the file named by SSL_CERT_FILE,
else the folder named by SSL_CERT_DIR, else certifi's bundle. Those variables are read
at each call, and a context is built once per distinct setting, so setting them later
in the process takes effect for the clients opened after; a CA file that changes on
disk under a running process is read again only when a new process starts.
"""

from __future__ import annotations

import functools
import os
import ssl


def tls_context() -> ssl.SSLContext:
    """The shared context for the CA settings in the environment now."""
    cert_file = os.environ.get("SSL_CERT_FILE") or None
    return _context(cert_file, None if cert_file else os.environ.get("SSL_CERT_DIR") or None)


@functools.lru_cache(maxsize=8)
def _context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """A context trusting `cert_file`, else `cert_dir`, else certifi's bundle (the
    order httpx follows)."""
    if cert_file:
        return ssl.create_default_context(cafile=cert_file)
    if cert_dir:
        return ssl.create_default_context(capath=cert_dir)
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
