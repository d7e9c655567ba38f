# libwedjat.so preloaded together with other interposers: jemalloc (malloc replacement) and
# libfaketime (clock interposer, FAKETIME=-1d), in both orders: curl against a local server
# works, its output is the same as with the other library alone, both libraries are really
# loaded, and the connection is recorded. An AddressSanitizer-built program preloaded with
# libasan first (ASan requires that) and wedjat second runs cleanly (no ASan/LSan report)
# and its connections are recorded. Libraries that are not installed are skipped (listed).
. "$WJ_LIB/common.sh"

jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
faketime=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
ran=0 skipped=()

mkdir -p www
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 13 + 5) % 256 for i in range(54321)))' > www/blob.bin
bg_start server "$PYTHON" "$WJ_LIB/httpserver.py" www port
srv=$BG_PID
wait_file port || fail "server did not start: $(cat server.out)"
port=$(cat port)
url=http://127.0.0.1:$port/blob.bin

# wjx DIR PRELOAD_LIST cmd...: like wj, with an explicit LD_PRELOAD list
wjx() {
    local dir=$1 pre=$2
    shift 2
    timeout -k 5 "$WJ_TIMEOUT" env WEDJAT_DIR="$dir" LD_PRELOAD="$pre" "$@"
}

check_curl_log() {  # DIR LABEL: one curl log, one client connection to the server, whole file
    pylogs "$1" "$2" "$port" <<'PY'
d, label, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
logs = load_dir(d)
curl = one(by_exe(logs, "curl"), f"{label}: curl log")
c = one(curl.records("connection"), f"{label}: connection record")
expect_eq((c["role"], c["peer"], c["error"]), ("client", f"127.0.0.1:{port}", None), f"{label}: role/peer/error")
expect(c["bytes_in"] > 54321, f"{label}: bytes_in {c['bytes_in']} <= body size")
expect(c["bytes_out"] > 0, f"{label}: bytes_out {c['bytes_out']}")
expect(curl.end is not None and curl.end["exit_status"] == 0, f"{label}: process_end {curl.end}")
expect_eq(curl.end["dropped_events"], 0, f"{label}: dropped_events")
PY
}

co_preload() {  # NAME LIB [VAR=VALUE...]: curl with LIB alone vs LIB+wedjat in both orders
    local name=$1 lib=$2
    shift 2
    if [ ! -f "$lib" ]; then skipped+=("$name ($lib not installed)"); return 0; fi
    ran=$((ran + 1))
    plain "$@" LD_PRELOAD="$lib" curl -sS "$url" > "$name.ref.out" 2> "$name.ref.err"; local rr=$?
    [ $rr = 0 ] || fail "$name: curl with $lib alone exited $rr: $(head -3 "$name.ref.err")"
    cmp -s "$name.ref.out" www/blob.bin || fail "$name: curl with $lib alone did not fetch the file"
    local order pre d
    for order in first second; do
        if [ $order = first ]; then pre="$lib $WEDJAT_PRELOAD"; else pre="$WEDJAT_PRELOAD $lib"; fi
        d=logs_${name}_$order
        wjx "$d" "$pre" "$@" curl -sS "$url" > "$d.out" 2> "$d.err"; local rc=$?
        [ $rc = 0 ] || { soft_fail "$name $order: curl exited $rc: $(head -c 300 "$d.err")"; continue; }
        cmp -s "$name.ref.out" "$d.out" || soft_fail "$name $order: curl output differs"
        cmp -s "$name.ref.err" "$d.err" || soft_fail "$name $order: curl stderr differs: $(head -c 300 "$d.err")"
        check_curl_log "$d" "$name $order" || SOFT_FAILS=$((SOFT_FAILS + 1))
        # both libraries are mapped into the watched process
        wjx "${d}_maps" "$pre" "$@" cat /proc/self/maps > "$d.maps"
        grep -q "$(basename "$lib")" "$d.maps" || soft_fail "$name $order: $lib not loaded"
        grep -q "$(basename "$WEDJAT_PRELOAD")" "$d.maps" || soft_fail "$name $order: libwedjat.so not loaded"
        echo "$name, $lib $order: curl ok, connection recorded"
    done
}

co_preload jemalloc "$jemalloc"
co_preload faketime "$faketime" FAKETIME=-1d

# faketime keeps working for the program when wedjat is loaded too (either order).
if [ -f "$faketime" ]; then
    real_day=$(date -u +%F)
    faked=$(plain FAKETIME=-1d LD_PRELOAD="$faketime" date -u +%F)
    [ "$faked" != "$real_day" ] || fail "libfaketime had no effect on date ($faked)"
    for pre in "$faketime $WEDJAT_PRELOAD" "$WEDJAT_PRELOAD $faketime"; do
        got=$(wjx logs_date "$pre" FAKETIME=-1d date -u +%F)
        [ "$got" = "$faked" ] || soft_fail "date with LD_PRELOAD='$pre' says $got, with faketime alone $faked"
    done
    # wedjat's ts comes from the program's clock_gettime: note where it lands (not a failure)
    pylogs logs_faketime_first <<'PY'
import time
c = records(load_dir(sys.argv[1]), "connection")
if c:
    skew = (time.time() * 1e6 - c[0]["ts"]) / 3.6e9
    print(f"# note: under FAKETIME=-1d the connection's ts is {skew:.1f} h behind the real clock")
PY
fi

# AddressSanitizer: libasan must come first in LD_PRELOAD; wedjat second.
asan=$(gcc -print-file-name=libasan.so 2>/dev/null)
if [ -f "$asan" ] && gcc -std=gnu11 -O1 -g -fsanitize=address -fno-omit-frame-pointer -D_GNU_SOURCE \
        -o netclient_asan "$WJ_LIB/../fixtures/rel_netclient.c" 2> asan-build.err; then
    ran=$((ran + 1))
    plain ASAN_OPTIONS=detect_leaks=1 ./netclient_asan 5 > asan.ref.out 2> asan.ref.err; rr=$?
    [ $rr = 0 ] || fail "the ASan build alone exited $rr: $(head -5 asan.ref.err)"
    wjx logs_asan "$asan $WEDJAT_PRELOAD" ASAN_OPTIONS=detect_leaks=1 ./netclient_asan 5 > asan.out 2> asan.err; rc=$?
    [ $rc = 0 ] || soft_fail "ASan program with wedjat exited $rc: $(grep -m3 -E 'ERROR|SUMMARY|Sanitizer' asan.err)"
    if grep -qE 'Sanitizer|ERROR' asan.err; then
        sed -n 1,30p asan.err
        soft_fail "ASan/LSan report with wedjat preloaded: $(grep -m1 -E 'ERROR|SUMMARY' asan.err)"
    fi
    [ "$(grep -v '^port' asan.out)" = "ok 5 connections, 500 bytes each way" ] || soft_fail "ASan program output: $(cat asan.out)"
    pylogs logs_asan <<'PY'
logs = load_dir(sys.argv[1])
log = one(by_exe(logs, "netclient_asan"), "ASan program log")
conns = log.records("connection")
expect_eq(sorted(c["role"] for c in conns), ["client"] * 5 + ["server"] * 5, "roles of the connection records")
expect(all((c["bytes_in"], c["bytes_out"], c["error"]) == (100, 100, None) for c in conns),
       f"bytes/error: {[(c['bytes_in'], c['bytes_out'], c['error']) for c in conns]}")
expect(log.end is not None and log.end["exit_status"] == 0, f"process_end: {log.end}")
print("asan: ok,", len(conns), "connections recorded")
PY
    [ $? = 0 ] || SOFT_FAILS=$((SOFT_FAILS + 1))
else
    skipped+=("asan (no libasan or the -fsanitize=address build failed: $(head -c 200 asan-build.err 2>/dev/null))")
fi

bg_stop "$srv"
[ ${#skipped[@]} = 0 ] || note "skipped: ${skipped[*]}"
[ $ran -gt 0 ] || skip "none of jemalloc, libfaketime, libasan is available"
finish
