"""stall_client.py PORT CMD...: sends each CMD as one line to the stall fixture server on
127.0.0.1:PORT (a new connection each) and waits for its answer ("done")."""
import socket
import sys

port = int(sys.argv[1])
for cmd in sys.argv[2:]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(cmd.encode() + b"\n")
        answer = s.recv(100)
        if answer != b"done\n":
            sys.exit(f"stall_client: {cmd!r} got {answer!r}")
