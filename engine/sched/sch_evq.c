/*
 * sch_evq.c - the queue of Events waiting for a binding worker
 * (sch_evq.h says why they wait).
 */
#define _POSIX_C_SOURCE 200809L
#include "sch_evq.h"

#include "../base/de.h"
#include "../base/log.h"

#include <stdlib.h>
#include <string.h>

/* kc_event_create cuts reason and action at 128 bytes and the note at
 * 1 KiB; one byte more of each keeps its cut where it was. */
#define EV_SHORT_MAX 129u
#define EV_NOTE_MAX 1025u

struct sch_evitem {
    sch_evitem *next;
    json_t *regarding;
    int64_t when_ns;
    char *type, *reason, *action, *note; /* into text */
    char text[];
};

static size_t cut_len(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    return n < max ? n : max;
}

static char *put(char **at, const char *s, size_t n)
{
    char *start = *at;
    if (n)
        memcpy(start, s, n);
    start[n] = '\0';
    *at += n + 1;
    return start;
}

void sch_evq_push(sch_evq *q, json_t *regarding, const char *type, const char *reason, const char *action,
                  const char *note)
{
    size_t lt = cut_len(type, EV_SHORT_MAX), lr = cut_len(reason, EV_SHORT_MAX),
           la = cut_len(action, EV_SHORT_MAX), ln = cut_len(note, EV_NOTE_MAX);
    sch_evitem *it = de_xmalloc(sizeof *it + lt + lr + la + ln + 4);
    char *at = it->text;
    it->type = put(&at, type, lt);
    it->reason = put(&at, reason, lr);
    it->action = put(&at, action, la);
    it->note = put(&at, note, ln);
    it->next = NULL;
    it->regarding = json_incref(regarding);
    it->when_ns = de_wall_ns();
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    q->n++;
}

sch_evitem *sch_evq_pop(sch_evq *q)
{
    sch_evitem *it = q->head;
    if (!it)
        return NULL;
    q->head = it->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    q->writing++;
    return it;
}

static void item_free(sch_evitem *it)
{
    json_decref(it->regarding);
    free(it);
}

bool sch_evq_write(kc_client *cl, sch_evitem *it, const char *identity, const char *why)
{
    bool ok = false;
    if (why) {
        DE_INFO(1, "event %s not written: %s", it->reason, why);
    } else {
        kc_event ev = {it->regarding, it->type,  it->reason, it->action, it->note,
                       "draengine",   identity, it->when_ns};
        de_err e;
        de_err_clear(&e);
        ok = kc_event_create(cl, &ev, &e) == DE_OK;
        if (!ok)
            DE_INFO(2, "event not written: %s", e.msg);
    }
    item_free(it);
    return ok;
}

void sch_evq_done(sch_evq *q, bool written, bool dropped)
{
    q->writing--;
    if (written)
        q->written++;
    else if (dropped)
        q->dropped++;
    else
        q->failed++;
}

void sch_evq_clear(sch_evq *q)
{
    while (q->head) {
        sch_evitem *it = q->head;
        q->head = it->next;
        item_free(it);
        q->dropped++;
    }
    q->tail = NULL;
    q->n = 0;
}
