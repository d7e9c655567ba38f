# 100 forked children each make one connection: 101 logs, one client record per child,
# parent_log links, 100 fork records in the parent, nothing logged twice.
. "$WJ_LIB/common.sh"

wj logs "$FIXTURES/fork100" 100 > out.txt 2> err.txt
rc=$?
[ $rc = 0 ] || fail "fork100 exited $rc: $(cat err.txt)"
pylogs logs out.txt <<'PY'
d, outfile = sys.argv[1], sys.argv[2]
lines = open(outfile).read().split("\n")
port = int(lines[0].split()[1])
kids = [int(l.split()[1]) for l in lines if l.startswith("child ")]
expect_eq(len(kids), 100, "children reported by the fixture")
logs = load_dir(d)
expect_eq(len(logs), 101, "log files")
parents = [l for l in logs if l.start["parent_log"] is None]
parent = one(parents, "log without parent_log (the parent)")
children = [l for l in logs if l is not parent]
expect_eq(sorted(l.pid for l in children), sorted(kids), "child log pids")

expect_eq(parent.start["log"], parent.path, "parent process_start.log")
forks = parent.records("fork")
expect_eq(len(forks), 100, "fork records in the parent")
expect_eq(sorted(f["child_pid"] for f in forks), sorted(kids), "fork.child_pid values")
expect_eq([c for c in parent.records("connection") if c["role"] == "client"], [], "client records in the parent")
expect_eq(parent.end["reason"], "exit", "parent reason")
expect_eq(parent.end["exit_status"], 0, "parent exit_status")
expect_eq(parent.end["records"].get("fork"), 100, "parent process_end.records.fork")

ports = []
for c in children:
    expect_eq(c.start["parent_log"], parent.path, f"{c.path}: parent_log")
    expect_eq(c.start["ppid"], parent.pid, f"{c.path}: ppid")
    expect_eq(c.records("fork"), [], f"{c.path}: fork records inherited from the parent")
    conns = c.records("connection")
    r = one(conns, f"connection record in {c.path}")
    expect_eq(r["role"], "client", "child role")
    expect_eq(r["pid"], c.pid, "record pid")
    expect_eq(r["peer"], f"127.0.0.1:{port}", "child peer")
    expect_eq(r["bytes_out"], 5, "child bytes_out")
    expect_eq(r["bytes_in"], 0, "child bytes_in")
    expect_eq(r["open_at_exit"], False, "child open_at_exit")
    expect(c.end is not None, f"{c.path}: no process_end")
    expect_eq(c.end["exit_status"], 0, "child exit_status")
    ports.append(port_of(r["local"]))
expect_eq(len(set(ports)), 100, "distinct child local ports")

allclient = records(logs, "connection", role="client")
expect_eq(len(allclient), 100, "client connection records in all logs")
# The parent accepted every child's connection afterwards: 100 server records whose peers
# are exactly the children's local addresses, 5 bytes in each.
srv = parent.records("connection", role="server")
expect_eq(len(srv), 100, "server records in the parent")
expect_eq(sorted(port_of(s["peer"]) for s in srv), sorted(ports), "server peers vs child local ports")
expect(all(s["bytes_in"] == 5 and s["bytes_out"] == 0 for s in srv), "server byte counts")
expect(all(s["local"] == f"127.0.0.1:{port}" for s in srv), "server local address")
print("ok")
PY
