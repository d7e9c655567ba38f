# `wedjat export --otlp URL` and `--otlp-json FILE`: a watched fixtures/delay_server.py (HTTP
# server spans) and watched curls (client spans, a 404, a lookup by name, 600 more exchanges
# on one connection: 1,200 spans and more, so two requests of at most 1,000; 300 more past a
# record budget of 1 a second, mostly only counted in http_summary records), exported to a
# local receiver (fixtures/otlp_receiver.py: OTLP/HTTP with JSON, decoded by the
# opentelemetry-proto package) and to a file; fixtures/check_otlp.py decodes both the same way
# and compares spans and histograms with the logs. The client histogram counts every one of
# the 904 requests curl made, recorded or summarized. Also: ids are the same on a second
# export, a collector's 503 and a refused connection are errors (exit status 1) that say so.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v curl >/dev/null || skip "curl is not installed"
python3 -c 'import opentelemetry.proto' 2>/dev/null || skip "python3 opentelemetry-proto is missing (scripts/deps.sh)"
fixtures_dir=$WJ_LIB/../fixtures

delay_server_watched logs
host=$(loopback_name)
base=http://$host:$port
wj logs curl -s -o /dev/null -o /dev/null -o /dev/null "$base/delay/30" "$base/bytes/2000" "$base/nothere" \
    || fail "curl failed"
wj logs curl -s -o /dev/null "http://127.0.0.1:$port/delay/120" || fail "curl failed"
wj logs curl -s "http://127.0.0.1:$port/bytes/10?n=[1-600]" > /dev/null || fail "curl (600 requests) failed"
WEDJAT_HTTP_RECORDS=1 wj logs curl -s "http://127.0.0.1:$port/bytes/10?m=[1-300]" > /dev/null || fail "curl (300 requests) failed"
bg_stop "$srv"

mkdir -p received
bg_start receiver "$PYTHON" "$fixtures_dir/otlp_receiver.py" received
recv=$BG_PID
wait_file received/port || fail "otlp_receiver did not start: $(cat receiver.out)"
rport=$(cat received/port)
cli() { timeout -k 5 60 "$WEDJAT_CLI" "$@"; }

cli export --otlp "http://127.0.0.1:$rport" --otlp-json out.jsonl logs > export.out 2> export.err \
    || fail "wedjat export --otlp exited $?: $(cat export.err)"
cat export.err
grep -qE "sent [0-9]+ spans in 2 requests to http://127.0.0.1:$rport/v1/traces: HTTP 200 ×2" export.err || fail "no 2 x HTTP 200 for the traces"
grep -qE "sent [0-9]+ metric data points to http://127.0.0.1:$rport/v1/metrics: HTTP 200" export.err || fail "no HTTP 200 for the metrics"
[ ! -e received/errors.txt ] || fail "the receiver could not decode: $(cat received/errors.txt)"
[ "$(ls received | tr '\n' ' ')" = "metrics.3.json port traces.1.json traces.2.json " ] || fail "the receiver got: $(ls received)"
python3 "$fixtures_dir/check_otlp.py" logs received/traces.*.json received/metrics.3.json || fail "check_otlp.py (sent)"
python3 "$fixtures_dir/check_otlp.py" logs out.jsonl || fail "check_otlp.py (file)"
grep -qE "[0-9]+ HTTP exchanges were only counted in http_summary records .*: they have no HAR entry, trace slice or span; their durations are in the OTLP duration histograms" export.err \
    || fail "no warning that summarized exchanges are in the histograms"
client_count=$(python3 -c '
import json, sys
doc = [json.loads(l) for l in open(sys.argv[1]) if "resourceMetrics" in l][0]
print(sum(int(p["count"]) for rm in doc["resourceMetrics"] for sm in rm["scopeMetrics"] for m in sm["metrics"]
          if m["name"] == "http.client.request.duration" for p in m["histogram"]["dataPoints"]))' out.jsonl)
[ "$client_count" = 904 ] || fail "http.client.request.duration counts $client_count exchanges, curl made 904"
[ "$(cat received/traces.1.json; echo; cat received/traces.2.json)" = "$(head -2 out.jsonl)" ] || fail "the traces sent differ from the file's"

# Deterministic ids: a second export is byte for byte the first.
cli export --otlp-json again.jsonl logs 2> /dev/null || fail "second export failed"
cmp -s out.jsonl again.jsonl || fail "a second export differs (ids not stable?)"

# A collector that answers 503: an error with the status.
cli export --otlp "http://127.0.0.1:$rport/fail" logs > /dev/null 2> fail503.err
rc=$?
[ $rc = 1 ] || fail "export to a 503 collector exited $rc, want 1"
grep -q "HTTP 503" fail503.err || fail "no HTTP 503 in the error: $(cat fail503.err)"
bg_stop "$recv"

# Nothing listening: a clear error, exit status 1, within the timeout.
refused=$(free_port)
t0=$(date +%s)
cli export --otlp "http://127.0.0.1:$refused" --otlp-timeout 5 logs > /dev/null 2> refused.err
rc=$?
[ $rc = 1 ] || fail "export to a closed port exited $rc, want 1"
grep -q "connection refused" refused.err || fail "no 'connection refused' in: $(cat refused.err)"
[ $(( $(date +%s) - t0 )) -le 15 ] || fail "the refused export took $(( $(date +%s) - t0 )) s"
finish
