/* insn_oracle: a qemu TCG plugin (plugin API version 1, qemu 7.2) that counts, per call, the guest
 * instructions a function executes from its entry instruction up to and including its return,
 * callees included: the ground truth the arm64 guest test (tests/guest/test_guest_arm64_oracle.py)
 * holds pmcprof's per-call instructions:u against. It reads no guest register and puts nothing in
 * the guest: it sees every instruction qemu translates and executes.
 *
 *   qemu-system-aarch64 ... -plugin file=insn_oracle.so,out=HOSTPATH,fn=NAME:0xSTART:0xEND[,fn=...]
 *                               [,count=0xLO:0xHI ...][,list=N]
 *
 *   fn=NAME:START:END  a function [START, END) (from the ELF symbol table; up to 64). An address
 *                      at or above 2^63 is a kernel (EL1) function, else a user (EL0) one.
 *   count=LO:HI        the instructions counted: those at addresses in [LO, HI) (repeatable).
 *                      Default: all user addresses [0, 2^48) when a user function is watched, all
 *                      kernel addresses [0xffff000000000000, 2^64) when a kernel one is. Give the
 *                      workload's own text: other programs' instructions (a process that preempts
 *                      the call) then never count.
 *   list=N             keep the first N calls of each function, each as [instructions, level]
 *                      (level: how many calls of the same function were open at its entry; 0 for
 *                      an outermost call). Default 65536.
 *   out=PATH           where the report goes (a JSON object, written at qemu's exit); stderr
 *                      (qemu_plugin_outs) without it.
 *   switch=LO:HI       the kernel's context switch, arm64's cpu_switch_to [LO, HI) (from
 *                      /proc/kallsyms): kernel calls are then followed per task across a sleep
 *                      (below). Without it a kernel call that sleeps counts whatever the vCPU
 *                      runs until the two tasks' call depths happen to line up.
 *
 * How a call is followed (aarch64 only): user and kernel instructions are two domains, each with
 * its own instruction counter, call depth and stack of open calls per vCPU (4096 deep). Reaching a
 * function's entry instruction opens a call at the current depth; `bl`/`blr` make the depth one
 * deeper, `ret` one shallower, and a `ret` at the depth a call was opened at closes it (and every
 * other call opened at that depth: a tail call by `b` into another watched function ends with the
 * same `ret`). The call's count is the domain's counter at its `ret` minus the counter before its
 * entry instruction. While no call is open the depth is not followed. An entry met with a full
 * stack is not followed (`stack_overflow`); calls still open at exit are `open`.
 *
 * With switch=, the kernel domain's state (counter, depth, open calls) is per task: the first
 * store in cpu_switch_to goes to the previous task's saved context and its first load comes from
 * the next task's, so the two addresses name the tasks; at its `ret` (the first instruction on
 * the next task's stack) the vCPU's state is saved under the previous task (when a call is
 * open) and the next task's restored (an empty one if it had none). A call then counts its own
 * task's instructions only, interrupts taken in that task included, as a per-task PMU count
 * does. The report's kernel instruction total is then the last task's; `switches` counts the
 * switches seen, `switch_dropped` the open states not saved (256 tasks at most).
 *
 * Limits (API version 1): no register reads, so no process filter (hence count=) and no way to
 * see an exception return; an instruction that faults (a data abort the kernel then handles) has
 * already been counted and counts again when it re-executes: touch a function's data and stack
 * before measuring it. A signal handler entered while a call is open, or longjmp out of one,
 * confuses the depth. Per-vCPU stacks assume a call returns on the vCPU it started on (the arm64
 * guest has one vCPU).
 *
 * Build: gcc -shared -fPIC -O2 -I DIR_WITH_qemu-plugin.h -o insn_oracle.so insn_oracle.c
 * (qemu 7.2's include/qemu/qemu-plugin.h needs no glib). */
#include <inttypes.h>
#include <pthread.h>
#include <qemu-plugin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_FUNCS 64
#define MAX_RANGES 16
#define STACK_DEPTH 4096
#define KERNEL_BASE 0x8000000000000000ull
#define USER_TOP 0x0001000000000000ull
#define KERNEL_LOW 0xffff000000000000ull

enum { DOM_USER = 0, DOM_KERNEL = 1, N_DOMAINS = 2 };

/* userdata of an instrumented instruction: flags, domain and function index */
enum { K_ENTRY = 1, K_CALL = 2, K_RET = 4, K_KERNEL = 8, K_SWITCH = 16 };
#define UD(flags, fn) ((void*)(uintptr_t)((uintptr_t)(flags) | ((uintptr_t)(fn) << 8)))

struct func {
  char name[160];
  uint64_t start, end;
  int domain;
  /* updated under `lock` (closing a call is rare next to counting instructions) */
  uint64_t calls, total, min, max, stack_overflow;
  uint64_t max_level;
  uint64_t* list; /* list_cap pairs: instructions, level */
  uint64_t n_list, list_dropped;
};

struct frame {
  uint32_t fn;
  uint32_t level;
  int64_t depth;
  uint64_t start;
};

struct dstate { /* one domain of one vCPU */
  uint64_t counter;
  int64_t depth;
  uint32_t top;
  uint32_t open_of[MAX_FUNCS];
  struct frame stack[STACK_DEPTH];
};

static struct func funcs[MAX_FUNCS];
static int n_funcs;
static uint64_t ranges[MAX_RANGES][2];
static int n_ranges;
static uint64_t list_cap = 65536;
static char out_path[4096];
static int n_vcpus;
static struct dstate* states; /* n_vcpus * N_DOMAINS */
static bool inline_plain;     /* one vCPU: plain instructions count with an inline add */
static uint64_t translated[N_DOMAINS], instrumented_calls, instrumented_rets;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* switch=LO:HI: the kernel's context switch (arm64 cpu_switch_to). Its first store is to the
 * previous task's saved context, its first load from the next task's: their addresses name the
 * two tasks. At its `ret` (the first instruction on the next task's stack) the vCPU's kernel
 * state (counter, depth, open calls) is saved under the previous task and the next task's is
 * restored (empty if it had none), so a call counts its own task's instructions only and is
 * followed across a sleep. */
#define MAX_TASKS 256
static uint64_t switch_lo, switch_hi;
struct saved_task {
  uint64_t key;
  struct dstate* st;
};
static struct saved_task saved[MAX_TASKS];
static uint64_t switches, switch_dropped;
struct switch_scratch {
  uint64_t prev, next;
};
static struct switch_scratch* scratch; /* per vCPU */

static struct dstate* state_of(unsigned int vcpu, int dom) {
  if ((int)vcpu >= n_vcpus) vcpu = (unsigned int)(n_vcpus - 1); /* hot-plugged: share the last */
  return &states[(size_t)vcpu * N_DOMAINS + (size_t)dom];
}

static void close_call(struct dstate* s, const struct frame* f) {
  struct func* fn = &funcs[f->fn];
  uint64_t n = s->counter - f->start;
  pthread_mutex_lock(&lock);
  if (fn->calls == 0 || n < fn->min) fn->min = n;
  if (n > fn->max) fn->max = n;
  fn->calls++;
  fn->total += n;
  if (fn->n_list < list_cap) {
    fn->list[2 * fn->n_list] = n;
    fn->list[2 * fn->n_list + 1] = f->level;
    fn->n_list++;
  } else {
    fn->list_dropped++;
  }
  pthread_mutex_unlock(&lock);
  s->open_of[f->fn]--;
}

static void copy_state(struct dstate* to, const struct dstate* from) {
  memcpy(to, from, offsetof(struct dstate, stack));
  memcpy(to->stack, from->stack, from->top * sizeof from->stack[0]);
}

static struct saved_task* saved_slot(uint64_t key, bool create) {
  struct saved_task* free_slot = NULL;
  for (int i = 0; i < MAX_TASKS; i++) {
    if (saved[i].key == key) return &saved[i];
    if (!saved[i].key && !free_slot) free_slot = &saved[i];
  }
  if (!create || !free_slot) return NULL;
  if (!free_slot->st) free_slot->st = calloc(1, sizeof *free_slot->st);
  if (!free_slot->st) return NULL;
  free_slot->key = key;
  return free_slot;
}

static void on_switch_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
                          void* userdata) {
  (void)userdata;
  struct switch_scratch* w = &scratch[(int)vcpu < n_vcpus ? vcpu : (unsigned)(n_vcpus - 1)];
  if (qemu_plugin_mem_is_store(info)) {
    if (!w->prev) w->prev = vaddr;
  } else if (w->prev && !w->next) {
    w->next = vaddr;
  }
}

/* The next task's first instruction: swap the vCPU's kernel state. */
static void switch_tasks(unsigned int vcpu) {
  struct switch_scratch* w = &scratch[(int)vcpu < n_vcpus ? vcpu : (unsigned)(n_vcpus - 1)];
  struct dstate* s = state_of(vcpu, DOM_KERNEL);
  pthread_mutex_lock(&lock);
  switches++;
  if (w->prev && w->next && w->prev != w->next) {
    if (s->top > 0) {
      struct saved_task* t = saved_slot(w->prev, true);
      if (t)
        copy_state(t->st, s);
      else
        switch_dropped++;
    } else {
      struct saved_task* t = saved_slot(w->prev, false);
      if (t) t->key = 0;
    }
    struct saved_task* n = saved_slot(w->next, false);
    if (n) { /* its counter too: the instructions other tasks ran meanwhile are not its own */
      copy_state(s, n->st);
      n->key = 0;
    } else {
      uint64_t counter = s->counter;
      memset(s, 0, offsetof(struct dstate, stack));
      s->counter = counter;
    }
  }
  pthread_mutex_unlock(&lock);
  w->prev = w->next = 0;
}

static void on_insn(unsigned int vcpu, void* userdata) {
  uintptr_t u = (uintptr_t)userdata;
  int dom = (u & K_KERNEL) ? DOM_KERNEL : DOM_USER;
  if (u & K_SWITCH) switch_tasks(vcpu);
  struct dstate* s = state_of(vcpu, dom);
  s->counter++;
  if (u & K_ENTRY) {
    uint32_t fn = (uint32_t)(u >> 8);
    if (s->top == 0) s->depth = 0;
    if (s->top < STACK_DEPTH) {
      struct frame* f = &s->stack[s->top++];
      f->fn = fn;
      f->level = s->open_of[fn]++;
      f->depth = s->depth;
      f->start = s->counter - 1; /* the entry instruction counts */
      if (f->level > funcs[fn].max_level) funcs[fn].max_level = f->level;
    } else {
      __atomic_fetch_add(&funcs[fn].stack_overflow, 1, __ATOMIC_RELAXED);
    }
  }
  if (s->top == 0) return; /* nothing open: the depth is not followed */
  if (u & K_CALL) {
    s->depth++;
  } else if (u & K_RET) {
    while (s->top > 0 && s->stack[s->top - 1].depth == s->depth) {
      s->top--;
      close_call(s, &s->stack[s->top]);
    }
    s->depth--;
    if (s->top == 0) s->depth = 0;
  }
}

static bool counted(uint64_t va) {
  for (int i = 0; i < n_ranges; i++)
    if (va >= ranges[i][0] && (va < ranges[i][1] || ranges[i][1] == 0)) return true;
  return false;
}

/* A64 encodings: BL imm26; BLR Xn; RET {Xn} (RETAA/RETAB, BLRAA... are not followed: cortex-a57
 * has no pointer authentication). */
static int decode(uint32_t w) {
  if ((w & 0xfc000000u) == 0x94000000u) return K_CALL; /* bl */
  if ((w & 0xfffffc1fu) == 0xd63f0000u) return K_CALL; /* blr */
  if ((w & 0xfffffc1fu) == 0xd65f0000u) return K_RET;  /* ret */
  return 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t va = qemu_plugin_insn_vaddr(insn);
    if (!counted(va)) continue;
    int dom = va >= KERNEL_BASE ? DOM_KERNEL : DOM_USER;
    int flags = dom == DOM_KERNEL ? K_KERNEL : 0;
    int fn = 0;
    if (qemu_plugin_insn_size(insn) == 4) {
      uint32_t w;
      memcpy(&w, qemu_plugin_insn_data(insn), 4);
      flags |= decode(w);
    }
    if (dom == DOM_KERNEL && switch_hi && va >= switch_lo && va < switch_hi) {
      qemu_plugin_register_vcpu_mem_cb(insn, on_switch_mem, QEMU_PLUGIN_CB_NO_REGS,
                                       QEMU_PLUGIN_MEM_RW, NULL);
      if (flags & K_RET) flags |= K_SWITCH;
    }
    for (int f = 0; f < n_funcs; f++) {
      if (funcs[f].start == va && funcs[f].domain == dom) {
        flags |= K_ENTRY;
        fn = f;
        break;
      }
    }
    __atomic_fetch_add(&translated[dom], 1, __ATOMIC_RELAXED);
    if (flags & K_CALL) __atomic_fetch_add(&instrumented_calls, 1, __ATOMIC_RELAXED);
    if (flags & K_RET) __atomic_fetch_add(&instrumented_rets, 1, __ATOMIC_RELAXED);
    if ((flags & ~K_KERNEL) == 0 && inline_plain) {
      qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                 &state_of(0, dom)->counter, 1);
    } else {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS, UD(flags, fn));
    }
  }
}

static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void report_at_exit(qemu_plugin_id_t id, void* p) {
  (void)id;
  (void)p;
  uint64_t open[MAX_FUNCS] = {0};
  for (int v = 0; v < n_vcpus; v++)
    for (int d = 0; d < N_DOMAINS; d++) {
      struct dstate* s = state_of((unsigned int)v, d);
      for (uint32_t i = 0; i < s->top; i++) open[s->stack[i].fn]++;
    }
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  if (!f) return;
  fprintf(f, "{\"oracle\":\"insn_oracle\",\"vcpus\":%d,\"stack_depth\":%d,\"counted_ranges\":[",
          n_vcpus, STACK_DEPTH);
  for (int i = 0; i < n_ranges; i++)
    fprintf(f, "%s[\"0x%" PRIx64 "\",\"0x%" PRIx64 "\"]", i ? "," : "", ranges[i][0], ranges[i][1]);
  uint64_t counters[N_DOMAINS] = {0};
  for (int v = 0; v < n_vcpus; v++)
    for (int d = 0; d < N_DOMAINS; d++) counters[d] += state_of((unsigned int)v, d)->counter;
  fprintf(f,
          "],\"instructions\":{\"user\":%" PRIu64 ",\"kernel\":%" PRIu64
          "},"
          "\"translated\":{\"user\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"calls\":%" PRIu64
          ",\"rets\":%" PRIu64 "},\"switches\":%" PRIu64 ",\"switch_dropped\":%" PRIu64
          ",\"functions\":[",
          counters[0], counters[1], translated[0], translated[1], instrumented_calls,
          instrumented_rets, switches, switch_dropped);
  for (int i = 0; i < n_funcs; i++) {
    struct func* fn = &funcs[i];
    fprintf(f, "%s{\"name\":", i ? "," : "");
    json_string(f, fn->name);
    fprintf(f,
            ",\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64
            "\",\"domain\":\"%s\","
            "\"calls\":%" PRIu64 ",\"total\":%" PRIu64 ",\"min\":%" PRIu64 ",\"max\":%" PRIu64
            ",\"max_level\":%" PRIu64 ",\"stack_overflow\":%" PRIu64 ",\"open\":%" PRIu64
            ",\"list_dropped\":%" PRIu64 ",\"per_call\":[",
            fn->start, fn->end, fn->domain == DOM_KERNEL ? "kernel" : "user", fn->calls, fn->total,
            fn->calls ? fn->min : 0, fn->max, fn->max_level, fn->stack_overflow, open[i],
            fn->list_dropped);
    for (uint64_t k = 0; k < fn->n_list; k++)
      fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", k ? "," : "", fn->list[2 * k], fn->list[2 * k + 1]);
    fprintf(f, "]}");
  }
  fprintf(f, "]}\n");
  fclose(f);
  if (out_path[0]) {
    FILE* o = fopen(out_path, "w");
    if (o) {
      fwrite(buf, 1, len, o);
      fclose(o);
    } else {
      qemu_plugin_outs("insn_oracle: cannot write the report to ");
      qemu_plugin_outs(out_path);
      qemu_plugin_outs("\n");
    }
  } else {
    qemu_plugin_outs(buf);
  }
  free(buf);
}

static bool parse_u64(const char* s, uint64_t* v) {
  char* end;
  if (!*s) return false;
  *v = strtoull(s, &end, 0);
  return *end == '\0';
}

/* NAME:START:END, NAME may hold ':' (parsed from the right) */
static bool parse_fn(const char* val) {
  if (n_funcs == MAX_FUNCS) return false;
  char tmp[256];
  if (strlen(val) >= sizeof tmp) return false;
  strcpy(tmp, val);
  char* c2 = strrchr(tmp, ':');
  if (!c2) return false;
  *c2 = '\0';
  char* c1 = strrchr(tmp, ':');
  if (!c1) return false;
  *c1 = '\0';
  struct func* fn = &funcs[n_funcs];
  if (!parse_u64(c1 + 1, &fn->start) || !parse_u64(c2 + 1, &fn->end) || fn->end <= fn->start)
    return false;
  snprintf(fn->name, sizeof fn->name, "%s", tmp);
  fn->domain = fn->start >= KERNEL_BASE ? DOM_KERNEL : DOM_USER;
  n_funcs++;
  return true;
}

static bool parse_range(const char* val) {
  if (n_ranges == MAX_RANGES) return false;
  char tmp[128];
  if (strlen(val) >= sizeof tmp) return false;
  strcpy(tmp, val);
  char* c = strchr(tmp, ':');
  if (!c) return false;
  *c = '\0';
  if (!parse_u64(tmp, &ranges[n_ranges][0]) || !parse_u64(c + 1, &ranges[n_ranges][1]))
    return false;
  n_ranges++;
  return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc,
                                           char** argv) {
  if (strcmp(info->target_name, "aarch64") != 0) {
    fprintf(stderr, "insn_oracle: decodes aarch64 calls and returns only (target %s)\n",
            info->target_name);
    return -1;
  }
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    const char* eq = strchr(a, '=');
    bool ok = eq != NULL;
    if (ok) {
      size_t k = (size_t)(eq - a);
      const char* val = eq + 1;
      if (k == 2 && !strncmp(a, "fn", 2))
        ok = parse_fn(val);
      else if (k == 5 && !strncmp(a, "count", 5))
        ok = parse_range(val);
      else if (k == 4 && !strncmp(a, "list", 4))
        ok = parse_u64(val, &list_cap);
      else if (k == 6 && !strncmp(a, "switch", 6)) {
        ok = parse_range(val);
        if (ok) {
          n_ranges--; /* not a counted range */
          switch_lo = ranges[n_ranges][0];
          switch_hi = ranges[n_ranges][1];
        }
      } else if (k == 3 && !strncmp(a, "out", 3))
        ok = snprintf(out_path, sizeof out_path, "%s", val) < (int)sizeof out_path;
      else
        ok = false;
    }
    if (!ok) {
      fprintf(stderr,
              "insn_oracle: bad argument '%s' (fn=NAME:START:END, count=LO:HI, list=N, "
              "out=PATH)\n",
              a);
      return -1;
    }
  }
  if (n_funcs == 0) {
    fprintf(stderr, "insn_oracle: no function (fn=NAME:START:END)\n");
    return -1;
  }
  if (n_ranges == 0) {
    bool user = false, kernel = false;
    for (int i = 0; i < n_funcs; i++) {
      if (funcs[i].domain == DOM_KERNEL)
        kernel = true;
      else
        user = true;
    }
    if (user) ranges[n_ranges][0] = 0, ranges[n_ranges++][1] = USER_TOP;
    if (kernel) ranges[n_ranges][0] = KERNEL_LOW, ranges[n_ranges++][1] = 0; /* 0: to 2^64 */
  }
  for (int i = 0; i < n_funcs; i++) {
    funcs[i].list = calloc(list_cap ? list_cap * 2 : 1, sizeof(uint64_t));
    if (!funcs[i].list) return -1;
  }
  n_vcpus = info->system_emulation ? info->system.max_vcpus : 64;
  if (n_vcpus < 1) n_vcpus = 1;
  inline_plain = info->system_emulation && info->system.max_vcpus == 1;
  states = calloc((size_t)n_vcpus * N_DOMAINS, sizeof *states);
  scratch = calloc((size_t)n_vcpus, sizeof *scratch);
  if (!states || !scratch) return -1;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, report_at_exit, NULL);
  return 0;
}
