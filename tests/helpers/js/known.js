// known.js - a Node.js program whose profile is known (tests/unit/test_v8*.c).
//
//   node known.js run SECONDS   heavy/light 10:1, callbacks through C++ and a
//                               worker thread; prints each function's CPU time
//                               (this thread's own, /proc/thread-self/schedstat)
//                               as "TRUTH name ns" lines at the end
//   node known.js run1 SECONDS  the same on the main thread alone (no worker:
//                               node 18's V8 opens its perf map once per
//                               isolate, truncating, so a worker's entries
//                               replace the main thread's)
//   node known.js stops ROUNDS  stops at known places: prints a line
//                               "STOP tag tid fn|file|line|fn|file|line..."
//                               (the frames of new Error().stack, callee first),
//                               then blocks reading a byte from stdin (the test
//                               walks the thread meanwhile, then writes one);
//                               allocates between stops so the GC moves objects;
//                               first "READY pid", then one byte to start
//
// Every function here is named, so a frame's name is never a guess.
'use strict';
const fs = require('fs');
const wt = require('worker_threads');

const schedFd = () => fs.openSync('/proc/thread-self/schedstat', 'r');
let sfd = -1;
const sbuf = Buffer.alloc(64);
function cpuNs() {
  const n = fs.readSync(sfd, sbuf, 0, 64, 0);
  return Number(sbuf.toString('latin1', 0, n).split(' ')[0]);
}

function heavy(n) {
  let a = 0;
  for (let i = 0; i < n * 10; i++) a = (a * 31 + i) | 0;
  return a;
}

function light(n) {
  let a = 0;
  for (let i = 0; i < n; i++) a = (a * 31 + i) | 0;
  return a;
}

function spin(n) {
  let a = 0;
  for (let i = 0; i < n; i++) a = (a * 17 + i) | 0;
  return a;
}

const truth = { heavy: 0, light: 0, reviver: 0, comparator: 0 };

function outer(n) {
  const t0 = cpuNs();
  heavy(n);
  const t1 = cpuNs();
  light(n);
  truth.heavy += t1 - t0;
  truth.light += cpuNs() - t1;
}

// A JS function called back from C++ (JSON.parse's reviver) and from a
// builtin (Array.prototype.sort's comparator).
function viaParse(n) {
  return JSON.parse('{"a":1,"b":2,"c":3}', function reviver(k, v) {
    const t = cpuNs();
    spin(n);
    truth.reviver += cpuNs() - t;
    return v;
  });
}

function viaSort(n) {
  return [3, 1, 2].sort(function comparator(a, b) {
    const t = cpuNs();
    spin(n);
    truth.comparator += cpuNs() - t;
    return a - b;
  });
}

// Each round's size is drawn between n/2 and 3n/2 (heavy still ten times
// light): rounds of one fixed length (~8 ms here, with a CPU of its own)
// kept step with the sampler's period (10.1 ms at 99 Hz) and the kernel
// tick that advances schedstat (4 ms), so both the samples and the
// program's own figure saw the same few phases of a round for seconds
// on end: in one run the worker's own figure said 92.5% and the samples
// 88.3% (its other runs: 90-91%).
let seed = 0x9e3779b9;
function roundSize(n) {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return Math.floor(n * (0.5 + seed / 4294967296));
}

function runLoop(seconds, size) {
  const end = Date.now() + seconds * 1000;
  let rounds = 0;
  while (Date.now() < end) {
    const n = roundSize(size);
    outer(n);
    if (++rounds % 10 === 0) {
      viaParse(n);
      viaSort(n);
    }
  }
}

// --- stops ---

Error.stackTraceLimit = 64;
let armed = false;
const tid = () => fs.readlinkSync('/proc/thread-self').split('/').pop();

function frames() {
  const prep = Error.prepareStackTrace;
  Error.prepareStackTrace = (e, cs) => cs;
  const cs = new Error().stack;
  Error.prepareStackTrace = prep;
  return cs.slice(1).map((c) => [c.getFunctionName() || '', c.getFileName() || '', c.getLineNumber() || 0].join('|'));
}

// The stop: the frames V8 itself reports, then a read that blocks until
// the test is done, on the same line (so the stopped frame's line is the
// one reported too). A blocking read parks this very thread; SIGSTOP
// would go to the process, and a worker ran on until the main thread
// took it.
const one = Buffer.alloc(1);
function site(tag) {
  if (!armed) return 0;
  fs.writeSync(1, `STOP ${tag} ${tid()} ${frames().join('|')}\n`), fs.readSync(0, one, 0, 1, null);
  return 1;
}

function leaf(tag) {
  return site(tag);
}

function mid(tag, depth) {
  if (depth > 0) return mid(tag, depth - 1) + 1;
  return leaf(tag);
}

function top(tag) {
  return mid(tag, 3);
}

function parseSite(tag) {
  return JSON.parse('{"a":1}', function reviver(k, v) {
    if (k === 'a') site(tag);
    return v;
  });
}

function sortSite(tag) {
  return [2, 1].sort(function comparator(a, b) {
    site(tag);
    return a - b;
  });
}

// Garbage with survivors: scavenges move the young, mark-compact moves the old.
const keep = [];
function churn(k) {
  for (let i = 0; i < 40000 * k; i++) {
    const o = { i, s: 'x' + i, a: [i, i + 1] };
    if (i % 7 === 0) keep[(i * 13) % 30000] = o;
  }
  // Run with --expose-gc: full collections too (dead functions go, pages
  // are compacted).
  if (typeof gc === 'function') gc();
}

// A function made per round (its SharedFunctionInfo dies with it).
function evalSite(tag, r) {
  const f = new Function('site', 'tag', `return function made${r}() { return site(tag); };`)(site, tag);
  return f();
}

const sites = [
  (r) => top(`top`),
  (r) => parseSite(`reviver`),
  (r) => sortSite(`comparator`),
  (r) => evalSite(`eval`, r),
];

function stops(rounds) {
  // The test sets up (BPF, say) and lets us go.
  fs.writeSync(1, `READY ${process.pid}\n`), fs.readSync(0, one, 0, 1, null);
  for (let r = 0; r < rounds; r++) {
    for (const s of sites) {
      // Warm up (the default tiers compile the hot callers), then stop.
      armed = false;
      for (let i = 0; i < 3000; i++) s(r);
      churn(1);
      armed = true;
      s(r);
    }
  }
  armed = false;
}

function workerStops(rounds) {
  // The main thread waits here while the worker stops the process.
  const sab = new SharedArrayBuffer(4);
  const w = new wt.Worker(__filename, { argv: ['worker-stops', String(rounds)], workerData: sab });
  Atomics.wait(new Int32Array(sab), 0, 0);
  return w;
}

function workerMain(rounds, sab) {
  for (let r = 0; r < rounds; r++) {
    armed = false;
    for (let i = 0; i < 3000; i++) top('worker');
    churn(1);
    armed = true;
    top('worker');
  }
  armed = false;
  Atomics.store(new Int32Array(sab), 0, 1);
  Atomics.notify(new Int32Array(sab), 0);
}

// Short-lived workers, one after another until `end`: each compiles code
// of its own, runs it ~30 ms and exits, and its heap is freed with it.
// Their frames must be named before that (SPEC: a runtime's frames are
// shown as written); printed: how many ran.
function churn_workers(end, n) {
  if (Date.now() >= end) {
    fs.writeSync(1, `WORKERS ${n}\n`);
    return;
  }
  const w = new wt.Worker(__filename, { argv: ['churn-worker', String(n)] });
  w.on('exit', () => churn_workers(end, n + 1));
}

function churnWork(k) {
  const f = new Function('n', `let a = ${k}; for (let i = 0; i < n; i++) a += i % 7; return a;`);
  const end = Date.now() + 30;
  while (Date.now() < end) f(20000);
}

// Work per call: light's 200k iterations take ~200 us, so the timing
// itself (a read of schedstat, ~5-10 us, inside each bracket) is a few
// percent of it. At 20k it was a third to a half of light's time and
// the program's own figure for heavy came out 3 pp below the work's.
const N = 200000;

function main() {
  const mode = process.argv[2] || 'run';
  const arg = Number(process.argv[3] || 5);
  sfd = schedFd();
  if (mode === 'worker-stops') {
    workerMain(arg, wt.workerData);
  } else if (mode === 'worker-run' || mode === 'run1') {
    const who = mode === 'run1' ? '' : 'worker-';
    runLoop(arg, N);
    fs.writeSync(1, `TRUTH ${who}heavy ${truth.heavy}\nTRUTH ${who}light ${truth.light}\n`);
  } else if (mode === 'churn') {
    churn_workers(Date.now() + arg * 1000, 0);
  } else if (mode === 'churn-worker') {
    churnWork(arg);
  } else if (mode === 'stops') {
    stops(arg);
    workerStops(arg);
    fs.writeSync(1, 'DONE\n');
  } else {
    const w = new wt.Worker(__filename, { argv: ['worker-run', String(arg)] });
    runLoop(arg, N);
    for (const k of Object.keys(truth)) fs.writeSync(1, `TRUTH ${k} ${truth[k]}\n`);
    w.on('exit', () => fs.writeSync(1, 'DONE\n'));
  }
}

main();
