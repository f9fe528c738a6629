"""Hot loops whose lines a naive line-table reader gets wrong: one right
after a try/except, one inside a generator. Prints the first and last
line of each loop body, then runs them for SECONDS.

usage: py_lines.py SECONDS
"""
import sys
import time


def after_try(n):
    try:
        x = int("12")
    except ValueError:
        x = 0
    acc = x
    for i in range(n):  # BODY after_try
        acc ^= i  # BODY after_try
        acc += 1  # BODY after_try
    return acc


def squares(n):
    for i in range(n):  # BODY squares
        v = i * i  # BODY squares
        yield v ^ 7  # BODY squares


def in_gen(n):
    s = 0
    for v in squares(n):
        s += v
    return s


def main(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        after_try(200000)
        in_gen(100000)


if __name__ == "__main__":
    import inspect
    for f in (after_try, squares):
        src, first = inspect.getsourcelines(f)
        body = [first + k for k, l in enumerate(src) if "# BODY" in l]
        print("%s %s" % (f.__name__, " ".join(map(str, body))), flush=True)
    main(float(sys.argv[1]))
