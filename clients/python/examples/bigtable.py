"""The BigTable refresh of docs/workers.md: download the customer's CSV and
import it; snooze while the export is not there, retry on a 5xx, report an
unchanged file, and tell the customer which row to fix.

    REDIS_URL=redis://localhost:6379/0 /usr/bin/python3 examples/bigtable.py
"""

import hashlib
import os
import urllib.error
import urllib.request

import freshen

last_import = {}  # model id -> digest of the file imported last (your database, in practice)


class RowError(Exception):
    """The row numbered row cannot be imported."""

    def __init__(self, row):
        super().__init__(f"row {row}: no date")
        self.row = row


def download(url):
    """The file at url and the HTTP status."""
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.read(), resp.status
    except urllib.error.HTTPError as e:
        return b"", e.code


def import_csv(data, job):
    """Stands for your import: raises RowError for a row without a date."""
    for n, line in enumerate(data.decode("utf-8").splitlines()[1:], start=1):
        if job.cancelled.is_set():  # superseded, cancelled or past its deadline
            raise freshen.Failure("stopped", f"stopped: {job.cancel_reason}")
        if not line.split(",")[0].strip():
            raise RowError(n)


def refresh_table(job: freshen.RunningJob):
    url = job.payload["input_url"]
    job.status("downloading")
    data, code = download(url)  # an exception: a retryable failure of its class name
    if code == 404:
        return freshen.Snooze(seconds=15 * 60)  # the export is not there yet
    if code >= 500:
        raise freshen.Failure(f"http_{code}", f"upstream answered {code}")
    digest = hashlib.sha256(data).hexdigest()
    if last_import.get(job.model_id) == digest:
        return freshen.Unchanged()
    job.status("importing")
    try:
        import_csv(data, job)
    except RowError as e:
        raise freshen.Failure(
            "validation", str(e), retryable=False,
            user_message=f"Row {e.row} of your file has no date. Please replace it and try again.",
        )
    last_import[job.model_id] = digest
    return None  # success


if __name__ == "__main__":
    worker = freshen.Worker(refresh_table, url=os.environ["REDIS_URL"], queue="tables", concurrency=8)
    worker.run(handle_signals=True)  # SIGTERM: finish the running jobs, post their outcomes, exit
