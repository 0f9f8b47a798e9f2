// node --perf-basic-prof hotloop.js CALLS: spins in one JavaScript function, hotLoop, for CALLS
// calls of a fixed amount of work (~1 ms each), so that its CPU time does not depend on the
// machine's load; prints "ready" after the first call (the JIT-frame tests: V8 names its code
// in /tmp/perf-PID.map).
"use strict";
function hotLoop(n) {
    let s = 0;
    for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;
    return s;
}
const calls = Number(process.argv[2] || "2000");
let x = hotLoop(200000);
process.stdout.write("ready\n");
for (let i = 1; i < calls; i++) x += hotLoop(200000);
process.stdout.write(x >= 0 ? "done\n" : "?\n");
