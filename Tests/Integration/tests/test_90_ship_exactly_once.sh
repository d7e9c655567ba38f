# `wedjat ship` follows the logs of a watched nginx under load and streams OTLP/HTTP protobuf
# with gzip to a local receiver (fixtures/otlp_receiver.py, decoded with opentelemetry-proto),
# across a kill -9 and restart of ship and a 10 s outage of the receiver: every exchange arrives
# exactly once (fixtures/check_ship.py: the span ids of `wedjat export --otlp-json` of the same
# logs, each received once, with the same attributes; the delta duration histograms add up to
# the export's), the processes' metrics arrive, and each log ends with its .ship/*.done.
# Then the same logs split into segments (fixtures/split_segments.py, as the rotating writer
# names them) are shipped as OTLP/JSON (--json) to a second receiver: the same spans, once.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/nginx.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v curl >/dev/null || skip "curl is not installed"
python3 -c 'import opentelemetry.proto' 2>/dev/null || skip "python3 opentelemetry-proto is missing (scripts/deps.sh)"
fixtures_dir=$WJ_LIB/../fixtures

mkdir -p received
rport=$(free_port)
receiver_start() {
    bg_start receiver "$PYTHON" "$fixtures_dir/otlp_receiver.py" received --port "$rport"
    recv=$BG_PID
    wait_file received/port 10 || fail "otlp_receiver did not start: $(cat receiver.out)"
}
receiver_start

# Every exchange a record of its own (the test counts spans); samples every second.
export WEDJAT_HTTP_RECORDS=100000
nginx_start 200 256 1 warn "keepalive_timeout 30;"
export -n WEDJAT_HTTP_RECORDS

ship_start() {
    bg_start "ship$1" "$WEDJAT_CLI" ship --otlp "http://127.0.0.1:$rport" logs
    ship=$BG_PID
}
ship_start 1

# Load: 40 rounds of 50 keep-alive requests, about 20 s.
(
    for i in $(seq 1 40); do
        curl -s -o /dev/null "http://127.0.0.1:$port/f.bin?r=$i&[1-50]" || exit 1
        sleep 0.5
    done
) > load.out 2>&1 &
load=$!
BG_PIDS+=("$load")

sleep 4
kill -KILL "$ship" 2>/dev/null; wait "$ship" 2>/dev/null
note "ship killed (-9) at 4 s"
sleep 1
ship_start 2
sleep 3
bg_stop "$recv"
note "receiver down at 8 s for 10 s"
rm -f received/port
sleep 10
receiver_start
note "receiver back"
wait "$load" || fail "the load generator failed: $(cat load.out)"
nginx_stop

# Wait until ship marked every log done (process_end seen, all sent), then stop it.
for i in $(seq 1 300); do
    n_logs=$(ls logs/*.ndjson | wc -l)
    n_done=$(ls logs/.ship/*.done 2>/dev/null | wc -l)
    [ "$n_done" -ge "$n_logs" ] && break
    sleep 0.1
done
[ "$n_done" -ge "$n_logs" ] || fail "ship marked $n_done of $n_logs logs done in 30 s: $(ls -a logs/.ship; tail -5 ship2.out)"
bg_stop "$ship"
cat ship1.out ship2.out | sed 's/^/# /'
grep -q "collector unavailable" ship2.out || fail "ship did not report the outage: $(cat ship2.out)"
grep -qE "collector back after [0-9.]+ s" ship2.out || fail "ship did not report the collector back: $(cat ship2.out)"
[ ! -e received/errors.txt ] || fail "the receiver could not decode: $(cat received/errors.txt)"
ls received/traces.*.pb >/dev/null 2>&1 || fail "no protobuf traces received: $(ls received)"

timeout 60 "$WEDJAT_CLI" export --otlp-json expected.jsonl logs 2> export.err || fail "wedjat export failed: $(cat export.err)"
python3 "$fixtures_dir/check_ship.py" expected.jsonl received > check.out || fail "$(cat check.out)"
cat check.out | sed 's/^/# /'
python3 - check.out <<'PY' || fail "check of the numbers failed"
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["expected_spans"] == 2000, f"the export has {r['expected_spans']} spans, curl made 2,000 requests"
assert r["histograms"].get("http.server.request.duration") == 2000, r["histograms"]
for m in ("process.cpu.time", "process.memory.usage", "process.thread.count", "process.unix.file_descriptor.count",
          "process.cpu.utilization"):
    assert r["process_metrics"].get(m, 0) > 0, f"no {m}: {r['process_metrics']}"
PY

# The same logs as segments (a rotating writer's names), to a second receiver.
mkdir -p split received2
for f in logs/*.ndjson; do python3 "$fixtures_dir/split_segments.py" --lines 300 split "$f" > /dev/null || fail "split failed"; done
n_split=$(ls split/*.ndjson | wc -l)
[ "$n_split" -gt "$(ls logs/*.ndjson | wc -l)" ] || fail "the split made no segments"
bg_start receiver2 "$PYTHON" "$fixtures_dir/otlp_receiver.py" received2
wait_file received2/port 10 || fail "second receiver did not start"
timeout 60 "$WEDJAT_CLI" ship --json --otlp "http://127.0.0.1:$(cat received2/port)" --until-idle 6 split > ship3.out 2>&1 \
    || fail "ship of the segments exited $?: $(cat ship3.out)"
ls received2/traces.*.json > /dev/null 2>&1 || fail "no OTLP/JSON traces received: $(ls received2)"
python3 "$fixtures_dir/check_ship.py" expected.jsonl received2 > check2.out || fail "segments: $(cat check2.out)"
[ "$(ls split/.ship/*.done | wc -l)" = "$n_split" ] || fail "not every segment is done: $(ls split/.ship)"
note "segments: $(cat check2.out)"
finish
