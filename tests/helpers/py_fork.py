"""A Python process that forks: the child runs child_work for SECONDS
(it is a copy of the parent, set up for the walk before the fork), the
parent waits. Prints the child's pid.

usage: py_fork.py SECONDS
"""
import os
import sys
import time


def child_work(secs):
    end = time.monotonic() + secs
    acc = 0
    while time.monotonic() < end:
        for i in range(10000):
            acc ^= i
    return acc


def parent_spin(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        sum(range(1000))


secs = float(sys.argv[1])
parent_spin(1.0)  # sampled (and set up) before the fork
pid = os.fork()
if pid == 0:
    child_work(secs)
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)
