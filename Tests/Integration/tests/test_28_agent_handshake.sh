# libwedjat-agent.so accepts only a libwedjat.so whose shared structures have its own sizes
# (fixture agent_handshake: every size off by 8 is refused, the right ones accepted). Mixing
# libraries of two builds otherwise let the agent read fields at the wrong offsets.
. "$WJ_LIB/common.sh"

out=$("$FIXTURES/agent_handshake" "$WEDJAT_LIBDIR/libwedjat-agent.so")
[ "$out" = "refused 7 of 7; right sizes: accepted" ] || fail "handshake: '$out'"
echo ok
