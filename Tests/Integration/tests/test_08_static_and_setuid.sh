# Where wedjat must stay out of the way: static binaries, setuid programs, WEDJAT_DISABLE.
# And configuration: bad values are reported in config_warnings and fall back to defaults.
. "$WJ_LIB/common.sh"

file "$FIXTURES/netprobe_static" | grep -q 'statically linked' || fail "netprobe_static is not static"

# 1. static binary: runs normally, no log (LD_PRELOAD cannot apply).
out=$(wj logs_static "$FIXTURES/netprobe_static") || fail "static netprobe failed under the preload"
[ "$out" = "probe ok" ] || fail "static netprobe printed '$out'"
[ -z "$(find . -path './logs_static*' -name '*.ndjson')" ] || fail "a static binary wrote a log"

# 2. WEDJAT_DISABLE=1: a dynamic program runs normally and writes nothing (not even the dir).
out=$(WEDJAT_DISABLE=1 wj logs_disabled "$FIXTURES/netprobe") || fail "netprobe failed with WEDJAT_DISABLE=1"
[ "$out" = "probe ok" ] || fail "netprobe printed '$out' with WEDJAT_DISABLE=1"
[ ! -e logs_disabled ] || fail "WEDJAT_DISABLE=1 still created $(find logs_disabled | tr '\n' ' ')"

# 2b. A watched process that execs something wedjat cannot watch (a static binary, or a
#     program run with WEDJAT_DISABLE=1): the old image's log ends with reason exec, and
#     nothing else is left in the log directory (the exec hint is for the next image only;
#     left behind, a later process that reuses the pid would take a wrong exec_from).
out=$(wj logs_execstatic bash -c "exec '$FIXTURES/netprobe_static'") || fail "bash -c 'exec static' failed"
[ "$out" = "probe ok" ] || fail "exec'd static netprobe printed '$out'"
out=$(wj logs_execdisabled bash -c "WEDJAT_DISABLE=1 exec '$FIXTURES/netprobe'") || fail "bash -c 'exec disabled' failed"
[ "$out" = "probe ok" ] || fail "exec'd disabled netprobe printed '$out'"
for d in logs_execstatic logs_execdisabled; do
    python3 "$WJ_LIB/logs.py" check "$d" --exe bash --count 1 >/dev/null || fail "$d: $(python3 "$WJ_LIB/logs.py" check "$d" --exe bash --count 1)"
    left=$(ls -A "$d" | grep -v '^bash\.[0-9]*\.[0-9]*\.ndjson$' | tr '\n' ' ')
    [ -z "$left" ] || soft_fail "$d: files left in the log directory besides bash's log: $left"
done

# 3. setuid: a setuid-root copy run by an unprivileged user gets AT_SECURE; it must run
#    normally and write no log (the loader ignores the preload, and so would wedjat).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    sdir=$(mktemp -d /tmp/wedjat-suid.XXXXXX)
    trap 'rm -rf "$sdir"; _cleanup_bg' EXIT
    chmod 755 "$sdir"
    cp "$FIXTURES/netprobe" "$sdir/netprobe_suid"
    chown root:root "$sdir/netprobe_suid"
    chmod 4755 "$sdir/netprobe_suid"
    mkdir -m 1777 "$sdir/logs"
    out=$(timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
          env WEDJAT_DIR="$sdir/logs" LD_PRELOAD="$WEDJAT_PRELOAD" "$sdir/netprobe_suid" 2>&1)
    rc=$?
    [ $rc = 0 ] && [ "$out" = "probe ok" ] || fail "setuid netprobe: exit $rc, output '$out'"
    [ -z "$(ls -A "$sdir/logs")" ] || fail "a setuid program wrote a log: $(ls "$sdir/logs")"
    # control: the same binary without the setuid bit, same user, writes its log
    cp "$FIXTURES/netprobe" "$sdir/netprobe_plain"; chmod 755 "$sdir/netprobe_plain"
    timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
          env WEDJAT_DIR="$sdir/logs" LD_PRELOAD="$WEDJAT_PRELOAD" "$sdir/netprobe_plain" >/dev/null 2>&1 \
        || note "control run as nobody failed"
    ls "$sdir/logs" | grep -q '^netprobe_plain\.' || note "control run as nobody wrote no log (library not readable by nobody?)"
    echo "setuid: ok"
else
    note "setuid part skipped: needs root and setpriv"
fi

# 4. configuration in process_start.
WEDJAT_FLUSH_MS=abc wj logs_badflush "$FIXTURES/netprobe" >/dev/null || fail "netprobe failed with WEDJAT_FLUSH_MS=abc"
WEDJAT_FLUSH_MS=50 wj logs_flush50 "$FIXTURES/netprobe" >/dev/null || fail "netprobe failed with WEDJAT_FLUSH_MS=50"
WEDJAT_FLUSHMS=50 wj logs_typo "$FIXTURES/netprobe" >/dev/null || fail "netprobe failed with a misspelt variable"
mkdir -p sub
(cd sub && WEDJAT_ARGV=none wj relative "$FIXTURES/netprobe" secret-arg >/dev/null) || fail "netprobe failed with a relative WEDJAT_DIR"

pylogs "$TEST_TMP" <<'PY'
import os, stat
base = sys.argv[1]
def only(d):
    return one(load_dir(os.path.join(base, d)), f"log in {d}")

bad = only("logs_badflush")
cfg, warns = bad.start["config"], bad.start["config_warnings"]
expect_eq(cfg["flush_ms"], 200, "config.flush_ms with WEDJAT_FLUSH_MS=abc")
expect_eq(len(warns), 1, f"config_warnings with WEDJAT_FLUSH_MS=abc ({warns})")
expect("WEDJAT_FLUSH_MS" in warns[0] and "abc" in warns[0], f"warning text: {warns}")
expect_eq(len(bad.records("connection")), 1, "connection recorded despite the bad setting")

ok = only("logs_flush50")
expect_eq(ok.start["config"]["flush_ms"], 50, "config.flush_ms with WEDJAT_FLUSH_MS=50")
expect_eq(ok.start["config_warnings"], [], "config_warnings with valid settings")
expect_eq(ok.start["config"]["dir"], os.path.join(base, "logs_flush50"), "config.dir")
expect_eq(ok.start["config"]["argv"], "redact", "config.argv default")

typo = only("logs_typo")
w = typo.start["config_warnings"]
expect(len(w) == 1 and "WEDJAT_FLUSHMS" in w[0], f"warning for a misspelt variable: {w}")

rel = only("sub/relative")
expect_eq(rel.start["config"]["dir"], os.path.join(base, "sub", "relative"), "relative WEDJAT_DIR resolved")
expect_eq(rel.start["argv_mode"], "none", "argv_mode")
expect_eq(rel.start["argv"], [os.environ["FIXTURES"] + "/netprobe"], "argv with WEDJAT_ARGV=none")
expect("secret-arg" not in open(rel.path).read(), "WEDJAT_ARGV=none leaked an argument")

# file and directory modes
st = os.stat(ok.path)
expect_eq(stat.S_IMODE(st.st_mode), 0o600, "log file mode")
expect_eq(stat.S_IMODE(os.stat(os.path.join(base, "logs_flush50")).st_mode), 0o700, "log dir mode")
print("config: ok")
PY
[ $? = 0 ] || soft_fail "configuration checks (above)"
finish
