# `wedjat export --har`: watched curls against fixtures/delay_server.py (HTTP and HTTPS,
# unwatched), one connection with three exchanges per scheme (the first pays DNS, connect and
# TLS, the others reuse it), a name resolved by getaddrinfo (this host's name when it resolves
# to 127.0.0.1). fixtures/check_har.py then checks the HAR against the HAR 1.2 structure
# (JSON Schema) and rules, against the logs, and against curl's own -w timers and sizes.
# Also: a bad line gives a warning with file:line and the export still happens; nothing to
# read is exit status 2; an output that cannot be written is exit status 1.
. "$WJ_LIB/common.sh"
. "$WJ_LIB/delay_server.sh"
[ -n "${WEDJAT_CLI:-}" ] || skip "no CLI_PATH given to run.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v openssl >/dev/null || skip "openssl is not installed"
python3 -c 'import jsonschema' 2>/dev/null || skip "python3 jsonschema is missing (scripts/deps.sh)"
fixtures_dir=$WJ_LIB/../fixtures

delay_servers_http_https

# A name curl resolves with getaddrinfo (it answers "localhost" itself).
host=$(loopback_name)
[ "$host" != 127.0.0.1 ] || note "$(hostname) does not resolve to 127.0.0.1: no DNS phase in this run"

W='%{url_effective} %{num_connects} %{http_code} %{time_namelookup} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total} %{size_header} %{size_download} %{size_request} %{http_version}\n'
: > curl_rows.txt
for scheme in http https; do
    port=$http_port
    [ "$scheme" = https ] && port=$https_port
    base=$scheme://$host:$port
    wj logs curl -s -k -o /dev/null -o /dev/null -o /dev/null -w "$W" \
        "$base/delay/300" "$base/delay/20" "$base/bytes/100000" >> curl_rows.txt \
        || fail "curl $base failed: $(cat curl_rows.txt)"
done
bg_stop "$http_pid"
bg_stop "$https_pid"
[ "$(wc -l < curl_rows.txt)" = 6 ] || fail "curl printed $(wc -l < curl_rows.txt) rows, want 6: $(cat curl_rows.txt)"

cli() { timeout -k 5 60 "$WEDJAT_CLI" "$@"; }
cli export --har out.har logs > export.out 2> export.err || fail "wedjat export --har exited $?: $(cat export.err)"
[ ! -s export.out ] || fail "wedjat export printed on stdout: $(head -3 export.out)"
grep -q "wrote 6 HAR entries to out.har" export.err || fail "no 'wrote 6 HAR entries' on stderr: $(cat export.err)"
python3 "$fixtures_dir/check_har.py" out.har logs curl_rows.txt || fail "check_har.py"
python3 - out.har <<'PY' || fail "the first exchanges do not carry their connection's set-up"
import json, sys
entries = json.load(open(sys.argv[1]))["log"]["entries"]
first = [e for e in entries if "/delay/300" in e["request"]["url"]]
assert len(first) == 2, first
for e in first:
    t = e["timings"]
    assert t["connect"] > 0 and t["wait"] >= 295, t
    secure = e["request"]["url"].startswith("https:")
    assert (t["ssl"] > 0) == secure, t
print("# /delay/300:", [(e["request"]["url"].split(":")[0], e["timings"]) for e in first])
PY

# A damaged line: a warning naming the file and line, the rest exported.
mkdir -p bad
cp logs/*.ndjson bad/
victim=$(ls bad/*.ndjson | head -1)
echo '{"type":"http", this is not JSON' >> "$victim"
cli export --har bad.har bad > /dev/null 2> bad.err || fail "export with a bad line exited $?: $(cat bad.err)"
lines=$(wc -l < "$victim")
grep -qF "$victim:$lines: " bad.err || fail "no warning with $victim:$lines on stderr: $(cat bad.err)"
cmp -s <(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["log"]["entries"]))' bad.har) <(echo 6) \
    || fail "the export with a bad line lost entries"

# Nothing to read: exit 2, and why.
mkdir -p empty
cli export --har e.har empty > /dev/null 2> empty.err
rc=$?
[ $rc = 2 ] || fail "export of an empty directory exited $rc, want 2"
grep -q "no wedjat logs" empty.err || fail "no reason for the empty export: $(cat empty.err)"
# An output that cannot be written: exit 1, and which.
cli export --har no/such/dir/x.har logs > /dev/null 2> nowrite.err
rc=$?
[ $rc = 1 ] || fail "export to an unwritable path exited $rc, want 1"
grep -q "cannot write no/such/dir/x.har" nowrite.err || fail "no reason for the failed write: $(cat nowrite.err)"
# No stall stack to fold: no empty file (flamegraph.pl fails on one), exit 1, and why.
cli export --folded stalls.folded logs > /dev/null 2> folded.err
rc=$?
[ $rc = 1 ] || fail "export --folded without stalls exited $rc, want 1"
[ ! -e stalls.folded ] || fail "export --folded without stalls wrote a file"
grep -q "no stall stacks to fold: no stalls were recorded" folded.err || fail "no reason for the empty --folded: $(cat folded.err)"
finish
