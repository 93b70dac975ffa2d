/*
 * al_bindcond.c - device binding conditions (KEP-5007, gates
 * DRADeviceBindingConditions and DRAResourceClaimDeviceStatus): where an
 * allocated claim stands against the conditions its devices must reach
 * before the pod may be bound.  The rules of upstream's DynamicResources
 * plugin (isClaimReadyForBinding, isClaimTimeout), shared by `serve`
 * (PreBind waits on them; Filter treats a failed or timed-out claim as not
 * available on any node, so PostFilter deallocates it) and `allocate`
 * (which shows such claims as allocated but awaiting binding conditions).
 *
 *  - Only results that carry bindingConditions count.  Such a result is
 *    pending while the claim's status.devices has no entry for its
 *    (driver, pool, device), or any of its bindingConditions is not True
 *    there.
 *  - A bindingFailureConditions condition that is True fails the claim
 *    (checked before the binding conditions, device by device in result
 *    order; the first one found is the one reported).
 *  - A pending claim has timed out once allocationTimestamp plus the
 *    binding timeout lies in the past (no timestamp: never).
 */
#include "al_int.h"

#include <stdio.h>

static const dg_device_status *device_status(const dg_claim *c, const dg_result *x)
{
    for (uint32_t i = 0; i < c->ndevices; i++) {
        const dg_device_status *d = &c->devices[i];
        if (d->device == x->device && d->driver == x->driver && d->pool == x->pool)
            return d;
    }
    return NULL;
}

static const dg_condition *condition(const al_allocator *a, const dg_device_status *d, uint32_t type,
                                     bool want_true)
{
    for (uint32_t i = 0; d && i < d->nconditions; i++)
        if (d->conditions[i].type == type)
            return !want_true || d->conditions[i].status == a->s_true ? &d->conditions[i] : NULL;
    return NULL;
}

bool al_claim_has_binding_conditions(const al_allocator *a, const dg_claim *c)
{
    if (!a->f_bind || !c || !c->allocated)
        return false;
    for (uint32_t i = 0; i < c->allocation.nresults; i++)
        if (c->allocation.results[i].nbinding_conditions)
            return true;
    return false;
}

int al_binding_state(const al_allocator *a, const dg_claim *c, int64_t now, char *why, size_t cap)
{
    if (why && cap)
        why[0] = 0;
    if (!a->f_bind || !c || !c->allocated)
        return c && !c->allocated && a->f_bind ? AL_BIND_PENDING : AL_BIND_READY;
    bool pending = false;
    for (uint32_t i = 0; i < c->allocation.nresults; i++) {
        const dg_result *x = &c->allocation.results[i];
        if (!x->nbinding_conditions)
            continue;
        const dg_device_status *d = device_status(c, x);
        if (!d) {
            pending = true;
            continue;
        }
        for (uint32_t k = 0; k < x->nbinding_failure_conditions; k++) {
            const dg_condition *f = condition(a, d, x->binding_failure_conditions[k], true);
            if (f) {
                if (why)
                    snprintf(why, cap, "claim=%s, reason=%s, message=\"%s\"", al_str(a, c->meta.name),
                             al_str(a, f->reason), al_str(a, f->message));
                return AL_BIND_FAILED;
            }
        }
        for (uint32_t k = 0; k < x->nbinding_conditions && !pending; k++)
            pending = !condition(a, d, x->binding_conditions[k], true);
    }
    if (!pending)
        return AL_BIND_READY;
    int64_t ts = c->allocation.allocation_time;
    if (ts && ts + (int64_t)(a->opts.binding_timeout_ns / 1000000000ull) < now) {
        if (why)
            snprintf(why, cap, "claim=%s", al_str(a, c->meta.name));
        return AL_BIND_TIMEOUT;
    }
    return AL_BIND_PENDING;
}

void al_binding_pending(const al_allocator *a, const dg_claim *c, de_buf *b)
{
    for (uint32_t i = 0; a->f_bind && c && c->allocated && i < c->allocation.nresults; i++) {
        const dg_result *x = &c->allocation.results[i];
        const dg_device_status *d = device_status(c, x);
        for (uint32_t k = 0; k < x->nbinding_conditions; k++)
            if (!condition(a, d, x->binding_conditions[k], true))
                de_buf_printf(b, "%s%s/%s/%s:%s", b->len ? " " : "", al_str(a, x->driver), al_str(a, x->pool),
                              al_str(a, x->device), al_str(a, x->binding_conditions[k]));
    }
}

void al_set_now(al_allocator *a, int64_t unix_seconds)
{
    a->now = unix_seconds;
}
