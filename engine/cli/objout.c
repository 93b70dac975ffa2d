/*
 * objout.c - see objout.h.
 */
#include "objout.h"

#include "../base/buf.h"
#include "../base/doc.h"

#include <stdlib.h>
#include <string.h>

bool cli_ofmt_parse(const char *s, cli_ofmt *out)
{
    if (!strcmp(s, "yaml")) {
        *out = CLI_OFMT_YAML;
        return true;
    }
    if (!strcmp(s, "json")) {
        *out = CLI_OFMT_JSON;
        return true;
    }
    return false;
}

de_rc cli_yaml_write(FILE *f, const char *prefix, json_t *doc, size_t cap, de_err *e)
{
    de_buf b;
    de_buf_init(&b, cap);
    de_rc rc = de_yaml_emit(doc, &b, e);
    if (rc == DE_OK) {
        fputs(prefix, f);
        fwrite(b.p ? b.p : "", 1, b.len, f);
    }
    de_buf_free(&b);
    return rc;
}

void cli_objout_begin(cli_objout *o, FILE *f, cli_ofmt fmt)
{
    o->f = f;
    o->fmt = fmt;
    o->n = 0;
    if (fmt == CLI_OFMT_JSON)
        fputs("{\n  \"apiVersion\": \"v1\",\n  \"items\": [", f);
}

de_rc cli_objout_write(void *ctx, json_t *obj, de_err *e)
{
    cli_objout *o = ctx;
    if (o->fmt == CLI_OFMT_YAML) {
        DE_TRY(cli_yaml_write(o->f, "---\n", obj, CLI_OBJOUT_MAX, e));
        o->n++;
        return ferror(o->f) ? de_errf(e, DE_EIO, "write failed") : DE_OK;
    }
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text)
        return de_errf(e, DE_ENOMEM, "cannot serialize object");
    {
        fputs(o->n ? ",\n    " : "\n    ", o->f);
        for (const char *p = text; *p; p++) {
            fputc(*p, o->f);
            if (*p == '\n')
                fputs("    ", o->f);
        }
    }
    free(text);
    o->n++;
    if (ferror(o->f))
        return de_errf(e, DE_EIO, "write failed");
    return DE_OK;
}

de_rc cli_objout_end(cli_objout *o, de_err *e)
{
    if (o->fmt == CLI_OFMT_JSON)
        fputs(o->n ? "\n  ],\n  \"kind\": \"List\"\n}\n" : "],\n  \"kind\": \"List\"\n}\n", o->f);
    if (fflush(o->f) != 0 || ferror(o->f))
        return de_errf(e, DE_EIO, "write failed");
    return DE_OK;
}
