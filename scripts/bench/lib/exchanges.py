#!/usr/bin/env python3
"""The HTTP exchanges a benchmark's logs hold: http records and those counted in http_summary.

  exchanges.py LOGDIR PREFIX
Prints "PREFIX N http records + M in http_summary". When the directory holds the logs of two
runs of different sizes (http_instructions.sh: 3,000 and 13,000 requests), also the share of
records among the requests of their difference, which is what its per-request figures measure
(the record budget's first burst makes the small run mostly records).
"""
import json, os, sys

logdir, prefix = sys.argv[1], sys.argv[2]
runs = []   # per log (one per run): (exchanges, http records)
for name in os.listdir(logdir):
    http = summ = 0
    for line in open(os.path.join(logdir, name)):
        r = json.loads(line)
        if r["type"] == "http":
            http += 1
        elif r["type"] == "http_summary":
            summ += r["count"]
    if http + summ:
        runs.append((http + summ, http))
runs.sort()
http, total = sum(r[1] for r in runs), sum(r[0] for r in runs)
print(f"{prefix} {http} http records + {total - http} in http_summary")
if len(runs) == 2 and runs[1][0] > runs[0][0]:
    share = (runs[1][1] - runs[0][1]) / (runs[1][0] - runs[0][0])
    print(f"  records among the measured (difference) requests: {100 * share:.1f}%")
