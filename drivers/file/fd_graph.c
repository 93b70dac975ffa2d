/*
 * fd_graph.c - file events into the device graph.
 */
#include "../../engine/model/dg.h"
#include "fd.h"

#include <string.h>

static dg_kind kind_of(const char *name)
{
    for (int k = DG_KIND_NONE + 1; k < DG_KIND_OTHER; k++)
        if (!strcmp(dg_kind_name((dg_kind)k), name))
            return (dg_kind)k;
    return DG_KIND_OTHER;
}

de_rc fd_apply_event(dg_graph *g, const fd_event *ev, de_err *e)
{
    dg_kind k;
    switch (ev->op) {
    case FD_ADD:
    case FD_UPDATE:
        return dg_apply(g, ev->obj, ev->origin, &k, e);
    case FD_DELETE:
        k = kind_of(ev->kind);
        if (k == DG_KIND_OTHER)
            return DE_OK;
        return dg_remove(g, k, ev->ns, ev->name, e);
    case FD_ERROR:
    default:
        if (e && ev->err)
            *e = *ev->err;
        return ev->err ? ev->err->rc : DE_EINVAL;
    }
}
