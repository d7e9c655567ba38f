"""The query a data-minded user would write for what `wedjat report` answers first: per host and
role, the requests with a record and TTFB p50 and p99, with DuckDB's read_ndjson on 2 threads.
Prints `role host records` per group (report.sh and report_nginx.sh check the counts).
    python3 scripts/bench/duckdb_ttfb.py LOG_OR_GLOB"""
import sys

import duckdb

con = duckdb.connect()
con.execute("SET threads TO 2")
rows = con.execute("""
    SELECT role, coalesce(host, peer) AS host, count(*) AS records,
           quantile_disc(ttfb_us, 0.5) AS p50, quantile_disc(ttfb_us, 0.99) AS p99
    FROM read_ndjson(?, ignore_errors = true)
    WHERE type = 'http' GROUP BY ALL""", [sys.argv[1]]).fetchall()
for role, host, records, p50, p99 in rows:
    print(role, host, records)
