# Fork storm: 32 threads fork 1,000 children in all while 4 other threads keep connecting and
# 2 accept. Each child connects to the parent's listener, writes 16 bytes, closes and ends
# with exit or _exit (alternately). No hang; 1,001 logs, each whole and ending in
# process_end with the right reason; every connection recorded exactly once: each child's
# client record matches exactly one server record of the parent (by port, in time order:
# loopback reuses ports), the parent's own connects likewise, no record of one port overlaps
# another in time, and nothing of the parent's appears in a child's file.
# About 2 to 10 s with wedjat (0.5 s without: forks wait for the agent's flush lock).
. "$WJ_LIB/common.sh"

WJ_TIMEOUT=90 wj logs "$FIXTURES/heavy_forkstorm" 32 1000 4 > out.txt 2> err.txt
rc=$?
[ $rc = 124 ] || [ $rc = 137 ] && fail "heavy_forkstorm did not finish within 90 s (deadlock?): $(tail -3 err.txt); $(ls logs | wc -l) logs"
[ $rc = 0 ] || fail "heavy_forkstorm exited $rc: $(head -5 err.txt)"
tail -n 3 out.txt | sed 's/^/# /'

pylogs logs out.txt <<'PY'
import collections
soft_mode()
d, outfile = sys.argv[1], sys.argv[2]
lines = open(outfile).read().splitlines()
port = int(lines[0].split()[1])
kids = {}
for l in lines:
    if l.startswith("child "):
        _, pid, idx, how = l.split()
        kids[int(pid)] = how
vals = dict(l.split() for l in lines if l.split()[0] in ("conns", "accepted", "bad"))
nconns, accepted = int(vals["conns"]), int(vals["accepted"])
expect_eq(len(kids), 1000, "children reported by the fixture")
expect_eq(accepted, 1000 + nconns, "connections accepted vs made (fixture's own count)")

logs = load_dir(d)   # strict: every line parses, no half line, process_start first, nothing after process_end
expect_eq(len(logs), 1001, "log files")
parent = one([l for l in logs if l.start["parent_log"] is None], "log without parent_log (the parent)")
children = [l for l in logs if l is not parent]
expect_eq(sorted(l.pid for l in children), sorted(kids), "child log pids vs the fixture's children")

pe = parent.end
if pe is None:
    fail("parent: no process_end")
expect_eq((pe["reason"], pe["exit_status"]), ("exit", 0), "parent reason, exit_status")
expect_eq((pe["dropped_events"], pe["dropped_records"], pe.get("untracked_connections", 0)), (0, 0, 0), "parent drops, untracked")
expect_eq(parent.records("drops"), [], "parent drops records")
forks = parent.records("fork")
expect_eq(len(forks), 1000, "fork records in the parent")
expect_eq(sorted(f["child_pid"] for f in forks), sorted(kids), "fork.child_pid values")
expect_eq(pe["records"].get("fork"), 1000, "parent process_end.records.fork")
expect_eq(len({f["tid"] for f in forks}), 32, "distinct thread ids of the fork records (32 forking threads)")

child_recs = []
for c in children:
    name = os.path.basename(c.path)
    if not expect(c.end is not None, f"{name}: no process_end"):
        continue
    expect_eq((c.end["reason"], c.end["exit_status"]), (kids.get(c.pid), 0), f"{name}: reason, exit_status")
    expect_eq((c.end["dropped_events"], c.end["dropped_records"]), (0, 0), f"{name}: drops")
    expect_eq(c.start["parent_log"], parent.path, f"{name}: parent_log")
    expect_eq(c.start["ppid"], parent.pid, f"{name}: ppid")
    types = collections.Counter(r["type"] for r in c.records_all)
    expect(types.pop("sample", 0) <= 1, f"{name}: at most the child's own exit sample")
    expect_eq(dict(types), {"process_start": 1, "connection": 1, "process_end": 1}, f"{name}: record types (nothing inherited from the parent)")
    for r in c.records("connection"):
        expect_eq((r["role"], r["peer"], r["bytes_out"], r["bytes_in"], r["error"], r["open_at_exit"], r["pid"]),
                  ("client", f"127.0.0.1:{port}", 16, 0, None, False, c.pid), f"{name}: connection record")
        child_recs.append(r)

expect_eq(len(child_recs), 1000, "children's connection records")
pcl = parent.records("connection", role="client")
psv = parent.records("connection", role="server")
expect_eq(len(pcl), nconns, "client records in the parent vs connections its threads made")
expect_eq(len(psv), 1000 + nconns, "server records in the parent vs connections accepted")
expect(all(c["bytes_out"] == 16 and c["bytes_in"] == 0 and c["error"] is None for c in pcl), "parent client records: 16 bytes out, no error")
expect(all(s["bytes_in"] == 16 and s["bytes_out"] == 0 and s["local"] == f"127.0.0.1:{port}" for s in psv), "server records: 16 bytes in on the listener")
# Match both ends by the client's port. Loopback reuses a port in TIME_WAIT (tcp_tw_reuse=2)
# after a second or so, so one port can carry several connections one after the other: per
# port, the client records (children's and parent's) and the server records, each in time
# order, must pair up, and the records of one side must not overlap in time (a record
# written twice would overlap itself).
cl_by, sv_by = collections.defaultdict(list), collections.defaultdict(list)
for r in child_recs + pcl:
    cl_by[port_of(r["local"])].append(r)
for r in psv:
    sv_by[port_of(r["peer"])].append(r)
mism = sorted((p, len(cl_by.get(p, [])), len(sv_by.get(p, []))) for p in set(cl_by) | set(sv_by)
              if len(cl_by.get(p, [])) != len(sv_by.get(p, [])))
expect_eq(mism[:5], [], f"(port, client records, server records) that differ ({len(mism)} ports in all)")
overlap, order, reused = [], [], 0
for p, cs in cl_by.items():
    cs.sort(key=lambda r: r["open_ts"])
    ss = sorted(sv_by.get(p, []), key=lambda r: r["open_ts"])
    reused += len(cs) > 1
    for side in (cs, ss):
        for a, b in zip(side, side[1:]):
            if not a["close_ts"] < b["open_ts"]:
                overlap.append((p, a["pid"], a["conn_id"], b["pid"], b["conn_id"]))
    for i, (c, s) in enumerate(zip(cs, ss)):
        # accept returns after connect was called (50 ms slack for the per-process clock anchor)
        if not (s["open_ts"] >= c["open_ts"] - 50000 and (i + 1 == len(cs) or s["open_ts"] < cs[i + 1]["open_ts"])):
            order.append((p, c["open_ts"], s["open_ts"]))
expect_eq(overlap[:5], [], f"records of one port overlapping in time (a connection recorded twice; {len(overlap)} in all)")
expect_eq(order[:5], [], f"server record not between its client's connect and the port's next connect ({len(order)} in all)")
allconn = records(logs, "connection")
expect_eq(len(allconn), 2 * (1000 + nconns), "connection records in all files (each connection once per side)")
ids = [c["conn_id"] for c in parent.records("connection")]
expect_eq(len(ids), len(set(ids)), "distinct conn_ids in the parent")
print(f"# {reused} client ports carried more than one connection")
print(f"# 1000 children ({sum(1 for h in kids.values() if h == 'exit')} exit, {sum(1 for h in kids.values() if h == '_exit')} _exit), {nconns} parent connections, {len(allconn)} records")
PY
