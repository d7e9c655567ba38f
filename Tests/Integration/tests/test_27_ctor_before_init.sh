# Hooks called before wedjat's own constructor ran: a library the program links runs its
# constructor (which connects) before any preloaded library's constructor. The connection
# must be recorded, the program unaffected. Also with the library preloaded before and after
# libwedjat.so.
. "$WJ_LIB/common.sh"

src="$WJ_LIB/../fixtures/lib/ctor_lib.c"
gcc -O2 -shared -fPIC -o libctor.so "$src" || fail "cannot build libctor.so"
cat > main.c <<'C'
#include <stdio.h>
extern int ctor_result;
int main(void) { printf("ctor %d\n", ctor_result); return ctor_result == 5 ? 0 : 1; }
C
gcc -O2 -o linked main.c -L. -lctor -Wl,-rpath,"$PWD" || fail "cannot build the program"

cat > server.py <<'PY'
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open("port", "w").write(str(s.getsockname()[1]))
for _ in range(int(sys.argv[1])):
    c, _ = s.accept()
    while c.recv(100):
        pass
    c.close()
PY
bg_start server "$PYTHON" server.py 3
wait_file port || fail "server did not start"
port=$(cat port)

out=$(CTOR_PORT=$port wj logs_linked ./linked) || fail "linked program failed: $out"
[ "$out" = "ctor 5" ] || fail "linked program printed '$out'"
out=$(CTOR_PORT=$port timeout 20 env WEDJAT_DIR="$PWD/logs_before" LD_PRELOAD="$PWD/libctor.so $WEDJAT_PRELOAD" /bin/true) \
    || fail "preloaded before: exit $?"
out=$(CTOR_PORT=$port timeout 20 env WEDJAT_DIR="$PWD/logs_after" LD_PRELOAD="$WEDJAT_PRELOAD $PWD/libctor.so" /bin/true) \
    || fail "preloaded after: exit $?"

pylogs logs_linked logs_before logs_after "$port" <<'PY'
port = int(sys.argv[4])
for d in sys.argv[1:4]:
    logs = load_dir(d)
    log = one(logs, f"{d}: one log")
    c = one(log.records("connection"), f"{d}: the constructor's connection")
    expect_eq(c["peer"], f"127.0.0.1:{port}", f"{d}: peer")
    expect_eq(c["bytes_out"], 5, f"{d}: bytes_out")
    expect(log.end is not None and log.end["exit_status"] == 0, f"{d}: process_end")
print("ok")
PY
