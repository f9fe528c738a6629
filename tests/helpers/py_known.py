"""A known answer for the Python walk: three functions with the same inner
loop, called 10:1:1 per round, the third as a key function under the
builtin sorted() (so through C). Each call is timed with the thread's CPU
clock; at the end the program prints each function's share of the CPU
time this thread used since it started, to compare with a profile.

usage: py_known.py SECONDS
"""
import sys
import time


def heavy():
    acc = 0
    for i in range(20000):
        acc ^= i
    return acc


def light():
    acc = 0
    for i in range(20000):
        acc ^= i
    return acc


def cb(x):
    acc = 0
    for i in range(20000):
        acc ^= i
    return acc


def via_c():
    return sorted([0], key=cb)


def main(secs):
    t = {"heavy": 0, "light": 0, "cb": 0}
    clock = time.thread_time_ns
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for _ in range(10):
            t0 = clock()
            heavy()
            t["heavy"] += clock() - t0
        t0 = clock()
        light()
        t["light"] += clock() - t0
        t0 = clock()
        via_c()
        t["cb"] += clock() - t0
    total = clock()
    print(" ".join("%s=%.2f" % (k, 100.0 * v / total) for k, v in t.items()), flush=True)


main(float(sys.argv[1]))
