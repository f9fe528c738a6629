"""A Python spinner thread beside a thread hashing with hashlib, which
releases the GIL while it hashes: a sample of the hasher must show the
hasher's own frames, never the spinner's.

usage: py_threads.py SECONDS
"""
import hashlib
import sys
import threading
import time


def spinner(end):
    acc = 0
    while time.monotonic() < end:
        for i in range(10000):
            acc ^= i


def hasher(end):
    buf = b"x" * (8 << 20)
    while time.monotonic() < end:
        hashlib.sha256(buf).digest()


def main(secs):
    end = time.monotonic() + secs
    ts = [threading.Thread(target=spinner, args=(end,)), threading.Thread(target=hasher, args=(end,))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


main(float(sys.argv[1]))
