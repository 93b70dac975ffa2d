/*
 * de.h - draengine base: the one result-code enum, the error-detail struct,
 * and the few macros every module shares.
 *
 * Error model (taken from curl's CURLcode and SQLite's result codes): every
 * fallible function returns a de_rc and, when the caller passes a de_err,
 * the first layer that fails fills it.  Outer layers may prefix context
 * (file, document, object) with de_err_prefix(); they never overwrite the
 * original reason.  Library code never prints: the CLI, the scheduler or a
 * spec decides what becomes a log line, an Event or a test failure.
 */
#ifndef DE_H
#define DE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum de_rc {
    DE_OK = 0,
    DE_ENOMEM,     /* allocation failed, or a size cap was reached */
    DE_EINVAL,     /* the input (object, flag, expression) is invalid */
    DE_EPARSE,     /* syntax error in JSON, YAML, CEL or Lua text */
    DE_ENOTFOUND,  /* a named thing does not exist */
    DE_EIO,        /* reading or writing a file or socket failed */
    DE_ERANGE,     /* a number does not fit */
    DE_ETIMEOUT,   /* a deadline passed */
    DE_EBUDGET,    /* a cost, instruction, memory or search budget ran out */
    DE_EPOLICY,    /* a Lua policy failed or was refused */
    DE_EAPI,       /* the Kubernetes API answered with an error */
    DE_ECONFLICT,  /* optimistic concurrency: the object changed under us */
    DE_EUNSAT,     /* the claims cannot be satisfied (not an input error) */
    DE_EINTERNAL,  /* a broken invariant: a bug in draengine */
    DE_RC_COUNT
} de_rc;

/* Caps shared by every module, so that no buffer grows without bound. */
#define DE_ERR_MSG_MAX   2048
#define DE_ERR_FIELD_MAX 256

typedef struct de_err {
    de_rc rc;
    char msg[DE_ERR_MSG_MAX];        /* complete human message, context included */
    char file[DE_ERR_FIELD_MAX];     /* source file (manifest or policy), if any */
    int line, col;                   /* 1-based; 0 when unknown */
    char path[DE_ERR_FIELD_MAX];     /* JSON path of the offending field, if any */
    char policy[64];                 /* policy name, when a policy failed */
    char revision[72];               /* policy revision (sha256 prefix) */
} de_err;

/* Name of a result code ("DE_EINVAL" style names are for logs; this gives a word). */
const char *de_rc_str(de_rc rc);

/* Reset an error struct to "no error". Safe on NULL. */
void de_err_clear(de_err *e);

/*
 * Record an error: sets rc and formats msg. Returns rc so callers can write
 * `return de_errf(e, DE_EINVAL, "...")`. If e is NULL only rc is returned.
 * If e already holds an error it is overwritten (the callee is the first layer).
 */
de_rc de_errf(de_err *e, de_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
de_rc de_verrf(de_err *e, de_rc rc, const char *fmt, va_list ap);

/* Prepend context to an existing message: "<prefix>: <old msg>". */
void de_err_prefix(de_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A string value for a message, the way Go's %q prints it (in quotes; ",
 * \ and control bytes escaped, NUL included), and always whole: when the
 * quoted form would pass DE_QUOTE_MAX bytes the value is described instead
 * ("a string of 5000 bytes"), because a value cut short reads as a
 * different value.  out needs DE_QUOTE_MAX + 1 bytes; returns out. */
#define DE_QUOTE_MAX 256
const char *de_quote(char *out, const char *s, size_t n);

#define DE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define DE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DE_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DE_UNUSED(x) ((void)(x))

/* Propagate a non-OK result immediately (curl's `if(result) return result;`). */
#define DE_TRY(expr)                     \
    do {                                 \
        de_rc de_try_rc_ = (expr);       \
        if (de_try_rc_ != DE_OK)         \
            return de_try_rc_;           \
    } while (0)

/* Allocation helpers that never return NULL: draengine treats malloc
 * failure of small bookkeeping blocks as fatal (abort with a message), while
 * size-capped buffers report DE_ENOMEM through their own APIs. */
void *de_xmalloc(size_t n);
void *de_xcalloc(size_t n, size_t sz);
void *de_xrealloc(void *p, size_t n);
char *de_xstrdup(const char *s);
char *de_xstrndup(const char *s, size_t n);

/* Maps the code pages of the program and its libraries once per process
 * (text.c).  Not thread-safe: called from the scheduling thread only. */
void de_map_text(void);

/* Monotonic clock in nanoseconds (for budgets and benchmarks only; never
 * for decisions). */
uint64_t de_now_ns(void);
/* Wall-clock time, Unix ns (timestamps others read: Events, Leases). */
int64_t de_wall_ns(void);

/* FNV-1a and a 64-bit mixer used by every hash table in the engine. */
uint64_t de_hash_bytes(const void *p, size_t n);
static inline uint64_t de_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The value of a hexadecimal digit (either case), -1 for anything else. */
static inline int de_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
