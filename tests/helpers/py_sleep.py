"""A known answer for Python frames off CPU: one thread that sleeps 0.9 s
in waitLong and 0.1 s in waitShort per round (time.sleep, a C function
under each), for SECONDS. waitLong's share of the program's off-CPU time
is 90%.

usage: py_sleep.py SECONDS
"""
import sys
import time


def waitLong():
    time.sleep(0.9)


def waitShort():
    time.sleep(0.1)


def main(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        waitLong()
        waitShort()


if __name__ == "__main__":
    main(float(sys.argv[1]))
