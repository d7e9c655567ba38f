#!/usr/bin/env python3
"""Seed inputs for fuzz_http2 (scripts/fuzz.sh): small valid HTTP/2 conversations in the
target's input format. Byte 0: flags (bit 0 role, bit 1 the preface is added by the target),
byte 1: limits; then chunks: a control byte (bit 7 direction, bit 6 honour wantFrom, bits 0-5
length - 1) and up to 64 bytes. HPACK blocks use static-table indices and literals only."""
import os, struct, sys

def frame(t, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([t, flags]) + struct.pack(">I", stream) + payload

def lit(name, value):  # literal without indexing, new name
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value

def incr(name, value):  # literal with incremental indexing, new name
    return b"\x40" + bytes([len(name)]) + name + bytes([len(value)]) + value

GET = b"\x82\x86\x84" + incr(b":authority", b"127.0.0.1")      # GET http / authority
POST_GRPC = b"\x83\x86" + lit(b":path", b"/helloworld.Greeter/SayHello") + incr(b"content-type", b"application/grpc")
S200 = b"\x88"
S404 = b"\x8d"

def grpc(*sizes):
    return b"".join(b"\x00" + struct.pack(">I", n) + b"a" * n for n in sizes)

def conversation(client, server, order):
    out = bytearray([0x02, 0x20])
    c = s = 0
    for side, n in order:
        data, pos = (client, c) if side == "c" else (server, s)
        piece = data[pos:pos + n]
        while piece:
            chunk = piece[:64]
            piece = piece[64:]
            out.append((0 if side == "c" else 0x80) | 0x40 | (len(chunk) - 1))
            out += chunk
        if side == "c":
            c += n
        else:
            s += n
    return bytes(out)

settings_c = frame(4, 0, 0, struct.pack(">HI", 1, 8192) + struct.pack(">HI", 4, 65535))
settings_s = frame(4, 0, 0, struct.pack(">HI", 3, 100)) + frame(4, 1, 0)
seeds = {}
# curl-like GET, 404, padded DATA, CONTINUATION, RST, GOAWAY
client = settings_c + frame(4, 1, 0) + frame(1, 5, 1, GET) + frame(1, 1, 3, GET[:3]) + frame(9, 4, 3, GET[3:])
server = (settings_s + frame(1, 4, 1, S200) + frame(0, 0, 1, b"hello") + frame(0, 9, 1, b"\x03abc\x00\x00\x00")
          + frame(1, 0x24, 3, b"\x80\x00\x00\x01\x10" + S404) + frame(3, 0, 3, struct.pack(">I", 8))
          + frame(7, 0, 0, struct.pack(">II", 3, 0) + b"bye"))
seeds["get"] = conversation(client, server, [("c", len(client)), ("s", len(server))])
# gRPC with trailers and several messages in one frame
client = settings_c + frame(1, 4, 1, POST_GRPC) + frame(0, 1, 1, grpc(3, 0, 10))
server = (settings_s + frame(1, 4, 1, S200 + b"\xbe") + frame(0, 0, 1, grpc(2, 70)[:40]) + frame(0, 0, 1, grpc(2, 70)[40:])
          + frame(1, 5, 1, lit(b"grpc-status", b"5") + lit(b"grpc-message", b"nope")))
seeds["grpc"] = conversation(client, server, [("c", 30), ("s", 20), ("c", len(client)), ("s", len(server))])
# push promise
client = settings_c + frame(1, 5, 1, GET)
server = settings_s + frame(5, 4, 1, struct.pack(">I", 2) + b"\x82\x86" + lit(b":path", b"/s.css")) + frame(1, 5, 1, S200) + frame(1, 5, 2, S200)
seeds["push"] = conversation(client, server, [("c", len(client)), ("s", len(server))])
# the same request and response blocks again on later streams (a counted stream given a repeat
# gets what the first one did: H2BlockEffect), other blocks between them
A = b"\x82\x87\x84" + lit(b":authority", b"a.test")
B = b"\x82\x87\x84" + lit(b":authority", b"b.test") + lit(b"user-agent", b"x/1")
CONNECT = b"\x02\x07CONNECT" + b"\x01\x0atunnel:443"
TYPED = b"\x8d" + lit(b"content-type", b"text/html")
requests = [A, A, A, B, A, A, CONNECT, CONNECT, A, B, B]
responses = [S200, S200, S404, S404, S200, TYPED, S200, S200, TYPED, TYPED, S200]
client = settings_c + frame(4, 1, 0)
server = settings_s
order = [("c", len(client)), ("s", len(server))]
for k, (req, resp) in enumerate(zip(requests, responses)):
    c_frame, s_frame = frame(1, 5, 2 * k + 1, req), frame(1, 5, 2 * k + 1, resp)
    client += c_frame
    server += s_frame
    order += [("c", len(c_frame)), ("s", len(s_frame))]
seeds["repeats"] = conversation(client, server, order)
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], "seed_" + name), "wb") as f:
        f.write(data)
