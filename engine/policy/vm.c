/*
 * vm.c - policy VMs: the capped allocator, the budget hook and protected
 * calls that turn every failure into a reason plus file:line.
 *
 * Budgets.  Time and instructions are bounded by a LUA_MASKCOUNT hook that
 * fires every POL_HOOK_EVERY instructions, adds them to the call's count
 * and reads the clock.  Once a limit is passed the call is "tripped": the
 * hook re-arms itself on every line and every instruction and raises each
 * time it runs, so a policy that catches the error with pcall (or hides in a
 * coroutine, or in an xpcall handler) is stopped again at its next line;
 * this is what Redis does after SCRIPT KILL.  Hooks do not run inside C
 * functions, which is why every library function whose work the caller
 * controls charges that work through pol_work (bounded.c, sb_table.c), and
 * why the allocator reads the clock every ALLOC_CLOCK_BYTES and refuses
 * strings longer than POL_STRING_FACTOR x max_subject.
 *
 * Memory.  Each VM has its own lua_Alloc that refuses to grow past the cap
 * while a call runs (HAProxy's tune.lua.maxmem).  A refusal also trips the
 * call, so a policy cannot catch the memory error and carry on.  Outside
 * calls the allocator never refuses: only the host's own C code runs then,
 * and an unprotected memory error there would abort the process.
 *
 * Between calls the hook stays armed with an already-expired budget: no
 * policy code is supposed to run then (the sandbox refuses __gc
 * finalizers), and if some does it is stopped within POL_HOOK_EVERY
 * instructions.
 */
#include "pol_int.h"
#include "../base/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pol_reason_str(pol_reason r)
{
    switch (r) {
    case POL_R_NONE: return "ok";
    case POL_R_ERROR: return "error";
    case POL_R_INSTRUCTIONS: return "instructions";
    case POL_R_TIMEOUT: return "timeout";
    case POL_R_MEMORY: return "memory";
    case POL_R_RESULT: return "result";
    default: return "unknown";
    }
}

void pol_config_default(pol_config *c)
{
    memset(c, 0, sizeof *c);
    c->limits.instructions = 1000000;
    c->limits.deadline_ns = 100ull * 1000000;
    c->limits.load_instructions = 10000000;
    c->limits.load_deadline_ns = 500ull * 1000000;
    c->limits.memory = (size_t)64 << 20;
    c->limits.max_string = 64;
    c->limits.max_subject = 64 << 10;
    c->failure = POL_FAIL_CLOSED;
}

/* Bytes allocated between two reads of the clock by the allocator: C code
 * that builds large results (gsub, concat, format, a luaL_Buffer) allocates
 * as it works, so this bounds how far past the deadline it can run. */
#define ALLOC_CLOCK_BYTES ((size_t)256 << 10)

static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    pol_vm *vm = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        vm->mem_used -= old;
        return NULL;
    }
    if (nsize > old && vm->state == POL_VM_CALL) {
        if (vm->mem_used - old + nsize > vm->mem_limit) {
            if (vm->tripped == POL_R_NONE)
                vm->tripped = POL_R_MEMORY;
            return NULL;
        }
        /* a new string object (Lua passes its type as osize): at most
         * POL_STRING_FACTOR x max_subject, so no single VM instruction
         * (==, <, ..) works on more than that */
        size_t smax = vm->cfg->limits.max_subject * POL_STRING_FACTOR;
        if (!ptr && osize == LUA_TSTRING && nsize > smax + 64) {
            if (vm->tripped == POL_R_NONE) {
                vm->tripped = POL_R_MEMORY;
                snprintf(vm->tripwhy, sizeof vm->tripwhy, "a string of %zu bytes; at most %zu bytes per string",
                         nsize, smax);
            }
            return NULL;
        }
        vm->alloc_unclocked += nsize - old;
        if (vm->alloc_unclocked >= ALLOC_CLOCK_BYTES) {
            vm->alloc_unclocked = 0;
            if (vm->tripped == POL_R_NONE && de_now_ns() > vm->deadline)
                vm->tripped = POL_R_TIMEOUT;
        }
        /* past the deadline, large blocks are refused: C code that was
         * building a result stops here (small ones still pass, so the
         * error message can be made) */
        if (vm->tripped == POL_R_TIMEOUT && nsize - old >= 4096)
            return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return NULL;
    vm->mem_used = vm->mem_used - old + nsize;
    if (vm->mem_used > vm->mem_peak)
        vm->mem_peak = vm->mem_used;
    return p;
}

static const char *trip_base(pol_vm *vm, char *buf, size_t cap);

static int vm_panic(lua_State *L)
{
    /* Every entry into a policy VM is protected; reaching here is a bug. */
    const char *m = lua_tostring(L, -1);
    fprintf(stderr, "draengine: unprotected error in a policy VM: %s\n", m ? m : "?");
    abort();
}

static const char *trip_text(pol_vm *vm, char *buf, size_t cap)
{
    char base[160];
    if (vm->tripped == POL_R_MEMORY && vm->tripwhy[0])
        snprintf(base, sizeof base, "memory limit exceeded"); /* the per-string one: not the cap */
    else
        trip_base(vm, base, sizeof base);
    if (vm->tripwhy[0])
        snprintf(buf, cap, "%s: %s", base, vm->tripwhy);
    else
        snprintf(buf, cap, "%s", base);
    return buf;
}

static const char *trip_base(pol_vm *vm, char *buf, size_t cap)
{
    switch (vm->tripped) {
    case POL_R_INSTRUCTIONS:
        snprintf(buf, cap, "instruction budget exceeded (limit %llu instructions)",
                 (unsigned long long)vm->instr_limit);
        break;
    case POL_R_TIMEOUT:
        if (vm->state == POL_VM_IDLE)
            snprintf(buf, cap, "policy code ran outside a hook call");
        else
            snprintf(buf, cap, "deadline exceeded (limit %llu ms)",
                     (unsigned long long)(vm->deadline_ns / 1000000));
        break;
    case POL_R_MEMORY:
        snprintf(buf, cap, "memory cap exceeded (limit %zu bytes)", vm->mem_limit);
        break;
    default:
        snprintf(buf, cap, "budget exceeded");
    }
    return buf;
}

static void count_hook(lua_State *L, lua_Debug *ar);

/* Tripped: from now on raise at every line and every instruction, so that
 * no pcall inside the policy can swallow the stop.  ar: the frame to name
 * (NULL: none). */
static int raise_tripped(lua_State *L, pol_vm *vm, lua_Debug *ar)
{
    lua_sethook(L, count_hook, LUA_MASKCOUNT | LUA_MASKLINE, 1);
    char why[320];
    trip_text(vm, why, sizeof why);
    if (ar && lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
        lua_pushfstring(L, "%s:%d: %s", ar->short_src, ar->currentline, why);
    else
        lua_pushstring(L, why);
    return lua_error(L);
}

static void count_hook(lua_State *L, lua_Debug *ar)
{
    pol_vm *vm = pol_vm_of(L);
    if (vm->tripped == POL_R_NONE) {
        if (ar->event == LUA_HOOKCOUNT)
            vm->instr += (uint64_t)lua_gethookcount(L);
        if (vm->state != POL_VM_CALL)
            vm->tripped = POL_R_TIMEOUT;
        else if (vm->instr > vm->instr_limit)
            vm->tripped = POL_R_INSTRUCTIONS;
        else if ((!vm->exact || (vm->instr & 1023) == 0) && de_now_ns() > vm->deadline)
            vm->tripped = POL_R_TIMEOUT;
        else
            return;
    }
    raise_tripped(L, vm, ar);
}

/* From a C function: name the Lua frame that called it. */
static int raise_tripped_c(lua_State *L, pol_vm *vm)
{
    lua_Debug ar;
    return raise_tripped(L, vm, lua_getstack(L, 1, &ar) ? &ar : NULL);
}

void pol_work(lua_State *L, uint64_t units, bool clock)
{
    pol_vm *vm = pol_vm_of(L);
    if (vm->state != POL_VM_CALL)
        return;
    if (vm->tripped != POL_R_NONE)
        raise_tripped_c(L, vm);
    vm->instr += units;
    vm->unclocked += units;
    if (vm->instr > vm->instr_limit) {
        vm->tripped = POL_R_INSTRUCTIONS;
        raise_tripped_c(L, vm);
    }
    if (clock || vm->unclocked >= POL_HOOK_EVERY) {
        vm->unclocked = 0;
        if (de_now_ns() > vm->deadline) {
            vm->tripped = POL_R_TIMEOUT;
            raise_tripped_c(L, vm);
        }
    }
}

void pol_work_need(lua_State *L, uint64_t units, const char *what)
{
    pol_vm *vm = pol_vm_of(L);
    if (vm->state != POL_VM_CALL)
        return;
    if (vm->tripped != POL_R_NONE)
        raise_tripped_c(L, vm);
    if (units > vm->instr_limit || vm->instr + units > vm->instr_limit) {
        vm->tripped = POL_R_INSTRUCTIONS;
        snprintf(vm->tripwhy, sizeof vm->tripwhy, "%s: %llu work units, %llu left", what,
                 (unsigned long long)units,
                 (unsigned long long)(vm->instr < vm->instr_limit ? vm->instr_limit - vm->instr : 0));
        raise_tripped_c(L, vm);
    }
}

int pol_trip(lua_State *L, pol_reason r, const char *fmt, ...)
{
    pol_vm *vm = pol_vm_of(L);
    if (vm->state != POL_VM_CALL)
        return pol_raise(L, "%s", "library call refused outside a hook call");
    if (vm->tripped == POL_R_NONE) {
        vm->tripped = r;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(vm->tripwhy, sizeof vm->tripwhy, fmt, ap);
        va_end(ap);
    }
    return raise_tripped_c(L, vm);
}

static int install_tramp(lua_State *L)
{
    pol_sandbox_install(L, lua_toboolean(L, 1));
    return 0;
}

de_rc pol_vm_open(pol_vm *vm, const pol_config *cfg, de_interner *in, const char *name,
                  const char *revision, const char *file, bool test, de_err *e)
{
    memset(vm, 0, sizeof *vm);
    vm->cfg = cfg;
    vm->in = in;
    vm->name = name;
    vm->revision = revision;
    vm->file = file;
    vm->test = test;
    vm->mem_limit = cfg->limits.memory;
    vm->scratch = de_arena_new_sized(64u << 20, 4096);
    vm->seed_base = de_hash_bytes(revision ? revision : "", revision ? strlen(revision) : 0);
    vm->L = lua_newstate(vm_alloc, vm);
    if (!vm->L) {
        de_arena_free(vm->scratch);
        vm->scratch = NULL;
        return de_errf(e, DE_ENOMEM, "cannot create a Lua state");
    }
    *(pol_vm **)lua_getextraspace(vm->L) = vm;
    lua_atpanic(vm->L, vm_panic);
    lua_setwarnf(vm->L, NULL, NULL);
    /* Installing the sandbox allocates; do it protected so that a bug is
     * an error, not a panic. */
    vm->state = POL_VM_IDLE;
    lua_pushcfunction(vm->L, install_tramp);
    lua_pushboolean(vm->L, test);
    if (lua_pcall(vm->L, 1, 0, 0) != LUA_OK) {
        de_errf(e, DE_EINTERNAL, "cannot install the policy sandbox: %s", lua_tostring(vm->L, -1));
        pol_vm_close(vm);
        return e ? e->rc : DE_EINTERNAL;
    }
    lua_sethook(vm->L, count_hook, LUA_MASKCOUNT, POL_HOOK_EVERY);
    return DE_OK;
}

void pol_vm_close(pol_vm *vm)
{
    pol_trace_free(vm);
    if (vm->L) {
        /* No finalizers exist (setmetatable refuses __gc); closing only frees. */
        lua_sethook(vm->L, NULL, 0, 0);
        lua_close(vm->L);
        vm->L = NULL;
    }
    if (vm->scratch)
        de_arena_free(vm->scratch);
    vm->scratch = NULL;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void pol_vm_seed(pol_vm *vm, uint64_t seed)
{
    uint64_t x = seed ^ vm->seed_base;
    for (int i = 0; i < 4; i++)
        vm->rng[i] = splitmix(&x);
}

void pol_vm_begin(pol_vm *vm, bool load, uint64_t seed)
{
    const pol_limits *lim = &vm->cfg->limits;
    vm->state = POL_VM_CALL;
    vm->tripped = POL_R_NONE;
    vm->instr = 0;
    vm->instr_limit = load ? lim->load_instructions : lim->instructions;
    vm->deadline_ns = load ? lim->load_deadline_ns : lim->deadline_ns;
    vm->deadline = de_now_ns() + vm->deadline_ns;
    vm->unclocked = 0;
    vm->alloc_unclocked = 0;
    vm->tripwhy[0] = 0;
    vm->call_gen++;
    vm->log_lines = 0;
    vm->errmsg[0] = vm->errfile[0] = 0;
    vm->errline = 0;
    vm->result_err = false;
    pol_vm_seed(vm, seed);
    lua_sethook(vm->L, count_hook, LUA_MASKCOUNT, vm->exact ? 1 : POL_HOOK_EVERY);
}

void pol_vm_end(pol_vm *vm)
{
    vm->instr_total += vm->instr;
    vm->state = POL_VM_IDLE;
    vm->call_gen++;
    vm->tripped = POL_R_NONE;
    vm->tripwhy[0] = 0;
    lua_sethook(vm->L, count_hook, LUA_MASKCOUNT, POL_HOOK_EVERY);
}

/* Where did it happen: the innermost frame of the policy's own file, else
 * the innermost Lua frame. */
static void locate(lua_State *L, pol_vm *vm)
{
    lua_Debug ar;
    char first_src[DE_ERR_FIELD_MAX] = "";
    int first_line = 0;
    size_t flen = vm->file ? strlen(vm->file) : 0;
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
            continue;
        const char *src = ar.source[0] == '@' ? ar.source + 1 : ar.short_src;
        if (!first_line) {
            snprintf(first_src, sizeof first_src, "%s", src);
            first_line = ar.currentline;
        }
        if (flen && ar.source[0] == '@' && !strcmp(ar.source + 1, vm->file)) {
            snprintf(vm->errfile, sizeof vm->errfile, "%s", src);
            vm->errline = ar.currentline;
            return;
        }
    }
    snprintf(vm->errfile, sizeof vm->errfile, "%s", first_src);
    vm->errline = first_line;
}

static int msgh(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    const char *m = NULL;
    size_t n = 0;
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
        m = lua_tolstring(L, 1, &n);
    if (m) /* policy text, bound for logs, conditions and Events */
        de_utf8_printable(vm->errmsg, sizeof vm->errmsg, m, n);
    else
        /* Never call __tostring here: it is policy code. */
        snprintf(vm->errmsg, sizeof vm->errmsg, "(error object is a %s value)",
                 luaL_typename(L, 1));
    if (!vm->result_err)
        locate(L, vm);
    return 1;
}

pol_reason pol_vm_pcall(pol_vm *vm, int nargs, int nres)
{
    lua_State *L = vm->L;
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, msgh);
    lua_insert(L, base);
    int st = lua_pcall(L, nargs, nres, base);
    lua_remove(L, base);
    if (st == LUA_OK && vm->tripped == POL_R_NONE)
        return POL_R_NONE;
    pol_reason r = vm->tripped != POL_R_NONE ? vm->tripped
                   : st == LUA_ERRMEM        ? POL_R_MEMORY
                   : vm->result_err          ? POL_R_RESULT
                                             : POL_R_ERROR;
    if (st == LUA_OK) {
        /* Tripped by the allocator and then recovered by an emergency GC:
         * still over budget. */
        lua_pop(L, nres == LUA_MULTRET ? 0 : nres);
        char why[320];
        snprintf(vm->errmsg, sizeof vm->errmsg, "%s", trip_text(vm, why, sizeof why));
        return r;
    }
    if (st == LUA_ERRMEM && !vm->errmsg[0]) {
        char why[320];
        /* a refusal by the allocator after the deadline is the timeout's */
        if (vm->tripped == POL_R_NONE)
            vm->tripped = POL_R_MEMORY;
        snprintf(vm->errmsg, sizeof vm->errmsg, "%s", trip_text(vm, why, sizeof why));
    }
    if (st == LUA_ERRERR && !vm->errmsg[0])
        snprintf(vm->errmsg, sizeof vm->errmsg, "error in error handling");
    if (r != POL_R_ERROR && r != POL_R_RESULT) {
        /* Keep the budget text even when a later error handler replaced
         * the message with something else. */
        char why[320];
        trip_text(vm, why, sizeof why);
        if (!strstr(vm->errmsg, why)) {
            char loc[DE_ERR_FIELD_MAX + 16] = "";
            if (vm->errline)
                snprintf(loc, sizeof loc, "%s:%d: ", vm->errfile, vm->errline);
            snprintf(vm->errmsg, sizeof vm->errmsg, "%s%s", loc, why);
        }
    }
    lua_pop(L, 1);
    return r;
}

de_rc pol_vm_error(const pol_vm *vm, pol_reason r, const char *hook, de_err *e)
{
    if (!e)
        return DE_EPOLICY;
    de_rc rc = r == POL_R_INSTRUCTIONS || r == POL_R_MEMORY ? DE_EBUDGET
               : r == POL_R_TIMEOUT                         ? DE_ETIMEOUT
                                                            : DE_EPOLICY;
    /* The Lua message usually starts with "file:line: "; keep it, and say
     * which policy, revision and hook it was. */
    de_errf(e, rc, "policy %s (revision %.12s)%s%s: %s: %s", vm->name ? vm->name : "?",
            vm->revision ? vm->revision : "", hook ? " hook " : "", hook ? hook : "",
            pol_reason_str(r), vm->errmsg);
    snprintf(e->file, sizeof e->file, "%s", vm->errfile[0] ? vm->errfile : (vm->file ? vm->file : ""));
    e->line = vm->errline;
    snprintf(e->policy, sizeof e->policy, "%s", vm->name ? vm->name : "");
    snprintf(e->revision, sizeof e->revision, "%s", vm->revision ? vm->revision : "");
    return rc;
}

int pol_raise(lua_State *L, const char *fmt, ...)
{
    /* vsnprintf, not lua_pushvfstring: messages use %zu, %.3g and friends */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}
