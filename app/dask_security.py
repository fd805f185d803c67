"""TLS for the Dask scheduler: ``tls://`` addresses and their certificates.

Anyone who can reach a Dask scheduler can run any code on its workers (and
read whatever they read). The dashboard's clients (the page's dataset jobs
and the command line's ``--scheduler``) connect over TLS when the address is
``tls://...``, with the certificates named by three settings:

``DASK_TLS_CA_FILE``  the CA that signed the scheduler's and workers' certificates
``DASK_TLS_CERT``     this client's certificate (PEM), signed by that CA
``DASK_TLS_KEY``      its private key (PEM)

A ``tls://`` address without them, or the certificates with a ``tcp://``
address, is refused with a message (docs/hosting.md, "Dask cluster").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from calibration_core import CalibrationInputError

#: The settings of the client's certificates, in the order of ``distributed.security.Security``.
TLS_SETTINGS = ("DASK_TLS_CA_FILE", "DASK_TLS_CERT", "DASK_TLS_KEY")


def dask_security(address: str, environ: Mapping[str, str] | None = None) -> Any:
    """The ``distributed.security.Security`` of a client of ``address`` (None for ``tcp://``).

    Parameters
    ----------
    address : str
        The scheduler's address (``tcp://host:8786`` or ``tls://host:8786``).
    environ : mapping, optional
        Where the ``DASK_TLS_*`` settings are read; default the process environment.

    Raises
    ------
    CalibrationInputError
        A ``tls://`` address without the three settings, a file they name that
        does not exist, or certificates given for a plain ``tcp://`` address.
    """
    env = os.environ if environ is None else environ
    files = {name: env.get(name, "").strip() for name in TLS_SETTINGS}
    given = [name for name, value in files.items() if value]
    if not address.startswith("tls://"):
        if given:
            raise CalibrationInputError(
                f"{', '.join(given)} set but the Dask scheduler address {address} is not "
                "tls://: use tls://host:8786 so that the certificates are used."
            )
        return None
    missing = [name for name in TLS_SETTINGS if name not in given]
    if missing:
        raise CalibrationInputError(
            f"the Dask scheduler address {address} is tls:// but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set: set DASK_TLS_CA_FILE, "
            "DASK_TLS_CERT and DASK_TLS_KEY to the CA and this client's certificate and key "
            "(PEM files)."
        )
    absent = [f"{name}={value}" for name, value in files.items() if not os.path.isfile(value)]
    if absent:
        raise CalibrationInputError(f"no such file: {', '.join(absent)}; check the path.")
    from distributed.security import Security

    return Security(
        tls_ca_file=files["DASK_TLS_CA_FILE"],
        tls_client_cert=files["DASK_TLS_CERT"],
        tls_client_key=files["DASK_TLS_KEY"],
        require_encryption=True,
    )
