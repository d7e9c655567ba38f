# A shell loop starting 200 short processes (/bin/true), preloaded bash and, when the CLI is
# given, `wedjat run`: 201 processes, each fork child two images (bash until the exec, then
# true), so 401 distinct log files, every one valid, linked by parent_log/exec_from; the
# parent has 200 fork records. `wedjat report --format json` rebuilds the tree: one bash root
# with 200 children `bash → exec → true`.
. "$WJ_LIB/common.sh"

loop='for ((i = 0; i < 200; i++)); do /bin/true; done; echo done'

check_tree() {  # DIR
    pylogs "$1" <<'PY'
import os
d = sys.argv[1]
names = os.listdir(d) if os.path.isdir(d) else []
expect_eq(sorted(n for n in names if not n.endswith(".ndjson")), [], "files other than logs")
logs = load_dir(d)                       # strict: every one valid
expect_eq(len(logs), 401, "log files")
expect_eq(len({l.path for l in logs}), 401, "distinct log paths")
expect_eq(len({l.pid for l in logs}), 201, "distinct pids")
roots = [l for l in logs if l.start["parent_log"] is None and l.start["exec_from"] is None]
root = one(roots, "log without parent_log and exec_from (the loop's bash)")
expect_eq(root.exe, "bash", "root exe")
forks = root.records("fork")
expect_eq(len(forks), 200, "fork records in the parent")
expect_eq((root.end["reason"], root.end["exit_status"]), ("exit", 0), "parent process_end")
kids = {f["child_pid"] for f in forks}
expect_eq(len(kids), 200, "distinct child pids in fork records")
by_pid = {}
for l in logs:
    if l is not root:
        by_pid.setdefault(l.pid, []).append(l)
expect_eq(set(by_pid), kids, "child pids with logs vs fork records")
bad = []
for pid, images in by_pid.items():
    images.sort(key=lambda l: l.start["ts"])
    if [l.exe for l in images] != ["bash", "true"]:
        bad.append(f"{pid}: images {[l.exe for l in images]}"); continue
    pre, post = images
    if pre.start["parent_log"] != root.path: bad.append(f"{pid}: parent_log {pre.start['parent_log']}")
    if (pre.end or {}).get("reason") != "exec": bad.append(f"{pid}: pre-exec end {pre.end}")
    if post.start["exec_from"] != pre.path: bad.append(f"{pid}: exec_from {post.start['exec_from']}")
    if post.start["proc_start_ticks"] != pre.start["proc_start_ticks"]: bad.append(f"{pid}: proc_start_ticks")
    if (post.end or {}).get("reason") != "exit" or post.end.get("exit_status") != 0: bad.append(f"{pid}: end {post.end}")
expect(not bad, f"{len(bad)} children wrong, first: {bad[:3]}")
print(f"{d}: 401 valid logs, 201 processes, every child bash → exec → true linked to the parent")
PY
}

t0=${EPOCHREALTIME/[.,]/}
wj logs bash -c "$loop" > out.txt 2> err.txt; rc=$?
t1=${EPOCHREALTIME/[.,]/}
note "200 processes under the preload: $(( (t1 - t0) / 1000 )) ms"
[ $rc = 0 ] || fail "preloaded bash loop exited $rc: $(head -3 err.txt)"
[ "$(cat out.txt)" = done ] || fail "loop output: $(cat out.txt)"
check_tree logs || SOFT_FAILS=$((SOFT_FAILS + 1))

if [ -n "${WEDJAT_CLI:-}" ]; then
    cli() { timeout -k 5 60 env WEDJAT_LIB="$WEDJAT_PRELOAD" "$WEDJAT_CLI" "$@"; }
    cli run --dir "$TEST_TMP/runlogs" -- bash -c "$loop" > run.out 2> run.err; rc=$?
    [ $rc = 0 ] || fail "wedjat run exited $rc: $(head -3 run.err)"
    [ "$(cat run.out)" = done ] || fail "wedjat run output: $(cat run.out)"
    check_tree runlogs || SOFT_FAILS=$((SOFT_FAILS + 1))
    cli report --format json runlogs > report.json 2> report.err; rc=$?
    [ $rc = 0 ] || fail "wedjat report --format json exited $rc: $(head -3 report.err)"
    pylogs report.json <<'PY'
import json
rep = json.load(open(sys.argv[1]))
h = rep["headline"]
expect_eq((h["processes"], h["logs"], h["connections"]), (201, 401, 0), "headline (processes, logs, connections)")
expect_eq(h.get("dropped_events", 0) + h.get("dropped_records", 0), 0, "headline drops")
root = one(rep["tree"], "tree root")
expect_eq(root["label"], "bash", "root label")
kids = root["children"]
expect_eq(len(kids), 200, "children of the bash node")
expect(all(k["label"] == "bash → exec → true" and k["programs"] == ["bash", "true"] and len(k["logs"]) == 2
           and not k["children"] for k in kids),
       f"children labels: {sorted({k['label'] for k in kids})}")
expect_eq(len({k["pid"] for k in kids}), 200, "distinct child pids in the tree")
expect_eq([w for w in rep["warnings"] if w["kind"] != "config"], [], "report warnings")
print("report: bash with 200 children")
PY
    [ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
else
    note "no CLI given: wedjat run / report part not run"
fi
finish
