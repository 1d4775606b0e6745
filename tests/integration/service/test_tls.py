"""A cluster that speaks TLS only (k8s/protected.yaml's setting, on a LocalCluster): fits
from NumPy and dask inputs and the service's jobs train over it, and a client without the
certificates cannot connect."""
import datetime
import ipaddress
import warnings

import numpy as np
import pytest


def _certificates(directory):
    """A CA and one certificate it signs for 127.0.0.1 (the cluster's, as k8s/ mounts one
    Secret): paths of ca.crt, tls.crt, tls.key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def certificate(subject, issuer, key, signer, extensions):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dpxgb test CA")])
    ca = certificate(ca_name, ca_name, ca_key, ca_key,
                     [(x509.BasicConstraints(ca=True, path_length=None), True)])
    leaf = certificate(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dpxgb")]), ca_name, key, ca_key,
        [(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                       x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
          False)])
    paths = {name: directory / name for name in ("ca.crt", "tls.crt", "tls.key")}
    paths["ca.crt"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["tls.crt"].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths["tls.key"].write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return [str(paths[n]) for n in ("ca.crt", "tls.crt", "tls.key")]


@pytest.mark.slow
def test_fits_and_the_service_over_a_tls_only_cluster(tmp_path, data_dir, service_schema):
    import dask.array as da
    from distributed import Client, LocalCluster
    from distributed.security import Security

    from dpxgb_dask import train
    from dpxgb_dask.service import Client as ServiceClient
    from dpxgb_dask.service.database import sqlite_url
    from dpxgb_dask.service.server import ServiceThread, init_owner

    ca, cert, key = _certificates(tmp_path)
    security = Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key,
                        tls_scheduler_cert=cert, tls_scheduler_key=key,
                        tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + rng.logistic(size=3000) > 0).astype(float)
    params = {"epsilon": 1.0, "n_estimators": 3, "max_depth": 3,
              "feature_bounds": np.tile([-5.0, 5.0], (4, 1)), "split_method": "noisy_histogram"}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tls://",
                      host="127.0.0.1", security=security, dashboard_address=":0") as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        with Client(cluster, security=security, set_as_default=False) as client:
            assert all(w.startswith("tls://") for w in client.scheduler_info()["workers"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                booster = train(params, X, y, client=client)
                dask_booster = train(params, da.from_array(X, chunks=1000),
                                     da.from_array(y, chunks=1000), client=client)
            assert booster.n_trees == dask_booster.n_trees == 3
            database = sqlite_url(tmp_path / "service.db")
            running = ServiceThread(database, client, status_quantum=0)
            try:
                with ServiceClient(running.url, init_owner(database)) as owner:
                    owner.register_dataset("adult", str(data_dir / "adult"), "parquet",
                                           service_schema)
                    token = owner.create_analyst("alice")["token"]
                    owner.set_budget("alice", "adult", 1.0)
                with ServiceClient(running.url, token) as alice:
                    job = alice.submit("adult", epsilon=0.5, n_estimators=2, max_depth=2)
                    assert alice.wait(job["id"], timeout=300).n_trees == 2
            finally:
                running.stop()
        with pytest.raises(Exception):  # no certificate: no connection
            Client(cluster.scheduler_address, security=Security(), timeout="5s",
                   set_as_default=False)
