# Sourced by the tests that run fixtures/delay_server.py (after common.sh). The server listens
# on a free port of 127.0.0.1 and prints "port N" once it does.
DELAY_SERVER=$WJ_LIB/../fixtures/delay_server.py

# delay_server_port NAME VAR: waits (5 s) for the "port N" line of the delay_server started
# as `bg_start NAME ...` or `wj_bg NAME ...`, and sets VAR to N. (It sets a variable rather
# than printing N: fail must end the test, not a $(...) subshell.)
delay_server_port() {
    local out=$TEST_TMP/$1.out i
    for i in $(seq 1 100); do
        grep -q '^port ' "$out" 2>/dev/null && break
        sleep 0.05
    done
    grep -q '^port ' "$out" || fail "delay_server did not start: $(cat "$out")"
    printf -v "$2" '%s' "$(awk '/^port /{ print $2; exit }' "$out")"
}

# delay_server_watched LOGDIR [SETTING=VALUE...]: a delay_server under the preload (logs in
# LOGDIR, any more wedjat settings in its environment), output in server.out; waits for its
# port. Sets $srv (its PID: stop it with bg_stop) and $port.
delay_server_watched() {
    local dir=$1
    shift
    bg_start server env WEDJAT_DIR="$dir" "$@" LD_PRELOAD="$WEDJAT_PRELOAD" "$PYTHON" "$DELAY_SERVER"
    srv=$BG_PID
    delay_server_port server port
}

# delay_servers_http_https: two delay_servers, unwatched (only the clients' logs end up in the
# log directories): plain HTTP, and HTTPS with a new self-signed certificate for localhost
# (cert.pem, key.pem). Sets $http_pid, $http_port, $https_pid, $https_port.
delay_servers_http_https() {
    [ -f "$DELAY_SERVER" ] || fail "no $DELAY_SERVER"
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
        -keyout key.pem -out cert.pem >openssl.out 2>&1 || fail "openssl req failed: $(tail -3 openssl.out)"
    bg_start http "$PYTHON" "$DELAY_SERVER"
    http_pid=$BG_PID
    bg_start https "$PYTHON" "$DELAY_SERVER" --tls cert.pem key.pem
    https_pid=$BG_PID
    delay_server_port http http_port
    delay_server_port https https_port
}

# loopback_name: prints this host's name when it resolves to 127.0.0.1, else 127.0.0.1. curl
# answers "localhost" itself; this name it looks up with getaddrinfo, so the exchange has a
# DNS phase (where the machine's resolver allows one).
loopback_name() {
    local name
    name=$(hostname)
    if [ "$(getent ahostsv4 "$name" 2>/dev/null | awk 'NR == 1 { print $1 }')" = 127.0.0.1 ]; then
        echo "$name"
    else
        echo 127.0.0.1
    fi
}
