"""The simulated cluster's kubeconfig is never seen half-written by whoever polls for it."""

from __future__ import annotations

import threading

import yaml

from simcluster.api import ApiServer, Cluster
from simcluster.store import Store


def test_a_reader_polling_the_kubeconfig_never_reads_it_half_written(tmp_path):
    store = Store(lambda: 0.0)
    server = ApiServer(Cluster(store, lambda: 0.0), port=0)
    path = tmp_path / "kubeconfig"
    seen: list[object] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                text = path.read_text()
            except FileNotFoundError:
                continue
            seen.append(yaml.safe_load(text))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(300):
            path.unlink(missing_ok=True)
            server.write_kubeconfig(path, clock={"speed": i})
    finally:
        done.set()
        reader.join()
    assert seen, "the reader never saw the file"
    assert all(isinstance(c, dict) and c["clusters"][0]["cluster"]["server"] for c in seen)
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_symlinked_kubeconfig_stays_a_link_to_the_file_written(tmp_path):
    server = ApiServer(Cluster(Store(lambda: 0.0), lambda: 0.0), port=0)
    real = tmp_path / "configs" / "sim.yaml"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "kubeconfig"
    link.symlink_to(real)
    server.write_kubeconfig(link)
    assert link.is_symlink() and link.resolve() == real
    assert yaml.safe_load(real.read_text())["clusters"][0]["cluster"]["server"] == server.url
