# The CPU model (process_start.cpu_model) costs three CPUIDs, each trapping to the hypervisor
# in a VM: an image that did not get it from its parent (fork) or its previous image (the
# exec hint) reads it from the per-user tmpfs directory of the hints, where the first image
# that asked the CPU left it. A file there with anything but one line of printable ASCII is
# not used: the CPU is asked again and the file written anew.
. "$WJ_LIB/common.sh"

d=/dev/shm/wedjat-$(id -u)
[ -d /dev/shm ] || skip "no /dev/shm"
saved=
[ -f "$d/cpu" ] && saved=$(cat "$d/cpu")
restore() { if [ -n "$saved" ]; then printf '%s' "$saved" > "$d/cpu"; else rm -f "$d/cpu"; fi; }
trap restore EXIT

model_of() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["cpu_model"])' "$1"; }

rm -f "$d/cpu"
wj logs1 /bin/true || fail "watched /bin/true failed"
asked=$(model_of logs1/true.*.ndjson)
[ -n "$asked" ] || fail "no cpu_model in process_start"
[ -f "$d/cpu" ] || fail "$d/cpu not written by the image that asked the CPU"
[ "$(cat "$d/cpu")" = "$asked" ] || fail "$d/cpu holds '$(cat "$d/cpu")', the log '$asked'"

printf 'Fake CPU 9000' > "$d/cpu"
wj logs2 /bin/true || fail "watched /bin/true failed"
got=$(model_of logs2/true.*.ndjson)
[ "$got" = "Fake CPU 9000" ] || fail "cpu_model '$got': the cache was not read"

printf 'bad\001model' > "$d/cpu"
wj logs3 /bin/true || fail "watched /bin/true failed"
got=$(model_of logs3/true.*.ndjson)
[ "$got" = "$asked" ] || fail "cpu_model '$got' from a cache with a control byte (want '$asked')"
[ "$(cat "$d/cpu")" = "$asked" ] || fail "the bad cache was not replaced: '$(cat "$d/cpu")'"
echo ok
