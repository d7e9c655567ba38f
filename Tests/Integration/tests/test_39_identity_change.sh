# Processes that change identity keep logging (runtime core): a root process dropping to
# nobody after start, and nginx started as root in its stock configuration (its workers switch
# to nobody). Their logs exist and hold their connections. Needs root.
. "$WJ_LIB/common.sh"
[ "$(id -u)" = 0 ] || skip "needs root"
bg_start echo "$PYTHON" "$WJ_LIB/../fixtures/core_echo_server.py"
srv=$BG_PID
. "$WJ_LIB/delay_server.sh"
delay_server_port echo port
mkdir -p logs_id && chmod 700 logs_id
out=$(wj logs_id "$FIXTURES/core_identity" "$port") || fail "core_identity: $out"
[ "$out" = "uid 65534 exchanges 3" ] || fail "core_identity printed: $out"
pylogs logs_id <<'PY'
log = one(load_dir(sys.argv[1]), "log")
expect_eq(len(log.records("connection", role="client")), 3, "connections made after the drop")
expect(log.end is not None and log.end["exit_status"] == 0, f"process_end: {log.end}")
print("setuid: ok")
PY
[ $? = 0 ] || fail "setuid log"
bg_stop "$srv"

NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx not installed: stock nginx part skipped"; finish; }
port2=$(free_port)
mkdir -p ng/logs ng/www logs_ng && chmod 700 logs_ng
echo hello > ng/www/index.html
chmod -R a+rX ng/www
# The stock shape: no `user` directive (root defaults to nobody), master + 2 workers.
cat > ng/nginx.conf <<CONF
worker_processes 2;
pid $TEST_TMP/ng/nginx.pid;
error_log $TEST_TMP/ng/logs/error.log;
events { worker_connections 64; }
http {
    access_log $TEST_TMP/ng/logs/access.log;
    server { listen 127.0.0.1:$port2; root $TEST_TMP/ng/www; }
}
CONF
WEDJAT_DIR=$TEST_TMP/logs_ng LD_PRELOAD=$WEDJAT_PRELOAD "$NGINX" -p "$TEST_TMP/ng" -c "$TEST_TMP/ng/nginx.conf" || fail "nginx did not start"
for _ in $(seq 50); do [ -s ng/nginx.pid ] && break; sleep 0.1; done
master=$(cat ng/nginx.pid)
for i in $(seq 20); do curl -s -o /dev/null "http://127.0.0.1:$port2/" || fail "request $i"; done
sleep 0.5
kill -QUIT "$master"
for _ in $(seq 100); do kill -0 "$master" 2>/dev/null || break; sleep 0.05; done
kill -0 "$master" 2>/dev/null && { kill -KILL "$master"; fail "nginx master did not stop"; }
ps -o user= -C nginx >/dev/null 2>&1 || true
pylogs logs_ng <<'PY'
logs = by_exe(load_dir(sys.argv[1]), "nginx")
workers = [l for l in logs if l.start.get("parent_log")]
expect(len(workers) >= 2, f"worker logs: {len(workers)} of {len(logs)} nginx logs")
served = sum(len(l.records("connection", role="server")) for l in workers)
http = sum(len(l.records("http")) for l in workers)
expect_eq(served, 20, "connections the workers served")
expect_eq(http, 20, "http records of the workers")
print(f"nginx as root: {len(workers)} worker logs, {served} connections")
PY
[ $? = 0 ] || fail "nginx logs"
finish
