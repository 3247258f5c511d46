/*
 * The UCX_HPAM_* configuration variables: every knob of hpam's one table
 * (hpam_knobs.h) as UCX_HPAM_<NAME>, with its help, unit, default and range
 * from the table, plus the transport's own JOB, MAX_PROCS and STATS. They
 * are the memory domain's variables, so one set of values serves the domain
 * and every interface on it; `ucx_info -c -f` lists them.
 *
 * The UCX field table is built from the knob table by the library's
 * constructor (before the component registers). UCX's parser takes any
 * number (a word that is not one is refused with the variable's name); the
 * knob table checks every value, and the rules between knobs, when the
 * domain opens, so a bad value is reported exactly as the BTL reports it,
 * e.g. "invalid UCX_HPAM_DEPTH = 0: valid range is [1, 64]".
 */
#include "uct_hpam.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_knobs.h"

#define MAX_KNOBS UCT_HPAM_MAX_KNOBS
/* The transport's own variables' ranges, each written once for the syntax
 * text and the check: UCX_HPAM_MAX_PROCS in [MIN_PROCS,
 * UCT_HPAM_REGISTRY_MAX_PROCS], UCX_HPAM_JOB 1 to MAX_JOB_CHARS characters. */
#define MIN_PROCS 2
#define MAX_JOB_CHARS 40

/* One knob's value as UCX's parser stores it. */
typedef union knob_slot {
    int64_t whole; /* UNSIGNED, POWER2 */
    int flag;      /* BOOL (UCX's y/n) */
    double real;   /* REAL */
    char *word;    /* CHOICE (UCX's string, freed by UCX) */
} knob_slot_t;

struct uct_hpam_md_config {
    uct_md_config_t super;
    char *job;         /* UCX_HPAM_JOB */
    int64_t max_procs; /* UCX_HPAM_MAX_PROCS */
    int stats;         /* UCX_HPAM_STATS */
    knob_slot_t knob[MAX_KNOBS];
};

size_t uct_hpam_md_config_size(void) { return sizeof(uct_hpam_md_config_t); }

/* Strict numbers: the whole word, nothing after it. Ranges are the table's. */
static int read_whole(const char *buf, void *dest, const void *arg)
{
    char *end;
    errno = 0;
    const long long v = strtoll(buf, &end, 0);
    if (errno != 0 || end == buf || *end != '\0') return 0;
    *(int64_t *)dest = v;
    return 1;
}

static int write_whole(char *buf, size_t max, const void *src, const void *arg)
{
    return snprintf(buf, max, "%" PRId64, *(const int64_t *)src);
}

static ucs_status_t clone_whole(const void *src, void *dest, const void *arg)
{
    *(int64_t *)dest = *(const int64_t *)src;
    return UCS_OK;
}

static int read_real(const char *buf, void *dest, const void *arg)
{
    char *end;
    errno = 0;
    const double v = strtod(buf, &end);
    if (errno != 0 || end == buf || *end != '\0') return 0;
    *(double *)dest = v;
    return 1;
}

/* The syntax line: the variable's name and what it takes (arg: its text). */
static void help_text(char *buf, size_t max, const void *arg)
{
    snprintf(buf, max, "%s", (const char *)arg);
}

/* The fields, their names, docs and syntax texts, filled by the constructor:
 * [0] the base table, then JOB, MAX_PROCS, STATS, the knobs, and the end. */
ucs_config_field_t uct_hpam_md_config_table[4 + MAX_KNOBS + 1];
static char names[MAX_KNOBS][40], docs[MAX_KNOBS][640], syntax[MAX_KNOBS][120],
    defaults[MAX_KNOBS][32];
static char max_procs_syntax[80];

static const ucs_config_parser_t whole_parser = {
    read_whole, write_whole, clone_whole, ucs_config_release_nop, help_text, NULL};
static const ucs_config_parser_t real_parser = {read_real,
                                                ucs_config_sprintf_double,
                                                ucs_config_clone_double,
                                                ucs_config_release_nop,
                                                help_text,
                                                NULL};

/* Knob i as a UCX field: name in capitals, default, doc with its range. */
static void knob_field(size_t i, ucs_config_field_t *f)
{
    const hpam_knob_info_t *k = hpam_knob_info(i);
    const hpam_knob_value_t d = hpam_ucx_knob_default(i);
    const char *sep = *k->unit ? " " : "";
    size_t n = 0;
    for (; k->name[n] && n + 1 < sizeof names[i]; ++n) names[i][n] = (char)toupper(k->name[n]);
    names[i][n] = '\0';
    f->name = names[i];
    f->doc = docs[i];
    f->offset = ucs_offsetof(uct_hpam_md_config_t, knob) + i * sizeof(knob_slot_t);
    switch (k->type) {
    case HPAM_KNOB_BOOL:
        snprintf(defaults[i], sizeof defaults[i], "%s", d.i ? "y" : "n");
        snprintf(docs[i], sizeof docs[i], "%s.", k->help);
        snprintf(syntax[i], sizeof syntax[i], "UCX_HPAM_%.39s, y or n", names[i]);
        f->parser = (ucs_config_parser_t)UCS_CONFIG_TYPE_BOOL;
        f->parser.help = help_text;
        break;
    case HPAM_KNOB_REAL:
        snprintf(defaults[i], sizeof defaults[i], "%g", d.r);
        snprintf(docs[i], sizeof docs[i], "%s.", k->help);
        snprintf(syntax[i], sizeof syntax[i], "UCX_HPAM_%.39s, a number in [%g, %g]", names[i],
                 k->real_min, k->real_max);
        f->parser = real_parser;
        break;
    case HPAM_KNOB_CHOICE:
        snprintf(defaults[i], sizeof defaults[i], "%s", d.s);
        snprintf(docs[i], sizeof docs[i], "%s.", k->help);
        snprintf(syntax[i], sizeof syntax[i], "UCX_HPAM_%.39s, one of %s", names[i], k->choices);
        f->parser = (ucs_config_parser_t)UCS_CONFIG_TYPE_STRING;
        f->parser.help = help_text;
        break;
    default:
        snprintf(defaults[i], sizeof defaults[i], "%" PRId64, d.i);
        snprintf(docs[i], sizeof docs[i], "%s%s%s.", k->help, *k->unit ? ", " : "", k->unit);
        snprintf(syntax[i], sizeof syntax[i],
                 "UCX_HPAM_%.39s, %s in [%" PRId64 ", %" PRId64 "]%s%s", names[i],
                 k->type == HPAM_KNOB_POWER2 ? "a power of two" : "a whole number", k->min, k->max,
                 sep, k->unit);
        f->parser = whole_parser;
    }
    f->dfl_value = defaults[i];
    f->parser.arg = syntax[i];
}

int uct_hpam_md_config_build(void)
{
    const size_t n = hpam_knob_count();
    if (n > MAX_KNOBS) return -1;
    ucs_config_field_t *f = uct_hpam_md_config_table;
    *f++ = (ucs_config_field_t){"", "", NULL, ucs_offsetof(uct_hpam_md_config_t, super),
                                UCS_CONFIG_TYPE_TABLE(uct_md_config_table)};
    *f++ = (ucs_config_field_t){
        "JOB", "auto",
        "Processes that talk over hpam form a job: one registry of process indices, one\n"
        "protection key, one card shape. auto: the launcher's job (PMIX_NAMESPACE) when\n"
        "there is one, else every process of this user on the node.",
        ucs_offsetof(uct_hpam_md_config_t, job), UCS_CONFIG_TYPE_STRING};
    snprintf(max_procs_syntax, sizeof max_procs_syntax,
             "UCX_HPAM_MAX_PROCS, a whole number in [%d, %d]", MIN_PROCS,
             UCT_HPAM_REGISTRY_MAX_PROCS);
    *f = (ucs_config_field_t){
        "MAX_PROCS", "32",
        "Process indices a job can hand out (each memory domain and interface takes one);\n"
        "cards are sized for this many peers.",
        ucs_offsetof(uct_hpam_md_config_t, max_procs), whole_parser};
    f->parser.arg = max_procs_syntax;
    ++f;
    *f = (ucs_config_field_t){"STATS", "n",
                              "Print the protocol counters of each interface when it closes "
                              "(shown with UCX_LOG_LEVEL=info).",
                              ucs_offsetof(uct_hpam_md_config_t, stats), UCS_CONFIG_TYPE_BOOL};
    f->parser.help = help_text;
    f->parser.arg = "UCX_HPAM_STATS, y or n";
    ++f;
    for (size_t i = 0; i < n; ++i) knob_field(i, f++);
    *f = (ucs_config_field_t){NULL};
    return 0;
}

/* The launcher's job id, or the node (every process of this user). */
static void job_tag(const char *setting, char *out, size_t len)
{
    const char *src = setting;
    if (0 == strcmp(setting, "auto")) {
        const char *ns = getenv("PMIX_NAMESPACE");
        src = (ns && *ns) ? ns : "node";
    }
    size_t n = 0;
    for (const char *s = src; *s && n + 1 < len; ++s) {
        const char c = *s;
        const int ok = isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; ++s) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static hpam_knob_value_t slot_value(const uct_hpam_md_config_t *c, size_t i, uct_hpam_params_t *p)
{
    hpam_knob_value_t v;
    switch (hpam_knob_info(i)->type) {
    case HPAM_KNOB_BOOL: v.i = c->knob[i].flag; break;
    case HPAM_KNOB_REAL: v.r = c->knob[i].real; break;
    case HPAM_KNOB_CHOICE: /* kept in the params: the value must outlive UCX's copy */
        snprintf(p->words[i], sizeof p->words[i], "%s", c->knob[i].word);
        v.s = p->words[i];
        break;
    default: v.i = c->knob[i].whole;
    }
    return v;
}

/* The transport's own variables. */
static ucs_status_t check_own(const uct_hpam_md_config_t *c)
{
    if (c->max_procs < MIN_PROCS || c->max_procs > UCT_HPAM_REGISTRY_MAX_PROCS) {
        ucs_error("hpam: invalid UCX_HPAM_MAX_PROCS = %" PRId64 ": valid range is [%d, %d]",
                  c->max_procs, MIN_PROCS, UCT_HPAM_REGISTRY_MAX_PROCS);
        return UCS_ERR_INVALID_PARAM;
    }
    if (strlen(c->job) == 0 || strlen(c->job) > MAX_JOB_CHARS) {
        ucs_error("hpam: invalid UCX_HPAM_JOB = '%s': 1 to %d characters, or auto", c->job,
                  MAX_JOB_CHARS);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_hpam_params_from_config(const uct_md_config_t *config, uct_hpam_params_t *p)
{
    const uct_hpam_md_config_t *c = ucs_derived_of(config, uct_hpam_md_config_t);
    memset(p, 0, sizeof(*p));
    ucs_status_t status = check_own(c);
    hpam_config_init(&p->am);
    hpam_dep_config_init(&p->dep);
    /* In table order, each value checked against those before it. */
    for (size_t i = 0; i < hpam_knob_count(); ++i) {
        const hpam_knob_value_t v = slot_value(c, i, p);
        char msg[256];
        if (HPAM_OK !=
            hpam_knob_check(i, v, &p->am, &p->dep, HPAM_KNOB_STYLE_UCX, msg, sizeof msg)) {
            ucs_error("hpam: %s", msg);
            status = UCS_ERR_INVALID_PARAM;
            continue;
        }
        hpam_knob_set(&p->am, &p->dep, i, v);
    }
    if (status != UCS_OK) return status;
    char tag[MAX_JOB_CHARS + 8];
    job_tag(c->job, tag, sizeof tag);
    snprintf(p->job, sizeof p->job, "ucx-%s", tag);
    p->job_hash = fnv1a(p->job);
    p->am.nprocs = p->dep.nprocs = (int)c->max_procs;
    p->am.poll_on_send = 0; /* the transport polls from its progress only */
    p->shape.nic = 0 == strcmp(p->am.nic, "hamlyn");
    p->shape.depth = p->am.depth;
    p->shape.block_size = p->am.block_size;
    p->shape.packet_size = p->dep.packet_size;
    p->shape.crc_check = p->am.crc_check != 0;
    p->shape.max_procs = (uint32_t)c->max_procs;
    p->stats = c->stats;
    return UCS_OK;
}
