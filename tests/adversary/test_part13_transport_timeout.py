"""The binds' own connections (scheduler.kube.transport after d26f5f4): ``DEFAULT_TIMEOUT``
("kube-apiserver's default --request-timeout") bounds each socket read, not the request."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time

from kubernetes import client

from scheduler.kube.transport import DirectRest, direct_rest


def test_a_server_that_trickles_its_answer_is_given_up_within_the_timeout():
    """``DEFAULT_TIMEOUT`` is "kube-apiserver's default --request-timeout": a request's whole
    time. A server that sends its answer one byte at a time, each within the timeout, must
    not hold a bind (and the cycle awaiting it) much longer than the timeout."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            answer = (
                b"HTTP/1.1 201 Created\r\nX-Slow: " + b"s" * 40 + b"\r\nContent-Length: 0\r\n\r\n"
            )
            with contextlib.suppress(OSError):
                for byte in answer:
                    if stop.is_set():
                        return
                    connection.sendall(bytes([byte]))
                    time.sleep(0.1)

    threading.Thread(target=serve, daemon=True).start()
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    assert direct_rest(client.ApiClient(configuration)) is not None
    direct = DirectRest(configuration, timeout=0.5)
    started = time.monotonic()
    try:
        with contextlib.suppress(OSError, http.client.HTTPException):
            direct.request("POST", f"http://127.0.0.1:{port}/x", {}, b"{}")
        took = time.monotonic() - started
    finally:
        stop.set()
        listener.close()
        direct.close()
    assert took < 2.0, f"a 0.5 s timeout held the request {took:.1f} s"
