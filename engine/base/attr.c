/*
 * attr.c - device view lookups.  Devices hold at most 32 attributes and
 * capacities, so a linear scan over interned ids beats any index.
 */
#include "attr.h"

const de_attr *de_devview_attr(const de_devview *d, uint32_t domain, uint32_t name)
{
    for (uint32_t i = 0; i < d->nderived; i++)
        if (d->derived[i].name == name && d->derived[i].domain == domain)
            return &d->derived[i];
    for (uint32_t i = 0; i < d->nattrs; i++)
        if (d->attrs[i].name == name && d->attrs[i].domain == domain)
            return &d->attrs[i];
    return NULL;
}

const de_cap *de_devview_cap(const de_devview *d, uint32_t domain, uint32_t name)
{
    for (uint32_t i = 0; i < d->ncaps; i++)
        if (d->caps[i].name == name && d->caps[i].domain == domain)
            return &d->caps[i];
    return NULL;
}
