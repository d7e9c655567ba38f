# wedjat's sampling signal and a program that takes every real-time signal for itself: the
# program sees its own actions (previous action SIG_DFL, queries answer its handler), each of
# its signals reaches its handler exactly once, and wedjat still samples the later stall
# (its handler stays installed and chains the app's signals to the app's handler).
. "$WJ_LIB/common.sh"
wj logs "$FIXTURES/stall_signals" > out.txt 2>&1; status=$?
[ "$status" = 0 ] || { cat out.txt; fail "fixture exit status $status"; }
plain "$FIXTURES/stall_signals" > plain.txt 2>&1 || { cat plain.txt; fail "fixture fails without wedjat"; }
pylogs <<'PY'
stalls = records(load_dir("logs"), "stall")
expect_eq(len(stalls), 2, "stalls")
for s in stalls:
    expect(len(s["samples"]) >= 1 and len(s["samples"][0]["frames"]) >= 2, f"sampled: {s}")
PY
