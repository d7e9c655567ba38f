# Sourced by the tests that watch nginx serving one static file (after common.sh).
#   nginx_start FILE_BYTES WORKER_CONNECTIONS [WORKERS [ERROR_LOG_LEVEL [SERVER_SETTINGS]]]
# Writes www/f.bin (random, FILE_BYTES) and an nginx.conf in $TEST_TMP: WORKERS worker
# processes (default 1), error.log at ERROR_LOG_LEVEL (default warn), SERVER_SETTINGS in the
# server block (default "keepalive_timeout 0;": one request per connection). Starts nginx
# watched (logs in ./logs) on a free loopback port and waits until it listens. Sets $port and
# $master (the master's PID: stop it with nginx_stop, or bg_stop).
nginx_start() {
    local bytes=$1 conns=$2 workers=${3:-1} level=${4:-warn} server=${5:-"keepalive_timeout 0;"} user_line="" i
    command -v nginx >/dev/null || skip "nginx is not installed"
    port=$(free_port)
    mkdir -p www tmp
    head -c "$bytes" /dev/urandom > www/f.bin
    [ "$(id -u)" = 0 ] && user_line="user root root;"   # workers must be able to write the log dir
    cat > nginx.conf <<CONF
$user_line
worker_processes $workers;
daemon off;
master_process on;
pid $TEST_TMP/nginx.pid;
error_log $TEST_TMP/error.log $level;
events { worker_connections $conns; }
http {
    access_log off;
    client_body_temp_path $TEST_TMP/tmp/body;
    proxy_temp_path $TEST_TMP/tmp/proxy;
    fastcgi_temp_path $TEST_TMP/tmp/fastcgi;
    uwsgi_temp_path $TEST_TMP/tmp/uwsgi;
    scgi_temp_path $TEST_TMP/tmp/scgi;
    sendfile on;
    server {
        listen 127.0.0.1:$port;
        root $TEST_TMP/www;
        $server
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

# nginx_curl_requests COUNT SECS: COUNT requests for f.bin by one plain (unwatched) curl, one
# connection each (Connection: close, no keep-alive), within SECS. curl.txt gets a line per
# request: num_connects size_request size_header size_download http_code. Fails unless there
# are COUNT lines, each a connection of its own answered with 200.
nginx_curl_requests() {
    local count=$1 secs=$2
    timeout "$secs" curl -s -H 'Connection: close' -o /dev/null \
        -w '%{num_connects} %{size_request} %{size_header} %{size_download} %{http_code}\n' \
        "http://127.0.0.1:$port/f.bin?[1-$count]" > curl.txt || fail "curl failed"
    [ "$(wc -l < curl.txt)" = "$count" ] || fail "curl made $(wc -l < curl.txt) requests"
    awk '$1 != 1 || $5 != 200 { bad = 1 } END { exit bad }' curl.txt \
        || fail "not $count separate connections with status 200: $(sort curl.txt | uniq -c | head -3)"
}

# nginx_stop: graceful stop (SIGQUIT: the workers finish and exit normally); a clean shutdown
# removes the pid file.
nginx_stop() {
    bg_stop "$master" QUIT
    [ -s nginx.pid ] && fail "nginx did not remove its pid file (not a clean shutdown)"
    return 0
}
