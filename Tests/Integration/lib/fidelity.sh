# Sourced by the fidelity matrix tests (52-59), after common.sh: servers of every runtime that
# print "port N" once they listen, and curl batches with curl's own timers.

# fid_server NAME LOGDIR cmd...: starts cmd in the background, watched with logs in LOGDIR
# ("-": unwatched), output in NAME.out; waits (15 s) for its "port N" line. Sets $srv (its PID:
# stop it with fid_stop) and $port.
fid_server() {
    local name=$1 dir=$2 i
    shift 2
    if [ "$dir" = - ]; then bg_start "$name" "$@"; else wj_bg "$name" "$dir" "$@"; fi
    srv=$BG_PID
    for i in $(seq 1 300); do
        grep -q '^port ' "$name.out" 2>/dev/null && break
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.05
    done
    grep -q '^port ' "$name.out" || fail "$name did not start: $(tail -5 "$name.out")"
    port=$(awk '/^port /{ print $2; exit }' "$name.out")
}

# fid_stop PID: SIGTERM and wait (the fid_* servers print their counts and exit 0 on it).
fid_stop() {
    bg_stop "$1" TERM
}

# fid_curl LOGDIR OUT URL...: one watched curl process per URL (a connection each), logs in
# LOGDIR ("-": unwatched); OUT gets "PATH lport status connects connect pretransfer
# starttransfer total" per URL (fidelity.py's curl_lines reads it). Extra curl options in
# $FID_CURL_OPTS (an array).
FID_CURL_OPTS=()
FID_CURL_W='%{local_port} %{http_code} %{num_connects} %{time_connect} %{time_pretransfer} %{time_starttransfer} %{time_total}\n'
fid_curl() {
    local dir=$1 out=$2 url path line
    shift 2
    : > "$out"
    for url in "$@"; do
        path=/${url#*://*/}
        if [ "$dir" = - ]; then
            line=$(plain curl -s "${FID_CURL_OPTS[@]}" -o /dev/null -w "$FID_CURL_W" "$url")
        else
            line=$(wj "$dir" curl -s "${FID_CURL_OPTS[@]}" -o /dev/null -w "$FID_CURL_W" "$url")
        fi
        echo "$path $line" >> "$out"
    done
}

# fid_paths COUNT PATH...: COUNT paths cycling through the PATHs, one a line.
fid_paths() {
    local count=$1 i
    shift
    local paths=("$@")
    for i in $(seq 0 $((count - 1))); do echo "${paths[$((i % ${#paths[@]}))]}"; done
}
