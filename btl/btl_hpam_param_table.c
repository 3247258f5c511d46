/*
 * Prints the README's table of btl/hpam's MCA parameters from their one
 * description (the knob table, hpam_knobs.h, and btl_hpam_param_info.c):
 * name, the BTL's default (and the native API's and UCX's where it differs)
 * and the help as `ompi_info --param btl hpam --level 9` shows it.
 * tests/btl/readme_params.sh checks README.md against it (make check) and
 * rewrites README.md's table (make update-readme-params).
 */
#include <stdbool.h>
#include <stdio.h>

#include "btl_hpam_param_info.h"
#include "hpam_frontend.h"

/* A value of a knob of type t, as a README reader would write it. */
static void print_value(hpam_knob_type_t t, hpam_knob_value_t v)
{
    switch (t) {
    case HPAM_KNOB_BOOL: fputs(v.i ? "true" : "false", stdout); break;
    case HPAM_KNOB_REAL: printf("%g", v.r); break;
    case HPAM_KNOB_CHOICE: fputs(v.s, stdout); break;
    default: printf("%lld", (long long)v.i);
    }
}

/* Text in a table cell: a '|' would end it. */
static void print_cell(const char *s)
{
    for (; *s; ++s) {
        if ('|' == *s) putchar('\\');
        putchar(*s);
    }
}

static void print_row(const hpam_knob_info_t *k, int knob, hpam_knob_value_t dflt,
                      const char *scope)
{
    char help[1024];
    mca_btl_hpam_param_help(k, knob, help, sizeof help);
    printf("| `btl_hpam_%s` | ", k->name);
    print_value(k->type, dflt);
    const bool whole = k->type == HPAM_KNOB_UNSIGNED || k->type == HPAM_KNOB_POWER2;
    if (knob >= 0 && whole) {
        const hpam_knob_value_t core = hpam_knob_default((size_t)knob);
        const hpam_knob_value_t ucx = hpam_ucx_knob_default((size_t)knob);
        if (core.i == ucx.i && core.i != dflt.i) {
            fputs(" (native API, UCX: ", stdout);
            print_value(k->type, core);
            putchar(')');
        } else if (core.i != ucx.i) {
            const char *sep = " (";
            if (core.i != dflt.i) {
                fputs(" (native API: ", stdout);
                print_value(k->type, core);
                sep = "; ";
            }
            if (ucx.i != dflt.i) {
                printf("%sUCX: ", sep);
                print_value(k->type, ucx);
            }
            putchar(')');
        }
    }
    printf(" | %s", scope);
    print_cell(help);
    puts(" |");
}

int main(void)
{
    puts("| parameter | default | meaning (as `ompi_info --param btl hpam --level 9` shows it) |");
    puts("|---|---|---|");
    for (size_t i = 0; i < hpam_knob_count(); ++i) {
        print_row(hpam_knob_info(i), (int)i, mca_btl_hpam_knob_default(i), "");
    }
    for (int j = 0; j < MCA_BTL_HPAM_OWN_PARAMS; ++j) {
        const mca_btl_hpam_own_param_t *o = &mca_btl_hpam_own_params[j];
        const hpam_knob_value_t v = {.i = o->value};
        print_row(&o->info, -1, v, "(BTL only) ");
    }
    return 0;
}
