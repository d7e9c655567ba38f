# Hooks inside a signal handler (runtime core): a handler doing blocking connect/send/recv
# while the main thread is in malloc, on the thread's stack and on an 8 KiB alternate stack,
# and with the handler's I/O as the process's first network activity. Every run ends, with
# the same output as without wedjat, and the handler's connections are recorded.
. "$WJ_LIB/common.sh"

bg_start echo "$PYTHON" "$WJ_LIB/../fixtures/core_echo_server.py"
srv=$BG_PID
. "$WJ_LIB/delay_server.sh"
delay_server_port echo port

runs=${CORE_HANDLER_RUNS:-30}
for mode in stack altstack first; do
    want=$(plain "$FIXTURES/core_handler_io" "$mode" 20 "$port") || fail "$mode without wedjat failed: $want"
    for i in $(seq "$runs"); do
        got=$(WJ_TIMEOUT=20 wj "logs_${mode}_$i" "$FIXTURES/core_handler_io" "$mode" 20 "$port"); rc=$?
        [ $rc = 124 ] && fail "$mode run $i hung (killed after 20 s)"
        [ $rc = 0 ] || fail "$mode run $i exited $rc: $got"
        [ "$got" = "$want" ] || fail "$mode run $i printed '$got', without wedjat '$want'"
    done
    pylogs "logs_${mode}_1" "$mode" <<'PY'
log = one(load_dir(sys.argv[1]), "log")
mode = sys.argv[2]
clients = log.records("connection", role="client")
want = 20 if mode == "first" else 21
expect_eq(len(clients), want, f"{mode}: client connections recorded")
expect(all(c["bytes_out"] == 5 and c["bytes_in"] == 5 for c in clients), f"{mode}: bytes of every exchange")
expect(log.end is not None, f"{mode}: process_end")
print(f"{mode}: {len(clients)} connections recorded")
PY
    [ $? = 0 ] || fail "$mode: log check"
done
bg_stop "$srv"
echo "ok: $runs runs of each mode"
