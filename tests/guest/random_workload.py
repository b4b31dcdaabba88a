"""Seeded random workloads for the arm64 differential test (tests/guest/test_guest_arm64_random.py).

generate(seed, index) -> Workload: an arm64 assembly file of functions whose instruction counts
are known by construction, a small C driver that runs them, and a model of the program that
gives every function's calls and instructions (callees included), per call, exactly.

The assembly (every function probed; nothing the C compiler emits is inside a probed call, but
for rw_jump_out and rw_do_exec, which run only inside frames longjmp or exec then abandons):
  rw_leafI      mov x9,#K; K x (subs x9,x9,#1; b.ne); ret                        2K + 2
  rw_fnI        stp x29,x30,[sp,#-16]!; mov x29,sp; SEGMENTS; ldp x29,x30,[sp],#16; ret
                                                                             4 + the segments
      loop K    mov x9,#K; K x (subs, b.ne)                                        2K + 1
      call X    bl X                                                          1 + X's count
      rec R D   mov x0,#D; bl R                                             2 + R(D)'s count
      sleep     adrp/add x0 (a 1 ms timespec); mov x1,#0; mov x8,#101 (nanosleep); svc #0  5
      signal    getpid, gettid, tgkill(SIGUSR1) by svc                                    10
                then the handler (below) on the thread's sigaltstack:            7 + G's count
  rw_recI (x0 = D)  stp; mov x29,sp; loop K; cbz x0,2f; sub x0,x0,#1; bl rw_recI; b 3f;
                2: BOTTOM; 3: ldp; ret          D > 0: 2K + 9 + R(D-1); D = 0: 2K + 6 + BOTTOM
      BOTTOM    nothing | call X | sleep | signal | `bl rw_jump_out` (C: longjmp to the driver)
                | `bl rw_do_exec` (C: execv of the workload itself, `run after`)
  rw_exec_fn    SEGMENTS: a loop, a call, rec rw_rexec D (whose deepest call execs)
  rw_region_fn  SEGMENTS: rbegin (bl rw_region_begin), a loop, a call, bl rw_rend_fn
  rw_rend_fn    SEGMENTS: a loop, rend (bl rw_region_end), a loop: the region ends inside it
  rw_region_open  SEGMENTS: a loop, rbegin, a loop: a region never ended (a thread's last call)
  rw_region_begin, rw_region_end  nop; ret (not --func probed: the region's two ends)
  rw_sig_handler  (SA_ONSTACK | SA_RESTORER, installed by the raw rt_sigaction)
                stp; mov x29,sp; bl G; ldp; br x30                                 5 + G
                `br x30`, not `ret`: the oracle follows bl/blr/ret, and the handler is entered
                without a bl; returns to
  rw_sig_restorer  mov x8,#139 (rt_sigreturn); svc #0                                    2
                (the workload's own restorer, in its text where the oracle counts: the
                vDSO's __kernel_rt_sigreturn is the same two instructions)
So a call that raises a signal counts, besides its own 10 instructions, 7 + G's count.

The driver (C, static, text at TEXT_BASE + index * 16 MB so that several seeds' workloads can be
watched by the oracle in one boot) runs one plan per thread: a list of top-level calls, some
through jump_call() (setjmp, one C frame below the plan's: their deepest frame longjmps back;
the plan's next call enters above every frame left; with same_sp, run_plan calls setjmp
itself). One plan in two (of another thread than the main one) ends with a longjmp from past
64 frames and a call or two after it. `run par`
runs the plans in concurrent pthreads (the main thread runs plan 0); `run seq` runs them one
after another on the main thread (what the oracle can follow: it keeps one call stack per
vCPU). Then the main thread calls rw_exec_fn, and the new image (`run after`) runs one more
plan. Each plan first touches 64 KB of its stack and its sigaltstack (the oracle counts an
instruction that faults twice).
"""
import random

TEXT_BASE = 0x5000000
TEXT_STRIDE = 0x1000000
URETPROBE_DEPTH = 64      # the kernel's MAX_URETPROBE_DEPTH: return probes in flight per thread
SIGNAL_OWN = 10           # getpid, gettid, tgkill: 3 x (mov x8; svc) + mov x10,x0 + mov x1,x0
                          # + mov x0,x10 + mov x2,#10
HANDLER_OWN = 5           # stp, mov, bl G, ldp, br x30
RESTORER = 2              # mov x8,#139; svc #0
SLEEP_OWN = 5


class JumpOut(Exception):
    pass


class Fn:
    def __init__(self, name, kind, K, segs=(), bottom=None):
        self.name, self.kind, self.K, self.segs, self.bottom = name, kind, K, list(segs), bottom


class Stat:
    def __init__(self):
        self.calls = 0            # every call that returned (what the oracle sees)
        self.total = 0
        self.per_call = []
        self.m_calls = 0          # the calls pmcprof measures: entered with a return probe
        self.m_total = 0
        self.m_min = None
        self.m_max = None
        self.m_values = []
        self.m_deep = []          # per measured call: the too-deep calls entered inside it
        self.m_rhits = []         # per measured call: the region probes hit inside it
        self.depth_overflow = 0   # entered past the kernel's 64 return probes in flight
        self.abandoned = 0        # measured calls left by longjmp
        self.open = 0             # every call left by longjmp (the oracle's `open`)


class Workload:
    def __init__(self, seed, index=0, same_sp=False):
        self.seed, self.index, self.same_sp = seed, index, same_sp
        self.text_address = TEXT_BASE + index * TEXT_STRIDE
        rnd = random.Random(seed)
        self.fns = {}
        self.order = []
        self.features = {"sleep": 0, "signal": 0, "jump": 0, "deep_rec": 0, "overflow": 0,
                         "exec": 0}

        def add(f):
            self.fns[f.name] = f
            self.order.append(f.name)
            return f

        leaves = [add(Fn(f"rw_leaf{i}", "leaf", rnd.randint(1, 120))).name
                  for i in range(rnd.randint(3, 5))]
        self.G = leaves[0]          # what the signal handler calls
        # recursive functions: rec0 (at most 61 deep) and recdeep (past 64) bottom out in a leaf
        # call (or nothing), rec1 in a signal, rec2 in a sleep, rjump in a longjmp
        rec0 = add(Fn("rw_rec0", "rec", rnd.randint(1, 40),
                      bottom=rnd.choice([None, ("call", rnd.choice(leaves))])))
        recdeep = add(Fn("rw_recdeep", "rec", rnd.randint(1, 40),
                         bottom=rnd.choice([None, ("call", rnd.choice(leaves))])))
        rec1 = add(Fn("rw_rec1", "rec", rnd.randint(1, 40), bottom=("signal",)))
        rec2 = add(Fn("rw_rec2", "rec", rnd.randint(1, 40), bottom=("sleep",)))
        rjump = add(Fn("rw_rjump", "rec", rnd.randint(1, 40), bottom=("jump",)))
        nfn = rnd.randint(4, 7)
        names = [f"rw_fn{i}" for i in range(nfn)]
        for i in range(nfn - 1, -1, -1):  # callees first: fnI calls fnJ, J > I, leaves, recs
            segs = []
            for _ in range(rnd.randint(1, 5)):
                r = rnd.random()
                # at most two calls of other rw_fn: the call tree stays small
                below = names[i + 1:] if sum(s[0] == "call" and s[1] in names
                                             for s in segs) < 2 else []
                if r < 0.3:
                    segs.append(("loop", rnd.randint(1, 200)))
                elif r < 0.55 and below:
                    segs.append(("call", rnd.choice(below)))
                elif r < 0.75:
                    segs.append(("call", rnd.choice(leaves)))
                elif r < 0.85:
                    segs.append(("rec", rec0.name, rnd.randint(0, 24)))
                elif r < 0.90:
                    segs.append(("sleep",))
                elif r < 0.95:
                    segs.append(("signal",))
                else:
                    segs.append(("rec", rec1.name, rnd.randint(0, 6)))
            self.fns[names[i]] = Fn(names[i], "fn", 0, segs)
        self.order += names
        # a wrapper whose deepest descendant longjmps: a loop, a normal call, then rjump(D)
        jwrap = add(Fn("rw_jwrap", "fn", 0,
                       [("loop", rnd.randint(1, 50)), ("call", rnd.choice(names)),
                        ("rec", rjump.name, rnd.randint(5, 50))]))

        # regions (--region REGION=EXE:rw_region_begin,EXE:rw_region_end): rw_region_fn begins
        # one, calls X, then rw_rend_fn, which ends it inside itself; rw_region_open begins one
        # that never ends (a thread's last call); rw_rend_fn called alone ends none
        rend = add(Fn("rw_rend_fn", "fn", 0, [("loop", rnd.randint(1, 50)), ("rend",),
                                               ("loop", rnd.randint(1, 50))]))
        region_fn = add(Fn("rw_region_fn", "fn", 0,
                           [("rbegin",), ("loop", rnd.randint(1, 100)),
                            ("call", rnd.choice(names + leaves)), ("call", rend.name)]))
        region_open = add(Fn("rw_region_open", "fn", 0,
                             [("loop", rnd.randint(1, 20)), ("rbegin",),
                              ("loop", rnd.randint(1, 20))]))

        # plans: thread 0 is the main thread
        self.plans = []
        for t in range(rnd.randint(2, 4)):
            plan = []
            for _ in range(rnd.randint(4, 10)):
                r = rnd.random()
                if r < 0.45:
                    plan.append(("call", rnd.choice(names[:3]), 0))
                elif r < 0.6:
                    plan.append(("call", rnd.choice(leaves), 0))
                elif r < 0.75:  # recursion past 16, sometimes past the uretprobe limit
                    plan.append(rnd.choice([("call", rec0.name, rnd.randint(17, 60)),
                                            ("call", recdeep.name, rnd.randint(65, 90))]))
                elif r < 0.85:
                    plan.append(("call", rnd.choice([rec1.name, rec2.name]), rnd.randint(0, 30)))
                else:           # a longjmp out of a deep frame; a normal call after it
                    plan += self._jump(rnd, rjump, jwrap, names)
            self.plans.append(plan)
        # sometimes a thread longjmps out from past 64 return probes in flight: the kernel checks
        # its limit before it drops the return probes a longjmp left, so every later call of
        # that thread is too deep for it
        if len(self.plans) > 1 and rnd.random() < 0.5:
            self.plans[-1] += [("jump", rjump.name, rnd.randint(65, 80))] + [
                ("call", rnd.choice(names[:3]), 0) for _ in range(rnd.randint(1, 2))]
        # every feature in every seed: thread 0 also recurses past 16 and past 64, raises a
        # signal 17..60 deep, sleeps, and longjmps
        must = [[("call", rec0.name, rnd.randint(17, 60))],
                [("call", recdeep.name, rnd.randint(65, 90))],
                [("call", rec1.name, rnd.randint(17, 60))],
                [("call", rec2.name, rnd.randint(0, 20))],
                self._jump(rnd, rjump, jwrap, names)]
        for ops in must:
            at = rnd.randint(0, len(self.plans[0]))
            self.plans[0][at:at] = ops
        # regions: a few whole ones, an end without a start, and some never ended
        self.plans[0].insert(rnd.randint(0, len(self.plans[0])), ("call", region_fn.name, 0))
        for plan in self.plans:
            for ops in [("call", region_fn.name, 0)] * rnd.randint(0, 3) + \
                    [("call", rend.name, 0)] * rnd.randint(0, 1):
                at = rnd.randint(0, len(plan))
                plan[at:at] = [ops]
            if rnd.random() < 0.5 and plan is not self.plans[0]:  # (the main thread execs)
                plan.append(("call", region_open.name, 0))
        # exec: the main thread, after joining the others, calls rw_exec_fn, which calls X and
        # then rw_rexec(D), whose deepest call calls rw_do_exec (C: execv of /proc/self/exe
        # `run after`); the new image runs AFTER (the kernel frees the return probes at exec)
        rexec = add(Fn("rw_rexec", "rec", rnd.randint(1, 40), bottom=("exec",)))
        self.exec_fn = add(Fn("rw_exec_fn", "fn", 0,
                              [("loop", rnd.randint(1, 50)), ("call", rnd.choice(names + leaves)),
                               ("rec", rexec.name, rnd.randint(0, 40))])).name
        self.after = [("call", rnd.choice(names[:3] + leaves), 0)
                      for _ in range(rnd.randint(1, 4))]
        self.stats = {n: Stat() for n in self.order}
        # the region's calls: instructions from rw_region_begin's entry to rw_region_end's, and
        # the too-deep calls that began and returned between (see the test's docstring)
        self.region = {"calls": 0, "values": [], "deep": [], "open": 0, "unmatched_exits": 0}
        self._simulate()

    @staticmethod
    def _jump(rnd, rjump, jwrap, names):
        """A longjmp out of a deep frame (rjump D deep, or jwrap's chain), then a normal call."""
        if rnd.random() < 0.5:
            first = ("jump", rjump.name, rnd.randint(10, 55))
        else:
            first = ("jump", jwrap.name, 0)
        return [first, ("call", rnd.choice(names[:3]), 0)]

    # ------------------------------------------------------------------ the model

    def _simulate(self):
        for t, plan in enumerate(self.plans):
            self.stack = []      # open calls: [name, start, measured, deep, rhits]
            self.live = 0        # return probes in flight (measured open calls)
            self.stale = 0       # return probes left behind by a longjmp
            self.n = 0           # user instructions of the workload's asm executed
            self.deep = 0        # calls entered too deep so far
            self.rstart = None   # the open region's start (self.n at rw_region_begin's entry)
            self.rhits = 0       # region probes hit so far
            self._run(plan)
            if t == 0:           # the main thread, the others joined: exec, then AFTER
                self._run([("exec", self.exec_fn, 0)])
                self.stack, self.live, self.stale = [], 0, 0
                self._run(self.after)
            if self.rstart is not None:
                self.region["open"] += 1

    def _run(self, plan):
        for kind, name, arg in plan:
            try:
                self._call(name, arg)
            except JumpOut:      # longjmp or exec: every open call is left
                self.features[kind] += 1
                for fname, _, measured, _, _ in self.stack:
                    self.stats[fname].open += 1
                    if measured:
                        self.stats[fname].abandoned += 1
                self.stale += self.live
                self.live = 0
                self.stack = []
            else:
                assert kind == "call", (kind, name)

    def _enter(self, name):
        # the kernel omits a return probe past 64 in flight, before dropping the instances a
        # longjmp left (uprobes.c prepare_uretprobe); pmcprof then counts depth_overflow
        measured = self.live + self.stale < URETPROBE_DEPTH
        if measured:
            self.stale = 0       # the driver's call is above every frame longjmp left
            self.live += 1
        else:
            self.stats[name].depth_overflow += 1
            self.features["overflow"] += 1
            self.deep += 1
        self.stack.append([name, self.n, measured, self.deep, self.rhits])

    def _leave(self):
        name, start, measured, deep, rhits = self.stack.pop()
        v = self.n - start
        s = self.stats[name]
        s.calls += 1
        s.total += v
        s.per_call.append(v)
        if measured:
            self.live -= 1
            s.m_calls += 1
            s.m_total += v
            s.m_values.append(v)
            s.m_deep.append(self.deep - deep)
            s.m_rhits.append(self.rhits - rhits)
            s.m_min = v if s.m_min is None else min(s.m_min, v)
            s.m_max = v if s.m_max is None else max(s.m_max, v)

    def _call(self, name, arg=0):
        f = self.fns[name]
        self._enter(name)
        if f.kind == "leaf":
            self.n += 2 * f.K + 2
        elif f.kind == "fn":
            self.n += 2
            for seg in f.segs:
                self._seg(seg)
            self.n += 2
        else:
            if arg >= 30:
                self.features["deep_rec"] += 1
            self.n += 2 + 2 * f.K + 1 + 1
            if arg > 0:
                self.n += 2
                self._call(name, arg - 1)
                self.n += 1
            elif f.bottom is not None:
                self._seg(f.bottom)
            self.n += 2
        self._leave()

    def _seg(self, seg):
        k = seg[0]
        if k == "loop":
            self.n += 2 * seg[1] + 1
        elif k == "call":
            self.n += 1
            self._call(seg[1])
        elif k == "rec":
            self.n += 2
            self._call(seg[1], seg[2])
        elif k == "sleep":
            self.features["sleep"] += 1
            self.n += SLEEP_OWN
        elif k == "signal":
            self.features["signal"] += 1
            self.n += SIGNAL_OWN + HANDLER_OWN + RESTORER
            self._call(self.G)
        elif k in ("jump", "exec"):
            self.n += 1
            raise JumpOut()
        elif k == "rbegin":           # bl rw_region_begin; nop; ret
            assert self.rstart is None
            self.n += 1
            self.rstart = self.n
            self.rdeep = self.deep
            self.rhits += 1
            self.n += 2
        elif k == "rend":             # bl rw_region_end; nop; ret
            self.n += 1
            self.rhits += 1
            if self.rstart is None:
                self.region["unmatched_exits"] += 1
            else:
                self.region["calls"] += 1
                self.region["values"].append(self.n - self.rstart)
                open_deep = sum(1 for f in self.stack if not f[2] and f[3] > self.rdeep)
                self.region["deep"].append(self.deep - self.rdeep - open_deep)
                self.rstart = None
            self.n += 2
        else:
            raise ValueError(seg)

    # ------------------------------------------------------------------ the sources

    def asm(self):
        out = ["// generated by tests/guest/random_workload.py, seed %d" % self.seed,
               ".text"]
        lbl = [0]

        def loop(K):
            lbl[0] += 1
            return [f"  mov x9, #{K}", f".Ll{lbl[0]}:", "  subs x9, x9, #1", f"  b.ne .Ll{lbl[0]}"]

        def seg_asm(seg):
            k = seg[0]
            if k == "loop":
                return loop(seg[1])
            if k == "call":
                return [f"  bl {seg[1]}"]
            if k == "rec":
                return [f"  mov x0, #{seg[2]}", f"  bl {seg[1]}"]
            if k == "sleep":
                return ["  adrp x0, rw_timespec", "  add x0, x0, :lo12:rw_timespec",
                        "  mov x1, #0", "  mov x8, #101", "  svc #0"]
            if k == "signal":
                return ["  mov x8, #172", "  svc #0", "  mov x10, x0",      # getpid
                        "  mov x8, #178", "  svc #0", "  mov x1, x0",       # gettid
                        "  mov x0, x10", "  mov x2, #10", "  mov x8, #131",  # tgkill SIGUSR1
                        "  svc #0"]
            if k == "jump":
                return ["  bl rw_jump_out"]
            if k == "exec":
                return ["  bl rw_do_exec"]
            if k == "rbegin":
                return ["  bl rw_region_begin"]
            if k == "rend":
                return ["  bl rw_region_end"]
            raise ValueError(seg)

        for name in self.order:
            f = self.fns[name]
            body = []
            if f.kind == "leaf":
                body = loop(f.K) + ["  ret"]
            elif f.kind == "fn":
                body = ["  stp x29, x30, [sp, #-16]!", "  mov x29, sp"]
                for seg in f.segs:
                    body += seg_asm(seg)
                body += ["  ldp x29, x30, [sp], #16", "  ret"]
            else:
                body = ["  stp x29, x30, [sp, #-16]!", "  mov x29, sp"] + loop(f.K) + [
                    f"  cbz x0, .Lb_{name}", "  sub x0, x0, #1", f"  bl {name}",
                    f"  b .Le_{name}", f".Lb_{name}:"]
                if f.bottom is not None:
                    body += seg_asm(f.bottom)
                body += [f".Le_{name}:", "  ldp x29, x30, [sp], #16", "  ret"]
            out += [f".global {name}", f".type {name}, %function", ".p2align 4", f"{name}:"]
            out += body + [f".size {name}, .-{name}"]
        out += [".global rw_sig_handler", ".type rw_sig_handler, %function", ".p2align 4",
                "rw_sig_handler:", "  stp x29, x30, [sp, #-16]!", "  mov x29, sp",
                f"  bl {self.G}", "  ldp x29, x30, [sp], #16", "  br x30",
                ".size rw_sig_handler, .-rw_sig_handler",
                ".global rw_region_begin", ".type rw_region_begin, %function", ".p2align 4",
                "rw_region_begin:", "  nop", "  ret", ".size rw_region_begin, .-rw_region_begin",
                ".global rw_region_end", ".type rw_region_end, %function", ".p2align 4",
                "rw_region_end:", "  nop", "  ret", ".size rw_region_end, .-rw_region_end",
                ".global rw_sig_restorer", ".type rw_sig_restorer, %function", ".p2align 4",
                "rw_sig_restorer:", "  mov x8, #139", "  svc #0",
                ".size rw_sig_restorer, .-rw_sig_restorer",
                ".section .rodata", ".p2align 4", "rw_timespec:", "  .quad 0", "  .quad 1000000",
                ".section .note.GNU-stack,\"\",%progbits", ""]
        return "\n".join(out)

    def c(self):
        idx = {n: i for i, n in enumerate(self.order)}
        lines = ["/* generated by tests/guest/random_workload.py, seed %d */" % self.seed,
                 "#define _GNU_SOURCE", "#include <pthread.h>", "#include <setjmp.h>",
                 "#include <signal.h>", "#include <stdio.h>", "#include <string.h>",
                 "#include <sys/syscall.h>", "#include <unistd.h>", ""]
        for n in self.order:
            lines.append(f"void {n}(unsigned long);")
        lines += ["void rw_sig_handler(int);", "void rw_sig_restorer(void);",
                  "typedef void (*fn_t)(unsigned long);",
                  "static fn_t const FNS[] = {" + ", ".join(self.order) + "};",
                  "struct op { unsigned char jump, fn; unsigned short arg; };"]
        for t, plan in enumerate(self.plans):
            ops = ", ".join(f"{{{int(k == 'jump')}, {idx[n]}, {a}}}" for k, n, a in plan)
            lines.append(f"static const struct op PLAN{t}[] = {{{ops}}};")
        nt = len(self.plans)
        ops = ", ".join(f"{{0, {idx[n]}, {a}}}" for k, n, a in self.after)
        lines.append(f"static const struct op PLAN{nt}[] = {{{ops}}};")
        lines += [f"#define NT {nt}", f"#define EXEC_FN {idx[self.exec_fn]}",
                  f"#define SAME_SP {int(self.same_sp)}",
                  "static const struct op* const PLANS[NT + 1] = {" +
                  ", ".join(f"PLAN{t}" for t in range(nt + 1)) + "};",
                  "static const unsigned NOPS[NT + 1] = {" +
                  ", ".join(str(len(p)) for p in self.plans + [self.after]) + "};",
                  r'''
static __thread jmp_buf jb;
void rw_jump_out(void) { longjmp(jb, 1); }
void rw_do_exec(void) {
  char* const argv[] = {"random_workload", "run", "after", NULL};
  execv("/proc/self/exe", argv);
  perror("execv");
  _exit(5);
}
static char altstack[NT + 1][65536] __attribute__((aligned(16)));

__attribute__((noinline, noipa)) static void touch_stack(void) {
  volatile char buf[65536];
  for (size_t i = 0; i < sizeof buf; i += 256) buf[i] = 0;
}

/* A call that longjmps back here: from a frame below run_plan's, so that the calls run_plan
 * makes next enter at a stack pointer above every frame the longjmp left. */
__attribute__((noinline, noipa)) static void jump_call(const struct op* o) {
  volatile char pad[64];
  pad[0] = 0;
  if (!setjmp(jb)) FNS[o->fn](o->arg);
  (void)pad[0];
}

static void* run_plan(void* arg) {
  unsigned long t = (unsigned long)arg;
  memset(altstack[t], 1, sizeof altstack[t]);
  stack_t ss = {.ss_sp = altstack[t], .ss_size = sizeof altstack[t], .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) { perror("sigaltstack"); _exit(3); }
  touch_stack();
  for (volatile unsigned i = 0; i < NOPS[t]; i++) {
    const struct op* o = &PLANS[t][i];
    if (o->jump && !SAME_SP)
      jump_call(o);
    else if (o->jump) { /* setjmp here: the next call enters where the longjmp's outermost
                           frame did */
      if (!setjmp(jb)) FNS[o->fn](o->arg);
    } else {
      FNS[o->fn](o->arg);
    }
  }
  return NULL;
}

struct ksigaction { void* handler; unsigned long flags; void* restorer; unsigned long mask; };

int main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "run") != 0) return 2;
  struct ksigaction sa = {(void*)rw_sig_handler, SA_ONSTACK | 0x04000000 /* SA_RESTORER */,
                          (void*)rw_sig_restorer, 0};
  if (syscall(SYS_rt_sigaction, SIGUSR1, &sa, NULL, 8) != 0) { perror("rt_sigaction"); return 3; }
  if (strcmp(argv[2], "after") == 0) { /* the image rw_exec_fn exec'd */
    run_plan((void*)NT);
    return 0;
  }
  if (strcmp(argv[2], "seq") == 0) {
    for (unsigned long t = 0; t < NT; t++) run_plan((void*)t);
  } else {
    pthread_t th[NT];
    for (unsigned long t = 1; t < NT; t++)
      if (pthread_create(&th[t], NULL, run_plan, (void*)t) != 0) return 4;
    run_plan((void*)0);
    for (unsigned long t = 1; t < NT; t++) pthread_join(th[t], NULL);
  }
  FNS[EXEC_FN](0); /* does not return */
  return 6;
}
'''.lstrip("\n")]
        return "\n".join(lines)

    def describe(self):
        lines = [f"seed {self.seed}: text {self.text_address:#x}, signal handler calls {self.G}"]
        for n in self.order:
            f = self.fns[n]
            if f.kind == "leaf":
                lines.append(f"  {n}: leaf, loop {f.K} ({2 * f.K + 2} instructions)")
            elif f.kind == "fn":
                lines.append(f"  {n}: {f.segs}")
            else:
                lines.append(f"  {n}: recursive, loop {f.K}, bottom {f.bottom}")
        for t, p in enumerate(self.plans):
            lines.append(f"  thread {t}: {p}")
        lines.append(f"  features: {self.features}")
        return "\n".join(lines)


def generate(seed, index=0, same_sp=False):
    """SAME_SP: the plans' setjmp in run_plan itself, so that the call after a longjmp enters at
    the stack pointer the longjmp's outermost frame was entered at (the model is the same)."""
    return Workload(seed, index, same_sp)
