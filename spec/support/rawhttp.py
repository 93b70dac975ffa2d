#!/usr/bin/env python3
"""A scripted plain-HTTP server for the kube client's own framing
(drivers/kube/kc_raw.c): it answers each request with the next scripted
answer, byte for byte, and records what it received.

    rawhttp.py --dir D

D/script.json (read at each request) is a list of answers, taken in order:
    {"send": "<bytes as latin-1 text>", "pieces": N, "close": bool, "drop": bool}
  send    the raw answer (status line, headers, body), sent as is;
  pieces  send it in N pieces with a short pause between (default 1);
  close   close the connection after sending;
  drop    close the connection without answering (send is ignored).
An answer with neither (or the script used up) is a 200 with {"kind":"Status"}.

D/requests.jsonl gets one line per request: its connection number, method,
target, headers (a list of [name, value]) and body.  D/port is written once
the server listens.
"""
import argparse
import json
import os
import socket
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
a = ap.parse_args()
lock = threading.Lock()
state = {"next": 0, "conns": 0}


def script():
    try:
        with open(os.path.join(a.dir, "script.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return []


def read_request(conn, buf):
    while b"\r\n\r\n" not in buf:
        more = conn.recv(65536)
        if not more:
            return None, buf
        buf += more
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = [ln.split(":", 1) for ln in lines[1:]]
    headers = [[k, v.strip()] for k, v in headers]
    n = 0
    for k, v in headers:
        if k.lower() == "content-length":
            n = int(v)
    while len(rest) < n:
        more = conn.recv(65536)
        if not more:
            return None, b""
        rest += more
    return {"method": method, "target": target, "headers": headers,
            "body": rest[:n].decode("latin-1")}, rest[n:]


def serve(conn, num):
    buf = b""
    try:
        while True:
            req, buf = read_request(conn, buf)
            if req is None:
                return
            req["conn"] = num
            with lock:
                with open(os.path.join(a.dir, "requests.jsonl"), "a") as f:
                    f.write(json.dumps(req) + "\n")
                s = script()
                ans = s[state["next"]] if state["next"] < len(s) else None
                state["next"] += 1
            if ans is None or ("send" not in ans and not ans.get("drop")):
                body = b'{"kind":"Status","status":"Success"}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                             % len(body) + body)
                continue
            if ans.get("drop"):
                return
            data = ans["send"].encode("latin-1")
            k = max(1, int(ans.get("pieces", 1)))
            step = max(1, -(-len(data) // k))
            for i in range(0, len(data), step):
                conn.sendall(data[i:i + step])
                if k > 1:
                    time.sleep(0.002)
            if ans.get("close"):
                return
    except (ConnectionResetError, BrokenPipeError):
        return
    finally:
        conn.close()


def main():
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    with open(os.path.join(a.dir, "port.tmp"), "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(os.path.join(a.dir, "port.tmp"), os.path.join(a.dir, "port"))
    with open(os.path.join(a.dir, "pid"), "w") as f:
        f.write(str(os.getpid()))
    while True:
        conn, _ = ls.accept()
        with lock:
            state["conns"] += 1
            num = state["conns"]
        threading.Thread(target=serve, args=(conn, num), daemon=True).start()


main()
