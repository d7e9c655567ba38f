# Fidelity matrix, responses written by a forked child on the inherited socket (issue 15), and
# git over HTTP, every program watched:
#   a. fixtures/fid_cgi_server fork: the parent reads each request and forks; the child writes
#      the response and exits; the parent closes its copy. 10 curl requests;
#   b. the same with the child exec'ing a shell script on the socket (a CGI program): the
#      exec'd image goes on with the connection (the exec hint carries it);
#   c. git clone over the dumb HTTP protocol: static files from the same python server;
#   d. git clone over the smart protocol: git http-backend run as CGI by python's
#      CGIHTTPRequestHandler (fixtures/fid_py_cgi.py: it forks; the parent writes the status
#      line, the exec'd http-backend the rest of the response).
# In d the parent wrote the status line before forking: an exec'd image cannot go on with a
# response begun by another (README, Limits), so the parent's exchanges are checked there: all
# there, each handed off (no status, not an error), none counted as a network error.
# The python servers die of SIGTERM (no handler: no process_end), so the test waits until their
# logs hold an exchange per access-log line (5 s at most) before stopping them, as README's
# "Killed by a signal" says (what the agent had not flushed yet would be lost).
# For each, against the programs' own counts (curl; git's GIT_TRACE_CURL; fid_cgi_server's
# count; http.server's access log): the server side's exchanges, over all its processes'
# logs (parent, forked and exec'd children), == the server's count with its statuses, none cut
# short; the client's exchanges == the client's count with its statuses; and `wedjat report`
# of the server's logs has those requests with no network error (the parent's copy of a
# connection handed to a child is not an error).
. "$WJ_LIB/common.sh"
. "$WJ_LIB/fidelity.sh"
command -v curl >/dev/null || skip "curl is not installed"
command -v git >/dev/null || skip "git is not installed"
[ -n "$WEDJAT_CLI" ] || skip "needs the CLI"
F=$WJ_LIB/../fixtures
N=10

# a, b: the forking server
for mode in fork exec; do
    fid_server "cgi-$mode" "logs/$mode/server" "$FIXTURES/fid_cgi_server" "$mode" "$N"
    mapfile -t paths < <(fid_paths "$N" /a /b/c)
    fid_curl "logs/$mode/client" "cli-$mode.txt" "${paths[@]/#/http://127.0.0.1:$port}"
    for i in $(seq 1 100); do kill -0 "$srv" 2>/dev/null || break; sleep 0.05; done
    bg_stop "$srv"
done

# wait_flushed LOGDIR ACCESSLOG: until the server's logs hold as many http records as its
# access log has answered requests (5 s at most).
wait_flushed() {
    local want i
    want=$(grep -c '" [0-9][0-9][0-9] ' "$2")
    for i in $(seq 1 100); do
        [ "$(cat "$1"/*.ndjson 2>/dev/null | grep -c '"type":"http"')" -ge "$want" ] && return 0
        sleep 0.05
    done
}

# c, d: a repository with three commits, its objects loose (the dumb protocol fetches each)
git init -q src && for i in 1 2 3; do
    echo "line $i" >> src/f.txt && git -C src add f.txt && git -C src -c user.name=t -c user.email=t@t commit -q -m "c$i"
done || fail "making the repository failed"
mkdir -p www/cgi-bin
git clone -q --bare src www/repo.git && git -C www/repo.git update-server-info || fail "bare repository failed"
printf '#!/bin/sh\nexec git http-backend\n' > www/cgi-bin/git && chmod +x www/cgi-bin/git
export GIT_PROJECT_ROOT=$TEST_TMP/www GIT_HTTP_EXPORT_ALL=1
# The servers' access logs (stderr) are their own counts of what they answered.
fid_server dumb logs/dumb/server "$PYTHON" "$F/fid_py_cgi.py" "$TEST_TMP/www"
GIT_TRACE_CURL=$TEST_TMP/trace-dumb.txt GIT_TRACE_CURL_NO_DATA=1 wj logs/dumb/client \
    git clone -q "http://127.0.0.1:$port/repo.git" clone-dumb > git-dumb.out 2>&1 || soft_fail "dumb clone failed: $(tail -3 git-dumb.out)"
wait_flushed logs/dumb/server dumb.out
bg_stop "$srv"
fid_server smart logs/smart/server "$PYTHON" "$F/fid_py_cgi.py" "$TEST_TMP/www"
GIT_TRACE_CURL=$TEST_TMP/trace-smart.txt GIT_TRACE_CURL_NO_DATA=1 wj logs/smart/client \
    git clone -q "http://127.0.0.1:$port/cgi-bin/git/repo.git" clone-smart > git-smart.out 2>&1 || soft_fail "smart clone failed: $(tail -3 git-smart.out)"
wait_flushed logs/smart/server smart.out
bg_stop "$srv"
for c in clone-dumb clone-smart; do
    [ "$(git -C "$c" log --oneline 2>/dev/null | wc -l)" = 3 ] || soft_fail "$c: not the three commits"
done
for s in fork exec dumb smart; do
    "$WEDJAT_CLI" report --format json "logs/$s/server" > "report-$s.json" 2> "report-$s.err" || soft_fail "report of $s: $(tail -3 "report-$s.err")"
done

pylogs "$N" <<'PY'
import collections, re
from fidelity import *
soft_mode()
n = int(sys.argv[1])

def access_log(name):
    """http.server's own log: '"GET /path HTTP/1.1" 200 -' per answered request."""
    return collections.Counter(m.group(1) for m in re.finditer(r'" (\d{3}) ', open(f"{name}.out").read()))

def git_trace(name):
    """GIT_TRACE_CURL: the requests git sent and the final statuses it received."""
    text = open(name).read()
    sent = re.findall(r"=> Send header: (GET|POST) ", text)
    got = [s for s in re.findall(r"<= Recv header: HTTP/[\d.]+ (\d{3})", text) if not s.startswith("1")]
    return len(sent), collections.Counter(got)

def check_exec_handed_off(what, logs, want):
    """The exec'd program's half is not recorded (not carried over exec): the parent's
    exchanges, sum(want) of them, each handed off with no status and no other error."""
    http, summed = exchanges(logs, "server")
    expect_eq(len(http) + sum(summed.values()), sum(want.values()), f"{what}: server exchanges (http records + http_summary counts)")
    outcome = collections.Counter((h.get("status"), h.get("error")) for h in http)
    expect_eq(dict(outcome), {(None, "handed_off"): len(http)}, f"{what}: server exchanges (status, error)")

def report_ok(what, s, want):
    try:
        h = json.load(open(f"report-{s}.json"))["headline"]
        h.setdefault("network_error_rate", 0)   # absent when there was no request
    except Exception as e:
        return expect(False, f"{what}: no report: {e}")
    expect_eq((h["http_requests"], h["network_error_rate"]), (sum(want.values()), 0),
              f"{what}: report headline (http_requests, network_error_rate)")

for mode in ("fork", "exec"):
    what = f"{mode} CGI server"
    cl = curl_lines(f"cli-{mode}.txt")
    counted = server_counts(f"cgi-{mode}.out")
    want = collections.Counter(str(r["status"]) for r in cl)
    expect_eq(len(cl), n, f"{what}: curl requests")
    if expect(counted is not None, f"{what}: the server printed its count"):
        expect_eq(collections.Counter(counted["statuses"]), want, f"{what}: server's and curl's counts")
    check_exchanges(f"{what} <- curl", load_dir_execs(f"logs/{mode}/server"), "server", want)
    check_exchanges(f"curl -> {what}", load_dir_execs(f"logs/{mode}/client"), "client", want)
    report_ok(what, mode, want)

for s in ("dumb", "smart"):
    what = f"git clone over {s} HTTP"
    served = access_log(s)
    sent, got = git_trace(f"trace-{s}.txt")
    expect(sent > 0, f"{what}: git traced no request")
    expect_eq((sent, got), (sum(served.values()), served), f"{what}: git's trace (requests, statuses) vs the server's access log")
    if s == "dumb":
        check_exchanges(f"{what}: server", load_dir_execs(f"logs/{s}/server"), "server", served)
    else:
        check_exec_handed_off(f"{what}: server", load_dir_execs(f"logs/{s}/server"), served)
    check_exchanges(f"{what}: git", load_dir_execs(f"logs/{s}/client"), "client", got)
    report_ok(f"{what}: server", s, served)
PY
