"""HTTPS served by the console itself, from ``[console] certificate`` and ``key``."""

from __future__ import annotations

import ssl

from controller.console.config import ConsoleConfig
from controller.kernel.errors import ConfigurationError


def ssl_context(config: ConsoleConfig) -> ssl.SSLContext | None:
    """HTTPS with ``[console] certificate`` and ``key``; None without them."""
    if config.certificate is None or config.key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(config.certificate, config.key)
    except (OSError, ssl.SSLError) as failure:
        where = config.source or "console.toml"
        raise ConfigurationError(
            f"{where}: [console] certificate {config.certificate} and key {config.key} "
            f"cannot be used: {failure}"
        ) from failure
    return context
