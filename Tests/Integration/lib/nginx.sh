# Sourced by the tests that watch nginx serving one static file (after common.sh).
#   nginx_start FILE_BYTES WORKER_CONNECTIONS
# Writes www/f.bin (random, FILE_BYTES) and a one-worker, no-keep-alive nginx.conf in
# $TEST_TMP, starts nginx watched (logs in ./logs) on a free loopback port and waits until it
# listens. Sets $port and $master (the master's PID, stop it with bg_stop).
nginx_start() {
    local bytes=$1 conns=$2 user_line="" i
    command -v nginx >/dev/null || skip "nginx is not installed"
    port=$(free_port)
    mkdir -p www tmp
    head -c "$bytes" /dev/urandom > www/f.bin
    [ "$(id -u)" = 0 ] && user_line="user root root;"   # workers must be able to write the log dir
    cat > nginx.conf <<CONF
$user_line
worker_processes 1;
daemon off;
master_process on;
pid $TEST_TMP/nginx.pid;
error_log $TEST_TMP/error.log warn;
events { worker_connections $conns; }
http {
    access_log off;
    client_body_temp_path $TEST_TMP/tmp/body;
    proxy_temp_path $TEST_TMP/tmp/proxy;
    fastcgi_temp_path $TEST_TMP/tmp/fastcgi;
    uwsgi_temp_path $TEST_TMP/tmp/uwsgi;
    scgi_temp_path $TEST_TMP/tmp/scgi;
    keepalive_timeout 0;
    sendfile on;
    server {
        listen 127.0.0.1:$port;
        root $TEST_TMP/www;
    }
}
CONF
    wj_bg nginx logs nginx -p "$TEST_TMP" -e "$TEST_TMP/error.log" -c "$TEST_TMP/nginx.conf"
    master=$BG_PID
    # nginx writes its pid file after it has opened the listening socket: no probe connection.
    for i in $(seq 1 200); do
        [ -s nginx.pid ] && break
        kill -0 "$master" 2>/dev/null || fail "nginx exited: $(cat nginx.out error.log 2>/dev/null | tail -5)"
        sleep 0.05
    done
    [ -s nginx.pid ] || fail "nginx did not start in 10 s"
    [ "$(cat nginx.pid)" = "$master" ] || fail "nginx.pid $(cat nginx.pid) is not the process started ($master)"
}
