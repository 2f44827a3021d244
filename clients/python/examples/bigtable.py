"""The BigTable refresh: download a customer's CSV and import it, telling the
customer what is wrong with their file when retrying cannot help.

    REDIS_URL=redis://localhost:6379/0 python3 examples/bigtable.py
"""

import csv
import io
import os
import urllib.error
import urllib.request

import freshen


def import_rows(rows):
    """Where the application stores the rows (a database, a warehouse...)."""


def refresh_bigtable(job: freshen.RunningJob):
    job.status("downloading")
    try:
        with urllib.request.urlopen(job.payload["input_url"], timeout=60) as resp:
            text = resp.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        raise freshen.Failure(f"http_{e.code}", str(e))  # retried by the model's policy
    rows = list(csv.DictReader(io.StringIO(text)))
    for n, row in enumerate(rows, start=1):
        if job.cancelled.is_set():  # superseded, cancelled, or past its deadline
            raise freshen.Failure("stopped", f"stopped: {job.cancel_reason}")
        if not row.get("date"):
            raise freshen.Failure(
                "validation", f"row {n}: no date", retryable=False,
                user_message=f"Row {n} of your file has no date.",
            )
    job.status(f"importing {len(rows)} rows")
    import_rows(rows)
    # returning None reports a success


if __name__ == "__main__":
    worker = freshen.Worker(refresh_bigtable, url=os.environ["REDIS_URL"], queue="tables", concurrency=8)
    worker.run(handle_signals=True)  # SIGTERM: finish the running jobs, post their outcomes, exit
