"""TLS to the Dask scheduler (app.dask_security): a ``tls://`` address with the
client's certificates from ``DASK_TLS_*``, on a scheduler that refuses anyone else.

The certificates are made here with the ``openssl`` command (a CA, and one
certificate it signs for 127.0.0.1 used by the scheduler, the worker and the client).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess

import pytest

from app.dask_security import TLS_SETTINGS, dask_security
from calibration_core import CalibrationInputError

pytestmark = pytest.mark.usefixtures("dask_extra")


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> dict[str, str]:
    """``DASK_TLS_*`` settings of a CA and a certificate it signed for 127.0.0.1."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: it makes the test's certificates")
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.pem", cwd=d)  # fmt: skip
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "node.key", "-out", "node.csr", cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "node.pem",
             cwd=d)  # fmt: skip
    files = (d / "ca.pem", d / "node.pem", d / "node.key")
    return dict(zip(TLS_SETTINGS, map(str, files), strict=True))


def test_tls_address_without_certificates_is_refused_by_name():
    with pytest.raises(CalibrationInputError, match="DASK_TLS_CERT, DASK_TLS_KEY are not set"):
        dask_security("tls://10.0.0.5:8786", {"DASK_TLS_CA_FILE": "/ca.pem"})


def test_certificates_with_a_plain_address_are_refused(certificates):
    with pytest.raises(CalibrationInputError, match="is not tls://"):
        dask_security("tcp://10.0.0.5:8786", certificates)
    assert dask_security("tcp://10.0.0.5:8786", {}) is None


def test_missing_certificate_file_is_named(certificates):
    settings = {**certificates, "DASK_TLS_KEY": "/nowhere/node.key"}
    with pytest.raises(CalibrationInputError, match=re.escape("DASK_TLS_KEY=/nowhere/node.key")):
        dask_security("tls://10.0.0.5:8786", settings)


def test_client_computes_on_a_tls_scheduler_that_refuses_plain_clients(certificates):
    import distributed
    from distributed.security import Security

    server = Security(
        tls_ca_file=certificates["DASK_TLS_CA_FILE"],
        tls_scheduler_cert=certificates["DASK_TLS_CERT"],
        tls_scheduler_key=certificates["DASK_TLS_KEY"],
        tls_worker_cert=certificates["DASK_TLS_CERT"],
        tls_worker_key=certificates["DASK_TLS_KEY"],
        tls_client_cert=certificates["DASK_TLS_CERT"],
        tls_client_key=certificates["DASK_TLS_KEY"],
        require_encryption=True,
    )
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
        host="127.0.0.1", security=server, dashboard_address=None, silence_logs=logging.ERROR,
    )  # fmt: skip
    with cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        with distributed.Client(address, security=dask_security(address, certificates)) as c:
            assert c.submit(sum, [1, 2, 3]).result(timeout=30) == 6
        with pytest.raises((OSError, TypeError, ValueError)):
            distributed.Client(address.replace("tls://", "tcp://"), timeout="3s")


def test_cli_refuses_a_tls_scheduler_without_certificates(tmp_path, monkeypatch, capsys):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from app.cli import main

    for name in TLS_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "logs.parquet"
    p = np.full(10, 0.7)
    pq.write_table(pa.table({"p_a": p, "p_b": 1 - p, "label": np.arange(10) % 2}), path)
    args = ["evaluate", str(path), "--engine", "dask", "--scheduler", "tls://127.0.0.1:9"]
    assert main(args) == 1  # bad input, as an unreachable scheduler
    assert "DASK_TLS_CA_FILE, DASK_TLS_CERT, DASK_TLS_KEY are not set" in capsys.readouterr().err
