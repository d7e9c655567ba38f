"""Checks of the fidelity matrix (tests 52-59): what wedjat recorded against what the programs
counted and timed themselves. Imported by the tests' pylogs snippets (after logs.py).

- exchanges(logs, role): the http records of a role and the http_summary counts.
- check_exchanges(what, logs, role, statuses): exact count and statuses.
- check_timers(what, pairs): wedjat's durations against the programs' own timers.
- explain(logs, role): prints what wedjat did record, for a failing test's output.
- client_lines(path): the JSON lines a fid_* client printed (one per request).
- load_dir_execs(d): load_dir for logs of images whose execs failed (a shell's PATH search).
"""
import collections
import json
import statistics

from logs import Log, LogError, expect, expect_eq, load_lines, records


def load_dir_execs(d):
    """Every log of d, each line checked as logs.load_lines does, the file starting with
    process_start; unlike load_dir, records may follow a process_end when an exec_failed says
    the image went on (docs/LOG_FORMAT.md: a shell's `exec prog` tries each PATH entry)."""
    import os
    out = []
    for path in sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".ndjson")) if os.path.isdir(d) else []:
        recs = load_lines(path)
        if not recs or recs[0]["type"] != "process_start":
            raise LogError(f"{path}:1: first record is not process_start")
        ends = [i for i, r in enumerate(recs) if r["type"] == "process_end"]
        for i in ends[:-1]:
            if recs[i + 1]["type"] != "exec_failed" if i + 1 < len(recs) else True:
                raise LogError(f"{path}:{i + 2}: a record after process_end that is not exec_failed")
        if ends and ends[-1] != len(recs) - 1:
            raise LogError(f"{path}:{ends[-1] + 2}: records after the last process_end")
        log = Log(path, recs)
        out.append(log)
    return out


def tol(us):
    """The matrix's tolerance: max(1 ms, 5%) of the program's own value."""
    return max(1000, 0.05 * abs(us))


def join_handed_off(logs, http):
    """docs/LOG_FORMAT.md: a connection a forked child went on with is one connection over two
    logs. The parent's exchange (`error: "handed_off"`, request side) and the child's (its
    connection's `inherited_from` names the parent's log and conn_id, same request_index,
    response side) are one exchange: joined here into the child's record, its request fields
    taken from the parent's."""
    by_log = {}
    for l in logs:
        by_log[l.start.get("log")] = l
    inherited = {}   # (child pid, conn_id) -> parent log path
    for l in logs:
        for c in l.records("connection"):
            f = c.get("inherited_from")
            if f:
                inherited[(c["pid"], c["conn_id"])] = f.get("log")
    parents = {}
    for h in http:
        if h.get("error") == "handed_off":
            parents[(h["pid"], h["conn_id"], h["request_index"])] = h
    pid_of = {l.start.get("log"): l.start.get("pid") for l in logs}
    out = []
    used = set()
    for h in http:
        if h.get("error") == "handed_off":
            continue
        parent_log = inherited.get((h["pid"], h["conn_id"]))
        if parent_log is not None and h.get("method") is None:
            key = (pid_of.get(parent_log), h["conn_id"], h["request_index"])
            p = parents.get(key)
            if p is not None:
                used.add(key)
                h = dict(h)
                for k in ("method", "path", "version", "request_start_ts", "request_end_ts", "request_header_bytes",
                          "request_body_bytes"):
                    h[k] = p.get(k)
        out.append(h)
    # A handed-off exchange no child answered stays, with its error.
    out += [p for k, p in parents.items() if k not in used]
    return out


def exchanges(logs, role, peer_port=None):
    """(http records, summed http_summary counts by status) of one role, handed-off exchanges
    joined with their forked child's part. Client records can be narrowed to a server port
    (their `peer`)."""
    http = [h for h in records(logs, "http") if h.get("role") == role
            and (peer_port is None or h.get("peer", "").endswith(f":{peer_port}"))]
    http = join_handed_off(logs, http)
    summed = collections.Counter()
    for s in records(logs, "http_summary"):
        if s.get("role") == role:
            summed[str(s.get("status"))] += s.get("count", 0)
    return http, summed


def status_counts(http, summed):
    c = collections.Counter(str(h.get("status")) for h in http)
    c.update(summed)
    return c


def check_exchanges(what, logs, role, statuses, peer_port=None):
    """Exactly sum(statuses) exchanges of `role`, with exactly these statuses (a Counter of
    status strings, as the program counted them); none cut short or unparsed. Returns the http
    records sorted by request start."""
    http, summed = exchanges(logs, role, peer_port)
    want = collections.Counter({str(k): v for k, v in statuses.items() if v})
    got = status_counts(http, summed)
    n = len(http) + sum(summed.values())
    ok = expect_eq(n, sum(want.values()), f"{what}: {role} exchanges (http records + http_summary counts)")
    ok = expect_eq(dict(sorted(got.items())), dict(sorted(want.items())), f"{what}: {role} statuses") and ok
    errors = collections.Counter(h.get("error") for h in http if h.get("error") is not None)
    ok = expect(not errors, f"{what}: {role} exchanges with an error: {dict(errors)}") and ok
    if not ok:
        explain(logs, role, what)
    return sorted(http, key=lambda h: h.get("request_start_ts") or 0)


def explain(logs, role, what=""):
    """Prints (as '# ' notes) the connections of `role` and why they hold no exchange, so a
    failure says which records are missing or wrong."""
    conns = [c for c in records(logs, "connection") if c.get("role") == role and c.get("transport") == "tcp"]
    none = collections.Counter(c.get("http_none") for c in conns if c.get("http_requests") == 0)
    http = [h for h in records(logs, "http") if h.get("role") == role]
    print(f"# {what}: {len(conns)} {role} tcp connections in {len(logs)} logs, "
          f"{sum(c.get('http_requests') or 0 for c in conns)} http_requests on them, {len(http)} http records; "
          f"connections without an exchange by http_none: {dict(none)}")
    shown = 0
    for c in conns:
        if c.get("http_requests") == 0 and shown < 5:
            shown += 1
            print(f"#   no exchange: pid {c['pid']} conn {c.get('conn_id')} {c.get('local')} -> {c.get('peer')} "
                  f"in {c.get('bytes_in')} out {c.get('bytes_out')} http_none={c.get('http_none')!r} "
                  f"duration_us={c.get('duration_us')} open_at_exit={c.get('open_at_exit')}")
    bad = [h for h in http if h.get("status") is None or h.get("error") is not None]
    for h in bad[:5]:
        print(f"#   exchange: pid {h['pid']} conn {h.get('conn_id')} {h.get('method')} {h.get('path')} "
              f"status={h.get('status')} error={h.get('error')} complete={h.get('complete')}")
    ends = [l.records("process_end")[-1] for l in logs if l.records("process_end")]
    for key in ("dropped_events", "capture_dropped", "untracked_connections"):
        total = sum(e.get(key) or 0 for e in ends)
        if total:
            print(f"#   process_end {key}: {total}")


def check_timers(what, pairs):
    """pairs: (label, wedjat_us, program_us) or (label, wedjat_us, program_us, program_upper_us).
    Judged as test 42 judges curl's timers: the median difference within max(1 ms, 5%) of the
    median program value, and at least 90% of the pairs within their own tolerance (a loaded
    2-vCPU machine sometimes deschedules a program between an I/O call and its reading of its
    clock). An upper value is the program's widest view of the same exchange, for a program
    whose clock starts at an event that can come late (node's 'finish'): wedjat's value anywhere
    from program_us to it differs by 0. Outliers are listed on failure. A pair without wedjat's
    value is a failure; one without the program's is left out."""
    pairs = [tuple(p) + (None,) * (4 - len(p)) for p in pairs]
    missing = [label for label, w, p, _ in pairs if w is None and p is not None]
    expect(not missing, f"{what}: {len(missing)} without a duration in wedjat's records: {missing[:5]}")
    pairs = [p for p in pairs if p[1] is not None and p[2] is not None]
    if not expect(pairs, f"{what}: no timings to compare"):
        return

    def diff(w, p, up):
        if up is None or w < p:
            return w - p
        return max(0, w - up)

    diffs = [diff(w, p, up) for _, w, p, up in pairs]
    med_prog = statistics.median(p for _, _, p, _ in pairs)
    med_diff = statistics.median(diffs)
    outside = [f"{label}: wedjat {w} us vs {p} us" + (f" (from the call {up} us)" if up is not None else "")
               for label, w, p, up in pairs if abs(diff(w, p, up)) > tol(p)]
    ok = expect(abs(med_diff) <= tol(med_prog),
                f"{what}: median difference {med_diff:.0f} us (wedjat - program) over tolerance {tol(med_prog):.0f} us "
                f"({len(pairs)} pairs; e.g. {outside[:3]})")
    expect(len(outside) <= len(pairs) // 10,
           f"{what}: {len(outside)} of {len(pairs)} outside max(1 ms, 5%): {outside[:5]}")
    return ok


def client_lines(path):
    """The JSON lines a fid_* client printed: one per request."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def server_counts(path):
    """The {"served": N, "statuses": {...}} line a fid_* server printed when stopped."""
    found = None
    with open(path) as f:
        for line in f:
            if line.startswith('{"served"'):
                found = json.loads(line)
    return found


# The fields fid_curl asks curl for (-w), one line per URL.
CURL_FIELDS = ("lport", "status", "connects", "connect", "pretransfer", "starttransfer", "total")


def curl_lines(path):
    """fid_curl's output as dicts: curl's timers in microseconds from the transfer's start;
    `us` (time_total - time_pretransfer: the exchange as wedjat's http record times it) and
    `conn_us` (time_total - time_connect: the connection once established, as a server's
    accept-to-close sees it)."""
    out = []
    with open(path) as f:
        for i, line in enumerate(f):
            fields = line.split()
            if len(fields) != len(CURL_FIELDS) + 1:
                continue
            d = dict(zip(CURL_FIELDS, fields[1:]))
            r = {"i": i, "path": fields[0], "lport": int(d["lport"]), "status": int(d["status"]),
                 "connects": int(d["connects"])}
            t = {k: round(float(d[k]) * 1e6) for k in ("connect", "pretransfer", "starttransfer", "total")}
            r.update(us=t["total"] - t["pretransfer"], conn_us=t["total"] - t["connect"],
                     ttfb_us=t["starttransfer"] - t["pretransfer"])
            out.append(r)
    return out


def _jfr_ns(iso):
    """'2026-11-24T10:24:07.082625780Z' -> nanoseconds since the epoch (exact: no float)."""
    import calendar
    date, _, clock = iso.rstrip("Z").partition("T")
    hms, _, frac = clock.partition(".")
    y, mo, d = map(int, date.split("-"))
    h, mi, s = map(int, hms.split(":"))
    return (calendar.timegm((y, mo, d, h, mi, s)) * 10**9) + int((frac + "000000000")[:9])


def _jfr_duration_ns(iso):
    """'PT0.001250475S' (also 'PT0S', 'PT1M2.5S') -> nanoseconds."""
    import re
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?", iso)
    if not m:
        raise ValueError(f"JFR duration {iso!r}")
    h, mi, s, frac = m.groups()
    return ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9 + int(((frac or "") + "000000000")[:9])


def jfr_exchanges(path, port, count):
    """The first `count` exchanges of a Java client, one after the other, to `port`, timed by the
    JVM itself: its jdk.SocketWrite and jdk.SocketRead events (JFR, threshold 0; `jfr print
    --json` output at `path`), on whichever thread made each call. An exchange starts with a
    write after a read that brought bytes (or the first write) and ends with the last read
    bringing bytes before the next exchange's write. Returns microseconds from the end of its
    first write to the end of its last read, in order."""
    with open(path) as f:
        events = json.load(f)["recording"]["events"]
    calls = []
    for e in events:
        v = e["values"]
        if v.get("port") != port:
            continue
        begin = _jfr_ns(v["startTime"])
        end = begin + _jfr_duration_ns(v["duration"])
        if e["type"] == "jdk.SocketWrite" and (v.get("bytesWritten") or 0) > 0:
            calls.append((begin, end, "w"))
        elif e["type"] == "jdk.SocketRead" and (v.get("bytesRead") or 0) > 0:
            calls.append((begin, end, "r"))
    # In the order the calls began: a JVM's first write can end (as JFR times it) after the
    # read of its response has (3 ms against 0.1 ms in a CI run), and ordered by their ends
    # every exchange after it was paired with the next one's calls.
    calls.sort()
    out = []
    start = last_read = None
    for _, end, kind in calls:
        if kind == "w":
            if start is not None and last_read is not None:
                out.append((last_read - start) // 1000)
                start = last_read = None
            if start is None:
                start = end
        elif start is not None:
            last_read = end
        if len(out) == count:
            break
    if len(out) < count and start is not None and last_read is not None:
        out.append((last_read - start) // 1000)
    return out[:count]
