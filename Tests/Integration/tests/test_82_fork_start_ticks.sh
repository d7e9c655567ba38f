# A forked child's start ticks come from the boot clock read around the fork (no /proc read
# in the child): 300 children, half exec'ing /bin/true. Each child's log must carry the
# kernel's own start time (read by the parent from /proc/PID/stat before reaping), and
# each exec'd image must continue its chain (exec_from = the child's log, same ticks).
# Their argv (formatted once in the parent before its first fork and kept for the children)
# must be the parent's, redacted the same way.
. "$WJ_LIB/common.sh"

wj logs "$FIXTURES/fork_ticks" 300 --client-secret hunter2 "https://u:pw@example.test/?q=1" > out.txt 2> err.txt
rc=$?
[ $rc = 0 ] || fail "fork_ticks exited $rc: $(cat err.txt)"
pylogs logs out.txt <<'PY'
d, outfile = sys.argv[1], sys.argv[2]
kids = {}
for l in open(outfile).read().split("\n"):
    if l.startswith("child "):
        _, pid, ticks, execed = l.split()
        kids[int(pid)] = (int(ticks), execed == "1")
expect_eq(len(kids), 300, "children reported by the fixture")
expect(all(t > 0 for t, _ in kids.values()), "the fixture read every child's start time")
logs = load_dir(d)
expect_eq(len(logs), 1 + 300 + 150, "log files: the parent, each child, each exec'd image")
by_path = {l.path: l for l in logs}
parent = one([l for l in logs if l.start["parent_log"] is None], "the parent's log")
argv = parent.start["argv"]
expect_eq(argv[1:3], ["300", "--client-secret"], "the parent's argv")
expect("hunter2" not in str(argv) and "pw@" not in str(argv) and "q=1" not in str(argv), f"the parent's argv redacted: {argv}")
children = [l for l in logs if l.pid in kids and l.start["exec_from"] is None and l.start["parent_log"] and l.start["exe"] != "/usr/bin/true"]
expect_eq(len(children), 300, "logs of the forked children (before any exec)")
for c in children:
    ticks, execed = kids[c.pid]
    expect_eq(c.start["proc_start_ticks"], ticks, f"{c.path}: proc_start_ticks")
    expect_eq(c.end["reason"], "exec" if execed else "_exit", f"{c.path}: process_end.reason")
    expect_eq(c.start["argv"], argv, f"{c.path}: argv")
    expect_eq(c.start["argv_mode"], "redact", f"{c.path}: argv_mode")
images = [l for l in logs if l.start["exec_from"] is not None]
expect_eq(len(images), 150, "exec'd images that continued their chain")
for im in images:
    prev = by_path.get(im.start["exec_from"])
    expect(prev is not None, f"{im.path}: exec_from names a log of this run")
    expect_eq(im.pid, prev.pid, f"{im.path}: pid of its previous image")
    expect_eq(im.start["proc_start_ticks"], kids[im.pid][0], f"{im.path}: proc_start_ticks")
    expect_eq(im.start["cpu_model"], prev.start["cpu_model"], f"{im.path}: cpu_model carried by the hint")
print("ok")
PY
