# Races between wedjat's own short-lived fds (dlopen of the aggregator, /proc reads, the log
# being opened and moved high) and an app that close_range()s and reallocates low fds in a
# tight loop (fixtures/fdrace.c): the app's fds must never be closed or replaced behind its
# back, and every process must still get one valid log (not empty, process_start first).
. "$WJ_LIB/common.sh"

wj logs "$FIXTURES/fdrace" 40 50 > out.txt 2> err.txt
rc=$?
hits=$(grep -c 'is now' err.txt)
[ "$hits" = 0 ] || soft_fail "$hits times an app fd was closed or replaced behind the app's back, e.g. $(grep -m1 'is now' err.txt)"
grep 'is now' err.txt | head -n 5
[ $rc = 0 ] || [ "$hits" != 0 ] || soft_fail "fdrace exited $rc: $(head -3 err.txt)"

pylogs logs <<'PY'
import os
soft_mode()
d = sys.argv[1]
names = sorted(os.listdir(d)) if os.path.isdir(d) else []
logs = [n for n in names if n.endswith(".ndjson")]
expect_eq(len(logs), 41, "log files (parent + 40 children)")
others = [n for n in names if not n.endswith(".ndjson")]
expect(not others, f"unexpected files in the log directory (a log split in two?): {others[:5]}")
bad = []
for f in logs:
    try:
        load_file(os.path.join(d, f))
    except LogError as e:
        bad.append(str(e))
print(f"{len(logs)} log files, {len(bad)} invalid")
for b in bad[:5]:
    print("  ", b)
expect(not bad, f"{len(bad)} of {len(logs)} logs invalid, first: {bad[:1]}")
PY
[ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
finish
