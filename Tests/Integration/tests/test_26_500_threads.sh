# 500 threads each connect to a local listener (one accept thread echoes), send 100 bytes,
# read 100 back, close (fixtures/rel_threads.c): exactly 500 client records (100/100 bytes,
# each by its own thread, local ports as the threads saw them) and 500 server records (peers
# = those ports), no drops. Then data races inside wedjat:
# - helgrind (valgrind runs the LD_PRELOAD library in the guest) with 20 threads: the program
#   must run correctly under it with wedjat; its race reports in wedjat's code are printed
#   but not judged: helgrind only knows happens-before from pthread primitives and its own
#   annotations, not C11 atomics (GCC emits plain lock-prefixed instructions), and wedjat's
#   ring and fd table synchronise through atomics only, so every access to them is "racy" to
#   helgrind (drd has the same model). That check is made with ThreadSanitizer instead, which
#   models C11 atomics: a TSan build of the interposer (the repository's CShims sources, the
#   flags of scripts/build-lib.sh plus -fsanitize=thread) preloaded into a TSan build of the
#   fixture; any race report with a frame in wedjat fails, except one documented pattern:
#   the lazily resolved real-function pointers (wj_real_NAME: plain load/store of the same
#   value from several threads). Connection state is all relaxed atomics, so a slot reused
#   when the kernel hands an fd number to another thread is no race to TSan either.
#   Skipped parts say why.
. "$WJ_LIB/common.sh"

wj logs "$FIXTURES/rel_threads" 500 > out.txt 2> err.txt; rc=$?
[ $rc = 0 ] || fail "rel_threads 500 exited $rc: $(head -3 err.txt)"
grep -qx 'done 500' out.txt || fail "fixture output: $(tail -2 out.txt)"
pylogs logs out.txt <<'PY'
d, outfile = sys.argv[1], sys.argv[2]
lines = open(outfile).read().split("\n")
port = int(lines[0].split()[1])
clients = {int(l.split()[1]): int(l.split()[2]) for l in lines if l.startswith("client ")}   # tid -> local port
expect_eq(len(clients), 500, "client threads reported by the fixture")
log = one(by_exe(load_dir(d), "rel_threads"), "rel_threads log")
cli = log.records("connection", role="client")
srv = log.records("connection", role="server")
expect_eq(len(cli), 500, "client records")
expect_eq(len(srv), 500, "server records")
bad = [c for c in cli if (c["bytes_out"], c["bytes_in"], c["error"], c["peer"]) != (100, 100, None, f"127.0.0.1:{port}")]
expect(not bad, f"{len(bad)} client records with wrong bytes/error/peer, first: {bad[:1]}")
expect_eq({c["tid"]: port_of(c["local"]) for c in cli}, clients, "client records: thread id -> local port")
bad = [s for s in srv if (s["bytes_in"], s["bytes_out"], s["error"], s["local"]) != (100, 100, None, f"127.0.0.1:{port}")]
expect(not bad, f"{len(bad)} server records with wrong bytes/error/local, first: {bad[:1]}")
expect_eq(sorted(port_of(s["peer"]) for s in srv), sorted(clients.values()), "server peers vs client local ports")
expect_eq(len({c["conn_id"] for c in cli + srv}), 1000, "distinct conn_id")
end = log.end
expect_eq((end["dropped_events"], end["dropped_records"], end["untracked_connections"]), (0, 0, 0),
          "process_end (dropped_events, dropped_records, untracked_connections)")
expect_eq(end["records"].get("connection"), 1000, "process_end.records.connection")
expect_eq(log.records("drops"), [], "drops records")
print("500 threads: 500 client + 500 server records, exact bytes, no drops")
PY
[ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))

# ---- helgrind: runs, result right; reports inside wedjat listed, not judged (see above)
if command -v valgrind > /dev/null; then
    wj logs_helgrind valgrind --tool=helgrind --error-exitcode=0 "$FIXTURES/rel_threads" 20 > hg.out 2> hg.err; rc=$?
    [ $rc = 0 ] || soft_fail "rel_threads 20 under helgrind with wedjat exited $rc: $(grep -m3 -iE 'error|fatal' hg.err)"
    grep -qx 'done 20' hg.out || soft_fail "under helgrind: $(tail -2 hg.out)"
    pylogs logs_helgrind <<'PY'
log = one(by_exe(load_dir(sys.argv[1]), "rel_threads"), "rel_threads log under helgrind")
c = log.records("connection")
expect_eq(len(c), 40, "connection records under helgrind")
expect(all(x["bytes_in"] == 100 and x["bytes_out"] == 100 for x in c), "bytes under helgrind")
PY
    [ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
    total=$(grep -c 'Possible data race' hg.err)
    inwj=$(awk '/Possible data race/{r=1; hit=0; next} r && /\((hooks|state|ring|agent|logfile|records|json|config|sys)\.(c|def):|libwedjat/{hit=1} r && /^==[0-9]+== *$/{if (hit) n++; r=0} END{print n+0}' hg.err)
    note "helgrind: $total possible races, $inwj with wedjat frames (C11 atomics, not judged)"
else
    note "valgrind not installed: helgrind part not run"
fi

# ---- ThreadSanitizer
root=$(cd "$WJ_LIB/../../.." && pwd)
tsan=$(gcc -print-file-name=libtsan.so 2>/dev/null)
if [ ! -f "$tsan" ]; then
    note "no libtsan: race check skipped"
elif [ ! -d "$root/CShims/interposer" ]; then
    note "no CShims sources next to the tests: race check skipped"
else
    mkdir -p tsanlib
    "$root/scripts/gen-version-script.sh" "$TEST_TMP/tsanlib/wedjat.map" 2> tsan-build.err &&
    (cd "$root" && gcc -std=gnu11 -O1 -g -fPIC -shared -fvisibility=hidden -fsanitize=thread -Wno-format-truncation \
        -D_GNU_SOURCE -I CShims/common/include -I CShims/interposer \
        CShims/common/*.c CShims/interposer/*.c CShims/interposer/vfork_x86_64.S \
        -Wl,--version-script="$TEST_TMP/tsanlib/wedjat.map" -ldl -lpthread -o "$TEST_TMP/tsanlib/libwedjat.so") 2>> tsan-build.err &&
    cp "$WEDJAT_LIBDIR/libwedjat-agent.so" tsanlib/ &&
    gcc -std=gnu11 -O1 -g -fsanitize=thread -D_GNU_SOURCE -pthread -o threads_tsan "$root/Tests/Integration/fixtures/rel_threads.c" 2>> tsan-build.err
    if [ $? != 0 ]; then
        note "TSan build failed, race check skipped: $(head -c 300 tsan-build.err)"
    else
        # symbolize=0: TSan's own symbolizer can deadlock against the agent's dlopen
        timeout -k 5 60 env TSAN_OPTIONS="symbolize=0 exitcode=66 history_size=4" WEDJAT_DIR="$TEST_TMP/logs_tsan" \
            LD_PRELOAD="$TEST_TMP/tsanlib/libwedjat.so" ./threads_tsan 100 > tsan.out 2> tsan.err; rc=$?
        [ $rc = 0 ] || [ $rc = 66 ] || soft_fail "TSan run exited $rc: $(grep -m3 -E 'FATAL|ERROR' tsan.err)"
        grep -qx 'done 100' tsan.out || soft_fail "TSan run output: $(tail -2 tsan.out)"
        python3 - tsan.err tsanlib/libwedjat.so > tsan.verdict <<'PY'
import re, subprocess, sys
text, lib = open(sys.argv[1]).read(), sys.argv[2]
reports = [r for r in text.split("==================") if "WARNING: ThreadSanitizer" in r]
def fn(addr):
    out = subprocess.run(["addr2line", "-f", "-e", lib, addr], capture_output=True, text=True).stdout.split("\n")
    return out[0] if out else "?"
known, unknown = 0, []
for r in reports:
    # the #0 frame of each of the two conflicting accesses
    tops = re.findall(r"^  (?:Read|Write|Atomic read|Atomic write|Previous read|Previous write|Previous atomic \w+)[^\n]*\n\s+#0 [^\n]*\((\S+?)\+(0x[0-9a-f]+)\)", r, re.M)
    names = [fn(a) if m == "libwedjat.so" else m for m, a in tops]
    if not any(m == "libwedjat.so" for m, _ in tops) and "libwedjat.so" not in r:
        continue
    if names and all(n.startswith("wj_real_") for n in names):
        known += 1            # (1) lazily resolved real-function pointers
    else:
        unknown.append(f"{r.splitlines()[1].strip()} in {names}")
print(f"{len(reports)} TSan reports, {known} of the documented pattern, {len(unknown)} other")
for u in unknown[:5]:
    print("OTHER:", u)
PY
        cat tsan.verdict
        grep -q '^OTHER:' tsan.verdict && soft_fail "ThreadSanitizer: data race in wedjat: $(grep -m1 '^OTHER:' tsan.verdict)"
        if grep -qh '"type":"warning".*does not match' logs_tsan/*.ndjson 2>/dev/null; then
            # the sources next to the tests are not those LIBDIR was built from
            note "the TSan interposer and $WEDJAT_LIBDIR/libwedjat-agent.so do not match: log check of the TSan run skipped"
        else
            pylogs logs_tsan <<'PY'
log = one(by_exe(load_dir(sys.argv[1]), "threads_tsan"), "TSan run log")
expect_eq(len(log.records("connection")), 200, "connection records in the TSan run")
PY
            [ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
        fi
    fi
fi
finish
