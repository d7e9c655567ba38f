# CPython's own network test suites as a peer suite: test_socket, test_ssl, test_selectors,
# test_httplib, test_urllib2_localnet and eleven test_asyncio modules, run by `python -m test`
# without and with the preload. Every test case must have the same outcome (ok, skipped,
# failed, error) in both runs, per module the same run/failure/error/skip/resource-denied
# counts and the same summary; the preloaded run's logs must be whole, with a process_end
# everywhere, no drops, one worker log per module, and every accepted connection must be the
# other end of a recorded connect.
# The two runs go in parallel, each in its own network namespace (only lo, so no port clash
# between them and no way off the machine): 40 to 75 s on 2 vCPUs. Without `unshare -n` they
# run one after the other, 52 s allowed each (each takes 40 to 55 s: it may time out).
. "$WJ_LIB/common.sh"
"$PYTHON" -c 'import test.libregrtest' 2>/dev/null || skip "CPython's test package is not installed"

# test_socket first: it is the longest (~35-55 s); the others fill the other workers meanwhile.
modules="test_socket test_ssl test_asyncio.test_subprocess test_selectors test_httplib
test_urllib2_localnet test_asyncio.test_events test_asyncio.test_streams
test_asyncio.test_sock_lowlevel test_asyncio.test_sendfile test_asyncio.test_server
test_asyncio.test_ssl test_asyncio.test_sslproto test_asyncio.test_base_events
test_asyncio.test_selector_events test_asyncio.test_unix_events"
# test_socket's AF_VSOCK tests hang forever on these machines (accept4 on a vsock).
regr=(-m test -j4 --timeout 300 -i '*VSOCK*')

netns=0
if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then netns=1; fi
# run_suite NAME [env assignments...]: python -m test with junit output in NAME.xml, NAME.out
run_suite() {
    local name=$1
    shift
    local cmd=(env "$@" "$PYTHON" "${regr[@]}" --junit-xml "$TEST_TMP/$name.xml" $modules)
    # On time-out, SIGINT: regrtest stops its workers and prints what it has.
    if [ $netns = 1 ]; then
        # unshare and sh run unwatched; env sets the preload only for python itself
        timeout -s INT -k 10 100 unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${cmd[@]}" > "$name.out" 2>&1
    else
        timeout -s INT -k 5 52 "${cmd[@]}" > "$name.out" 2>&1
    fi
    echo $? > "$name.rc"
}
t0=$(date +%s)
if [ $netns = 1 ]; then
    run_suite plain &
    p1=$!
    run_suite wj WEDJAT_DIR="$TEST_TMP/logs" LD_PRELOAD="$WEDJAT_PRELOAD"
    wait $p1
else
    note "unshare -n is not available: the two runs go one after the other"
    run_suite plain
    run_suite wj WEDJAT_DIR="$TEST_TMP/logs" LD_PRELOAD="$WEDJAT_PRELOAD"
fi
note "both runs took $(( $(date +%s) - t0 )) s (netns=$netns)"
for r in plain wj; do
    rc=$(cat $r.rc)
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && fail "$r run timed out (netns=$netns): $(tail -3 $r.out)"
    grep -E '^(Result|Total tests|Total test files):' $r.out | sed "s/^/# $r: /"
done
tail -n 30 wj.out > wj.tail

pylogs "$modules" "$(cat plain.rc)" "$(cat wj.rc)" <<'PY'
import re, collections
import xml.etree.ElementTree as ET
soft_mode()
modules = sys.argv[1].split()
rc = {"plain": int(sys.argv[2]), "wj": int(sys.argv[3])}

def outcome(tc):
    for tag in ("failure", "error", "skipped"):
        e = tc.find(tag)
        if e is not None:
            return tag, (e.text or e.get("message") or "").strip()
    return "ok", ""

def module_of(name):
    best = None
    for m in modules:
        if name.startswith("test." + m + ".") and (best is None or len(m) > len(best)):
            best = m
    return best or "(other)"

RESOURCE = re.compile(r"resource '?\w+'? (is )?not enabled|resource not enabled|is not enabled")
def load(run):
    out = open(f"{run}.out", errors="replace").read()
    if not os.path.exists(f"{run}.xml"):
        fail(f"{run}: no junit file (exit {rc[run]}): {out[-800:]}")
    cases = {}
    for tc in ET.parse(f"{run}.xml").getroot().iter("testcase"):
        cases[tc.get("name")] = outcome(tc)
    counts = collections.defaultdict(collections.Counter)
    for name, (o, msg) in cases.items():
        c = counts[module_of(name)]
        c["run"] += 1
        c[o] += 1
        if o == "skipped" and RESOURCE.search(msg):
            c["resource_denied"] += 1
    # per-module status from the progress lines: "[ 3/16] test_x passed (12.3 sec)"
    status = {}
    for m in re.finditer(r"^\S+ load avg: [\d.]+ \[\s*\d+/\d+(?:/\d+)?\] (\S+) (.*)$", out, re.M):
        status[m.group(1)] = re.sub(r" \(.*|\s+--.*", "", m.group(2)).strip()
    summary = [l for l in out.splitlines() if l.startswith(("Result:", "Total tests:", "Total test files:"))]
    return cases, counts, status, summary, out

P = load("plain")
W = load("wj")
expect_eq(rc["wj"], rc["plain"], "exit status of python -m test (with vs without wedjat)")
if rc["plain"] != 0 or "Result: SUCCESS" not in P[4]:
    print(f"# note: the plain run itself did not succeed (exit {rc['plain']}): {P[3]}")
expect_eq(sorted(P[2]), sorted(modules), "modules that ran (plain)")
expect_eq(sorted(W[2]), sorted(modules), "modules that ran (wedjat)")
for m in modules:
    expect_eq(W[2].get(m), P[2].get(m), f"{m}: module status with wedjat")
    expect_eq(dict(W[1].get(m, {})), dict(P[1].get(m, {})), f"{m}: run/ok/failure/error/skipped/resource_denied counts with wedjat")
    expect(P[1].get(m, {}).get("run", 0) > 0, f"{m}: no test case ran")
expect_eq(W[3], P[3], "summary lines (Result, Total tests, Total test files)")
diff = sorted(n for n in set(P[0]) | set(W[0]) if P[0].get(n, ("missing",))[0] != W[0].get(n, ("missing",))[0])
expect_eq(diff[:10], [], f"test cases whose outcome differs with wedjat ({len(diff)} in all): name")
for n in diff[:5]:
    print(f"#   {n}: plain {P[0].get(n)!r:.300}  wedjat {W[0].get(n)!r:.300}")
tot = collections.Counter()
for c in P[1].values():
    tot.update(c)
print(f"# {len(P[0])} test cases: {dict(tot)}")

import glob
# ---- the preloaded run's logs
# test_asyncio's test_kill_issue43884 SIGKILLs `sh -c 'sleep 1; sleep 1'` after 1 s, the moment
# that shell's first sample is due: if the kill lands between the log's creation and its first
# write, the file stays empty (whole lines or nothing, as promised). One such file is allowed.
paths = sorted(glob.glob("logs/*.ndjson"))
empty = [p for p in paths if os.path.getsize(p) == 0]
expect(len(empty) <= 1, f"empty logs: {empty}")
logs = [load_file(os.path.abspath(p)) for p in paths if p not in empty]
mains = [l for l in logs if l.start["argv"][1:3] == ["-m", "test"]]
main = one(mains, "log of the python -m test main process")
workers = {}
for l in logs:
    argv = l.start["argv"]
    if l.start["ppid"] == main.pid and any("libregrtest.worker" in a for a in argv):
        try:
            names = json.loads(argv[-1])["tests"]
        except (ValueError, KeyError, TypeError):
            names = ["?"]
        for n in names:
            workers.setdefault(n, []).append(l)
expect_eq(sorted((m, len(ws)) for m, ws in workers.items()), sorted((m, 1) for m in modules),
          "(module, number of worker logs): one worker process per module")
for l in logs:
    name = os.path.basename(l.path)
    e = l.end
    if e is None and l.start["argv"] == ["/bin/sh", "-c", "sleep 1; sleep 1"]:
        continue  # test_asyncio's test_kill_issue43884 SIGKILLs it after 1 s: its first sample may have written the log
    if not expect(e is not None, f"{name}: no process_end ({l.start['argv'][:4]})"):
        continue
    expect_eq((e["dropped_events"], e["dropped_records"], e.get("untracked_connections", 0)), (0, 0, 0),
              f"{name}: dropped_events, dropped_records, untracked_connections")
    expect_eq(l.records("drops"), [], f"{name}: drops records")
    got = collections.Counter(r["type"] for r in l.records_all if r["type"] != "process_end")
    expect_eq({k: v for k, v in e["records"].items() if v}, dict(got), f"{name}: process_end.records vs the file")
    ids = [c["conn_id"] for c in l.records("connection")]
    expect_eq(len(ids), len(set(ids)), f"{name}: distinct conn_ids")
expect_eq((main.end or {}).get("exit_status"), rc["wj"], "main process exit_status vs its real exit status")
for m in ("test_socket", "test_ssl", "test_httplib", "test_urllib2_localnet", "test_asyncio.test_events",
          "test_asyncio.test_streams", "test_asyncio.test_sock_lowlevel", "test_asyncio.test_sendfile",
          "test_asyncio.test_ssl"):
    for w in workers.get(m, []):
        expect(len(w.records("connection")) >= 10, f"{m}: only {len(w.records('connection'))} connection records in its worker")
        expect_eq((w.end or {}).get("exit_status"), 0, f"{m}: worker exit_status")

conns = records(logs, "connection", transport="tcp")
norm = lambda a: (a or "").replace("[::ffff:127.0.0.1]", "127.0.0.1")
clients = collections.Counter((norm(c["local"]), norm(c["peer"])) for c in conns if c["role"] == "client")
servers = [c for c in conns if c["role"] == "server"]
orphans = [s for s in servers if (norm(s["peer"]), norm(s["local"])) not in clients]
expect_eq(orphans[:3], [], f"server records without the client record of the same connection ({len(orphans)} of {len(servers)})")
for c in conns:
    if not expect(c["duration_us"] == c["close_ts"] - c["open_ts"] and c["duration_us"] >= 0, f"duration/close_ts/open_ts: {c}"):
        break
    if not expect(c["error"] is not None or c["local"] is not None, f"connection without error nor local address: {c}"):
        break
expect(len(conns) >= 800, f"only {len(conns)} connection records in all")
print(f"# {len(logs)} logs, {len(conns)} connection records ({len(servers)} accepted)")
PY
