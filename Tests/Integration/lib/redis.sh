# Sourced by the tests that watch redis-server (after common.sh).
#   redis_start LOGDIR BIND_ADDRESSES
# Starts redis-server watched (logs in LOGDIR) on a free port of the given loopback addresses
# ("127.0.0.1" or "127.0.0.1 ::1"), without persistence, its own log in $TEST_TMP/redis.log,
# and waits (5 s) until it accepts connections. Sets $port and $srv (its PID: stop it with
# bg_stop).
redis_start() {
    local logs=$1 bind=$2 i
    command -v redis-server >/dev/null || skip "redis-server is not installed"
    port=$(free_port)
    wj_bg redis "$logs" redis-server --port "$port" --bind "$bind" --save '' --appendonly no \
        --dir "$TEST_TMP" --logfile "$TEST_TMP/redis.log" --daemonize no
    srv=$BG_PID
    for i in $(seq 1 100); do
        grep -q 'Ready to accept connections' redis.log 2>/dev/null && break
        kill -0 "$srv" 2>/dev/null || fail "redis exited: $(tail -5 redis.log)"
        sleep 0.05
    done
    grep -q 'Ready to accept connections' redis.log || fail "redis did not start"
}
