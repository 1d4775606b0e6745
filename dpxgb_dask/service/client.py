"""A thin Python client of the DP training service (``dpxgb serve``), for analysts and
the data owner: one method per endpoint, errors raised with the service's message.

Examples
--------
::

    from dpxgb_dask.service import Client

    service = Client("https://dpxgb.example.org", token="dpxgb_...")
    service.budgets()                        # {"adult": {"epsilon": 4.0, "spent": 0.0, ...}}
    job = service.submit("adult", epsilon=1.0, n_estimators=50)
    booster = service.wait(job["id"])        # the DP model, a dpxgb_dask Booster
"""
import functools
import time

import httpx

from ..model.booster import Booster


class ServiceError(RuntimeError):
    """The service refused a request; ``status`` is its HTTP status, ``detail`` its reason
    (for a bad field: a list of ``{"field", "error"}``)."""

    def __init__(self, status, detail):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


@functools.lru_cache(maxsize=1)
def _tls_settings():
    """httpx's default TLS verification (its CA bundle, or ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` as set when the first client is made), made once per process and
    shared by every :class:`Client`: making it takes about 20 ms, ten times a client's
    own setup."""
    return httpx.create_ssl_context()


class Client:
    """A connection to the service.

    Parameters
    ----------
    url : str
        The service's address, e.g. ``"http://127.0.0.1:8000"``.
    token : str
        Your bearer token (from the data owner).
    timeout : float
        Seconds per request.
    """

    def __init__(self, url, token, timeout=30.0):
        self._http = httpx.Client(base_url=url, timeout=timeout, verify=_tls_settings(),
                                  headers={"Authorization": f"Bearer {token}"})

    def close(self):
        self._http.close()

    def wait_for_service(self, timeout=60.0, poll=0.5):
        """Wait until the service answers (one just started), at most ``timeout`` seconds;
        raise ``TimeoutError`` past that."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._http.get("/openapi.json").raise_for_status()
                return
            except httpx.HTTPError as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the service did not answer within {timeout} s "
                                       f"({type(exc).__name__})") from None
            time.sleep(poll)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, path, json=None):
        response = self._http.request(method, path, json=json)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            raise ServiceError(response.status_code, detail)
        return response.json()

    # -- the owner ---------------------------------------------------------------------------

    def register_dataset(self, name, location, format, schema):
        """Register a dataset (owner): its ``location`` (Parquet or CSV, where the workers
        read it), ``format`` ("parquet" or "csv") and public ``schema``
        (:class:`~dpxgb_dask.service.schemas.DatasetSchema` as a dict)."""
        return self._call("POST", "/v1/datasets", {"name": name, "location": location,
                                                   "format": format, "schema": schema})

    def create_analyst(self, name):
        """Add an analyst (owner); returns ``{"name", "token"}``, the token shown once."""
        return self._call("POST", "/v1/analysts", {"name": name})

    def set_budget(self, analyst, dataset, epsilon, delta=1e-6, accountant="pld"):
        """Set an analyst's budget on a dataset (owner)."""
        return self._call("PUT", f"/v1/analysts/{analyst}/budgets/{dataset}",
                          {"epsilon": epsilon, "delta": delta, "accountant": accountant})

    def analysts(self):
        """Every analyst, whether its token works, and its budgets and spend (owner)."""
        return self._call("GET", "/v1/analysts")

    def revoke_token(self, analyst):
        """Revoke an analyst's token at once (owner)."""
        return self._call("DELETE", f"/v1/analysts/{analyst}/token")

    def renew_token(self, analyst):
        """A new token for an analyst, the old one revoked (owner); ``{"name", "token"}``."""
        return self._call("POST", f"/v1/analysts/{analyst}/token")

    def delete_dataset(self, name):
        """Delete a dataset (owner): no job runs on it any more; its jobs and the privacy
        they spent stay on record."""
        return self._call("DELETE", f"/v1/datasets/{name}")

    # -- analysts ----------------------------------------------------------------------------

    def datasets(self):
        """The public schemas of your datasets."""
        return self._call("GET", "/v1/datasets")

    def budgets(self):
        """Your budgets by dataset: ``epsilon``, ``spent``, ``remaining``, your jobs'."""
        return self._call("GET", "/v1/budgets")

    def submit(self, dataset, **params):
        """Submit a job on ``dataset`` with training ``params``
        (:class:`~dpxgb_dask.service.schemas.JobParams`); returns the job (its ``id``)."""
        return self._call("POST", "/v1/jobs", {"dataset": dataset, "params": params})

    def largest_job(self, dataset):
        """The largest ε of a job with the default parameters your budget on ``dataset``
        admits now (under PLD or RDP more than ``remaining``): ``{"epsilon", "params"}``."""
        return self._call("GET", f"/v1/budgets/{dataset}/largest-job")

    def jobs(self):
        """Your jobs (the owner: every analyst's)."""
        return self._call("GET", "/v1/jobs")

    def cancel(self, job_id):
        """Cancel a job: refunded if it had not started, else stopped with its plan
        charged."""
        return self._call("POST", f"/v1/jobs/{job_id}/cancel")

    def job(self, job_id):
        """A job's ``status`` and its ``planned_epsilon`` and ``spent_epsilon``."""
        return self._call("GET", f"/v1/jobs/{job_id}")

    def model(self, job_id):
        """The job's DP model, a :class:`~dpxgb_dask.model.booster.Booster`."""
        return Booster.from_dict(self._call("GET", f"/v1/jobs/{job_id}/model"))

    def xgboost_model(self, job_id):
        """The job's DP model in XGBoost's JSON (a dict)."""
        return self._call("GET", f"/v1/jobs/{job_id}/model/xgboost")

    def report(self, job_id):
        """The job's privacy report."""
        return self._call("GET", f"/v1/jobs/{job_id}/report")

    def wait(self, job_id, timeout=600.0, poll=0.5):
        """Wait for a job to end; return its model, or raise :class:`ServiceError` with
        its error."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["status"] == "finished":
                return self.model(job_id)
            if job["status"] in ("failed", "interrupted", "cancelled"):
                raise ServiceError(409, f"job {job_id} {job['status']}: {job['error']}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is still {job['status']} after {timeout} s")
            time.sleep(poll)
