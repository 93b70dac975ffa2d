/*
 * types.c - type unification for the checker, as cel-go's checker/types.go
 * defines it: type parameters bound by a substitution, `dyn` and
 * google.protobuf.Any assignable both ways, null assignable to the
 * nullable kinds, lists and maps by their parameters, any type value to any
 * other.  The substitution is an array indexed by type variable with an
 * undo log, so a failed trial assignment is rolled back without copying
 * the whole mapping (cel-go copies it).
 */
#include "cel_int.h"

#include <stdlib.h>

void cel_u_free(cel_unify *c)
{
    free(c->sub);
    free(c->undo);
}

const cel_type *cel_u_mktype(cel_unify *c, int k, const cel_type *p0, const cel_type *p1)
{
    cel_type *t = de_arena_zalloc(c->a, sizeof *t);
    if (!t) {
        c->oom = true;
        return &cel_t_error;
    }
    t->k = (uint8_t)k;
    t->p0 = p0;
    t->p1 = p1;
    return t;
}

const cel_type *cel_u_fresh(cel_unify *c)
{
    if (c->nvars == c->capvars) {
        uint32_t nc = c->capvars ? c->capvars * 2 : 64;
        c->sub = de_xrealloc(c->sub, nc * sizeof *c->sub);
        c->capvars = nc;
    }
    c->sub[c->nvars] = NULL;
    cel_type *t = de_arena_zalloc(c->a, sizeof *t);
    if (!t) {
        c->oom = true;
        return &cel_t_error;
    }
    t->k = TK_PARAM;
    t->id = c->nvars++;
    return t;
}

static const cel_type *find(cel_unify *c, const cel_type *t)
{
    if (t->k == TK_PARAM && t->id < c->nvars)
        return c->sub[t->id];
    return NULL;
}

static void bind(cel_unify *c, const cel_type *param, const cel_type *t)
{
    if (c->nundo == c->capundo) {
        uint32_t nc = c->capundo ? c->capundo * 2 : 64;
        c->undo = de_xrealloc(c->undo, nc * sizeof *c->undo);
        c->capundo = nc;
    }
    c->undo[c->nundo].id = param->id;
    c->undo[c->nundo].old = c->sub[param->id];
    c->nundo++;
    c->sub[param->id] = t;
}

void cel_u_rollback(cel_unify *c, uint32_t mark)
{
    while (c->nundo > mark) {
        c->nundo--;
        c->sub[c->undo[c->nundo].id] = c->undo[c->nundo].old;
    }
}

bool cel_t_is_dyn(const cel_type *t) { return t->k == TK_DYN || t->k == TK_ANY; }
bool cel_t_is_dyn_or_err(const cel_type *t) { return cel_t_is_dyn(t) || t->k == TK_ERROR; }

bool cel_t_exact(const cel_type *a, const cel_type *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->k != b->k)
        return false;
    switch (a->k) {
    case TK_PARAM: return a->id == b->id;
    case TK_LIST: return cel_t_exact(a->p0, b->p0);
    case TK_MAP: return cel_t_exact(a->p0, b->p0) && cel_t_exact(a->p1, b->p1);
    case TK_TYPE: return (!a->p0 && !b->p0) || (a->p0 && b->p0 && cel_t_exact(a->p0, b->p0));
    default: return true;
    }
}

static bool less_specific(const cel_type *t1, const cel_type *t2)
{
    if (cel_t_is_dyn(t1) || t1->k == TK_PARAM)
        return true;
    if (cel_t_is_dyn(t2) || t2->k == TK_PARAM)
        return false;
    if (t1->k != t2->k)
        return false;
    switch (t1->k) {
    case TK_LIST: return less_specific(t1->p0, t2->p0);
    case TK_MAP: return less_specific(t1->p0, t2->p0) && less_specific(t1->p1, t2->p1);
    case TK_TYPE: return true;
    default: return cel_t_exact(t1, t2);
    }
}

const cel_type *cel_t_most_general(const cel_type *t1, const cel_type *t2)
{
    return less_specific(t1, t2) ? t1 : t2;
}

static bool not_referenced_in(cel_unify *c, const cel_type *t, const cel_type *within)
{
    if (!within)
        return true;
    if (cel_t_exact(t, within))
        return false;
    switch (within->k) {
    case TK_PARAM: {
        const cel_type *s = find(c, within);
        return !s || not_referenced_in(c, t, s);
    }
    case TK_LIST:
    case TK_MAP:
    case TK_TYPE:
        return not_referenced_in(c, t, within->p0) && not_referenced_in(c, t, within->p1);
    default:
        return true;
    }
}

static bool nullable(const cel_type *t)
{
    return t->k == TK_NULL || t->k == TK_QTY || t->k == TK_SEMVER || t->k == TK_DEVICE ||
           t->k == TK_ANY;
}



static bool valid_subst(cel_unify *c, const cel_type *t1, const cel_type *t2, bool *has)
{
    if (t1->k == t2->k && cel_t_exact(t1, t2)) {
        *has = true;
        return true;
    }
    const cel_type *s = find(c, t2);
    if (s) {
        *has = true;
        if (t1->k == s->k && cel_t_exact(t1, s))
            return true;
        if (cel_u_assignable_raw(c, t1, s)) {
            const cel_type *nt = cel_t_most_general(t1, s);
            if (not_referenced_in(c, t2, nt))
                bind(c, t2, nt);
            return true;
        }
        return false;
    }
    *has = false;
    if (not_referenced_in(c, t2, t1)) {
        bind(c, t2, t1);
        return true;
    }
    return false;
}

/* t1 assignable to t2 (cel-go internalIsAssignable) */
bool cel_u_assignable_raw(cel_unify *c, const cel_type *t1, const cel_type *t2)
{
    bool has;
    if (t2->k == TK_PARAM) {
        if (valid_subst(c, t1, t2, &has))
            return true;
        if (has)
            return false;
    }
    if (t1->k == TK_PARAM)
        return valid_subst(c, t2, t1, &has);
    if (cel_t_is_dyn_or_err(t1) || cel_t_is_dyn_or_err(t2))
        return true;
    if (t1->k == TK_NULL)
        return nullable(t2);
    if (t2->k == TK_NULL)
        return nullable(t1);
    switch (t1->k) {
    case TK_TYPE: return t2->k == TK_TYPE;
    case TK_LIST: return t2->k == TK_LIST && cel_u_assignable_raw(c, t1->p0, t2->p0);
    case TK_MAP:
        return t2->k == TK_MAP && cel_u_assignable_raw(c, t1->p0, t2->p0) &&
               cel_u_assignable_raw(c, t1->p1, t2->p1);
    default: return t1->k == t2->k;
    }
}

bool cel_u_assignable(cel_unify *c, const cel_type *t1, const cel_type *t2)
{
    uint32_t mark = c->nundo;
    if (cel_u_assignable_raw(c, t1, t2))
        return true;
    cel_u_rollback(c, mark);
    return false;
}

const cel_type *cel_u_subst(cel_unify *c, const cel_type *t, bool to_dyn)
{
    if (!t)
        return t;
    const cel_type *s = find(c, t);
    if (s)
        return cel_u_subst(c, s, to_dyn);
    switch (t->k) {
    case TK_PARAM:
        return to_dyn ? &cel_t_dyn : t;
    case TK_LIST: {
        const cel_type *e = cel_u_subst(c, t->p0, to_dyn);
        return e == t->p0 ? t : cel_u_mktype(c, TK_LIST, e, NULL);
    }
    case TK_MAP: {
        const cel_type *k = cel_u_subst(c, t->p0, to_dyn), *v = cel_u_subst(c, t->p1, to_dyn);
        return k == t->p0 && v == t->p1 ? t : cel_u_mktype(c, TK_MAP, k, v);
    }
    case TK_TYPE: {
        if (!t->p0)
            return t;
        const cel_type *e = cel_u_subst(c, t->p0, to_dyn);
        return e == t->p0 ? t : cel_u_mktype(c, TK_TYPE, e, NULL);
    }
    default:
        return t;
    }
}

/* Instantiate an overload's table type with the call site's fresh vars. */
const cel_type *cel_u_inst(cel_unify *c, const cel_type *t, const cel_type **vars)
{
    switch (t->k) {
    case TK_PARAM: return vars[t->id];
    case TK_LIST: return cel_u_mktype(c, TK_LIST, cel_u_inst(c, t->p0, vars), NULL);
    case TK_MAP: return cel_u_mktype(c, TK_MAP, cel_u_inst(c, t->p0, vars), cel_u_inst(c, t->p1, vars));
    case TK_TYPE: return t->p0 ? cel_u_mktype(c, TK_TYPE, cel_u_inst(c, t->p0, vars), NULL) : t;
    default: return t;
    }
}
