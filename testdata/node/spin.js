// spin.js: JavaScript functions that time their own work, for er's perf-map test
// (cmd/er/node_test.go). Run with node --perf-basic-prof; it prints "js NAME cpu_ns N" for each.
// Node has no thread CPU clock before version 23: process.cpuUsage() is the process's, which the
// JIT's and the GC's threads add little to once the functions are compiled.
'use strict';

function cpuNow() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000; // ns
}

function leaf(x) {
  let s = 0;
  for (let i = 0; i < 1000; i++) s += Math.sqrt(x + i);
  return s;
}

// alpha and beta each run until the process has used ms of CPU, and return what they measured.
// Each loops itself, so that V8 compiles it on stack replacement as a function of its own.
function alpha(ms) {
  const t0 = cpuNow();
  const end = t0 + ms * 1e6;
  let x = 0;
  while (cpuNow() < end) {
    for (let i = 0; i < 200; i++) x += leaf(i);
  }
  sink += x;
  return cpuNow() - t0;
}

function beta(ms) {
  const t0 = cpuNow();
  const end = t0 + ms * 1e6;
  let x = 0;
  while (cpuNow() < end) {
    for (let i = 0; i < 200000; i++) x += (i * 0.5) % 7;
  }
  sink += x;
  return cpuNow() - t0;
}

let sink = 0;
const scale = Number(process.argv[2] || 1);
const a = alpha(600 * scale);
const b = beta(400 * scale);
console.log(`js alpha cpu_ns ${a}`);
console.log(`js beta cpu_ns ${b}`);
console.log(`sink ${sink > 0}`);
