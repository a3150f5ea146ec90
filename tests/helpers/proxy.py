"""A TCP proxy between an edge node and its cluster: records every byte that passes, and cuts the link on demand.

The link is the device's view of the network: ``down()`` refuses new connections and drops open ones (a
partition), ``up()`` takes them again, ``retarget()`` points it at a cluster restarted on another port.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class LinkProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._up = True
        self._open: list[socket.socket] = []
        self.sent = bytearray()  # device -> cluster
        self.received = bytearray()  # cluster -> device
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def down(self) -> None:
        with self._lock:
            self._up = False
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
            self._open.clear()

    def up(self) -> None:
        with self._lock:
            self._up = True

    def retarget(self, port: int) -> None:
        self.target_port = port

    def close(self) -> None:
        self.down()
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if not self._up:
                    client.close()
                    continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, self.sent), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.received), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, record: bytearray) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    record.extend(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()  # both pipes of a connection close both: closing twice is harmless
