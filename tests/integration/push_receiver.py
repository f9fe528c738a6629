#!/usr/bin/env python3
"""push_receiver.py - a stand-in for Grafana Pyroscope's push endpoint, for
tests/integration/push.sh (not run by the runner: it is not a .sh).

  push_receiver.py PORTFILE MODEFILE OUTDIR PROTO_DIR [PORT]

Listens on 127.0.0.1 (a free port, written to PORTFILE) and answers
POST /push.v1.PusherService/Push as MODEFILE says at that moment:
  503  -> 503;   429 -> 429 with Retry-After: 5;   ok -> accept.
An accepted request must decode with `protoc --decode push.v1.PushRequest`
(our push.proto) and every series must carry __name__ and service_name;
else it is answered 400 and logged as bad. Accepted profiles are gunzipped
into OUTDIR/prof/<n>.pb and indexed in OUTDIR/index (one line each:
minute id __name__ service_name labels). Every attempt is logged in
OUTDIR/attempts as "unix_time status".
"""
import gzip
import http.server
import os
import subprocess
import sys
import threading
import time

portfile, modefile, outdir, protodir = sys.argv[1:5]
os.makedirs(os.path.join(outdir, "prof"), exist_ok=True)
lock = threading.Lock()
counter = [0]


def fields(buf):
    """Top-level protobuf fields of buf: (number, wire type, value)."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            ln, i = varint(buf, i)
            v = buf[i:i + ln]
            i += ln
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def varint(buf, i):
    r = s = 0
    while True:
        b = buf[i]
        i += 1
        r |= (b & 0x7F) << s
        s += 7
        if not b & 0x80:
            return r, i


def log(name, line):
    with lock:
        with open(os.path.join(outdir, name), "a") as f:
            f.write(line + "\n")


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, extra=None, body=b""):
        self.send_response(code)
        self.send_header("Content-Type", "application/proto")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            mode = open(modefile).read().strip()
        except OSError:
            mode = "ok"
        now = time.time()
        if self.path != "/push.v1.PusherService/Push":
            log("attempts", "%.3f 404" % now)
            return self.reply(404)
        if self.headers.get("Content-Type") != "application/proto":
            log("bad", "content type %s" % self.headers.get("Content-Type"))
            return self.reply(415)
        if mode == "503":
            log("attempts", "%.3f 503" % now)
            return self.reply(503)
        if mode == "429":
            log("attempts", "%.3f 429" % now)
            return self.reply(429, {"Retry-After": "5"})
        err = self.accept(body)
        if err:
            log("bad", err)
            log("attempts", "%.3f 400" % now)
            return self.reply(400, body=err.encode())
        log("attempts", "%.3f 200" % now)
        self.reply(200)

    def accept(self, body):
        dec = subprocess.run(["protoc", "--decode", "push.v1.PushRequest",
                              "--proto_path=" + protodir, "push.proto"],
                             input=body, capture_output=True)
        if dec.returncode:
            return "protoc --decode failed: " + dec.stderr.decode()[:200]
        text = dec.stdout.decode(errors="replace")
        nser = text.count("series {")
        if not nser or text.count('name: "__name__"') != nser or \
                text.count('name: "service_name"') != nser:
            return "a series lacks __name__ or service_name (%d series)" % nser
        lines = []
        for num, _, ser in fields(body):
            if num != 1:
                continue
            labels, samples = {}, []
            for n2, _, v in fields(ser):
                if n2 == 1:
                    kv = {a: b.decode() for a, _, b in fields(v)}
                    labels[kv.get(1, "")] = kv.get(2, "")
                elif n2 == 2:
                    kv = {a: b for a, _, b in fields(v)}
                    samples.append((kv.get(1, b""), kv.get(2, b"").decode()))
            for raw, pid in samples:
                pb = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
                t = 0
                for n3, _, v in fields(pb):
                    if n3 == 9:
                        t = v
                minute = t // 1000000000 // 60 * 60
                with lock:
                    counter[0] += 1
                    k = counter[0]
                with open(os.path.join(outdir, "prof", "%d.pb" % k), "wb") as f:
                    f.write(pb)
                lab = ",".join("%s=%s" % (a, labels[a]) for a in sorted(labels)
                               if a not in ("__name__", "service_name"))
                lines.append("%d %d %s %s %s %s" % (minute, k, pid or "-", labels.get("__name__"),
                                                    labels.get("service_name"), lab))
        for ln in lines:
            log("index", ln)
        return None


srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[5]) if len(sys.argv) > 5 else 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
