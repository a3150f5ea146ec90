"""Listening sockets for the gateway and the gRPC services, and the one-line error when a port is taken."""

from __future__ import annotations

import errno
import socket

DEFAULT_BACKLOG = 2048  # uvicorn's default


class PortInUse(OSError):
    """Another process listens on the port; the message says which flag picks another one."""

    def __init__(self, port: int, *, flag: str, host: str = "") -> None:
        self.port = port
        suggestion = f"{flag} {host}:{port + 1}" if host else f"{flag} {port + 1}"
        super().__init__(f"port {port} is in use (another engram?); try {suggestion} or stop the other process")


def listen_socket(host: str, port: int, *, flag: str = "--port") -> socket.socket:
    """A TCP socket bound to host:port and listening (port 0 picks a free one); PortInUse if it is taken.

    Binding before the server starts turns a taken port into one clear line instead of a server traceback.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are TCP, and
    # with Nagle on every kept-alive HTTP answer waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may bind over TIME_WAIT
        sock.bind((host, port))
        sock.listen(DEFAULT_BACKLOG)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise PortInUse(port, flag=flag) from e
        raise
    sock.set_inheritable(True)
    return sock


def require_free(host: str, port: int, *, flag: str) -> None:
    """Raises PortInUse when host:port cannot be bound; port 0 is always free."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise PortInUse(port, flag=flag, host=host if flag == "--listen" else "") from e
            raise
