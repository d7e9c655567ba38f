"""What fixtures/check_har.py, check_trace.py and check_otlp.py share: the checkers of
`wedjat export`'s output against the logs it was made from. They run as plain scripts
(`python3 fixtures/check_X.py ...`), so each puts this directory on sys.path itself.

Unlike logs.py, reading is lenient: a line that is not JSON is passed over, as the exporter
passes over it (with a warning); the export is compared with what can be read. And a failed
expect() does not stop the checker: every failure is listed at the end."""
import glob
import json
import os

failures = []


def expect(cond, msg):
    """Records msg as a failure when cond is false; returns cond."""
    if not cond:
        failures.append(msg)
    return cond


def read_logs(logdir):
    """[(path, records)] for every *.ndjson below logdir, sorted by path; lines that are not
    JSON are left out."""
    out = []
    for path in sorted(glob.glob(os.path.join(logdir, "**", "*.ndjson"), recursive=True)):
        records = []
        with open(path) as f:
            for line in f:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
        out.append((path, records))
    return out


def report_failures():
    """Prints a "FAIL: ..." line per failure expect() recorded; True when there was any."""
    for f in failures:
        print("FAIL: " + f)
    return bool(failures)
