/*
 * hpam_knobs.h — the one table of hpam's knobs. Every tunable of the cards,
 * the protocol and the deposit layer is described once here: its name, type,
 * unit, default, valid range and one line of help. hpam_config_init and
 * hpam_dep_config_init take their defaults from it, hpam_ep_create validates
 * with it, and front ends (the Open MPI BTL's MCA parameters btl_hpam_<name>,
 * the UCX transport's UCX_HPAM_<NAME> variables) register and check their
 * parameters by walking it, so a knob added to the table appears everywhere
 * with one default and one range.
 *
 * A knob's value is given in the knob's own unit (e.g. timeout_us in
 * microseconds) and stored in the configuration field it belongs to (e.g.
 * hpam_config_t.timeout_ns), scaled.
 */
#ifndef HPAM_KNOBS_H
#define HPAM_KNOBS_H

#include <stddef.h>
#include <stdint.h>

#include "hpam_am.h"
#include "hpam_deposit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hpam_knob_type {
  HPAM_KNOB_UNSIGNED, /* a whole number in [min, max]                      */
  HPAM_KNOB_POWER2,   /* a power of two in [min, max]                      */
  HPAM_KNOB_BOOL,     /* 0 or 1                                            */
  HPAM_KNOB_REAL,     /* a real number in [real_min, real_max]             */
  HPAM_KNOB_CHOICE    /* one of the comma-separated words in `choices`     */
} hpam_knob_type_t;

typedef struct hpam_knob_info {
  const char *name;    /* front-end name: btl_hpam_<name>, UCX_HPAM_<NAME>   */
  const char *field;   /* the configuration field it sets, for C callers    */
  const char *help;    /* one line                                          */
  const char *unit;    /* "us", "ms", "bytes", ... or "" for none           */
  hpam_knob_type_t type;
  int level;           /* 1 (basic) .. 9 (developer), as ompi_info's levels */
  int64_t min, max;    /* UNSIGNED, POWER2, BOOL, in the knob's unit        */
  double real_min, real_max; /* REAL                                        */
  const char *choices; /* CHOICE: e.g. "medusa,hamlyn"                      */
} hpam_knob_info_t;

/* A knob's value in its own unit: `i` for UNSIGNED, POWER2 and BOOL (signed,
 * so that a negative input is seen and reported as such), `r` for REAL, `s`
 * for CHOICE (the string must outlive the configuration). */
typedef union hpam_knob_value {
  int64_t i;
  double r;
  const char *s;
} hpam_knob_value_t;

/* How a problem names the knob: as the configuration field of the C API
 * (value in the field's unit), as an Open MPI MCA parameter (btl_hpam_name)
 * or as a UCX configuration variable (UCX_HPAM_NAME). */
typedef enum hpam_knob_style {
  HPAM_KNOB_STYLE_FIELD,
  HPAM_KNOB_STYLE_MCA,
  HPAM_KNOB_STYLE_UCX
} hpam_knob_style_t;

size_t hpam_knob_count(void);
/* NULL when i >= hpam_knob_count(). */
const hpam_knob_info_t *hpam_knob_info(size_t i);
/* The index of the knob called `name` (front-end name), or -1. */
int hpam_knob_find(const char *name);

/* Reads / writes knob i of a configuration pair, in the knob's unit (either
 * pointer may be NULL when the knob does not belong to it). Set only values
 * that hpam_knob_check accepted. */
hpam_knob_value_t hpam_knob_get(const hpam_config_t *am, const hpam_dep_config_t *dep, size_t i);
void hpam_knob_set(hpam_config_t *am, hpam_dep_config_t *dep, size_t i, hpam_knob_value_t v);
/* Knob i's default (the core's own), in the knob's unit. */
hpam_knob_value_t hpam_knob_default(size_t i);

/* Checks value v for knob i: its range, and the rules it shares with other
 * knobs, whose values are read from the configuration pair (which may be
 * NULL). Returns HPAM_OK, or HPAM_ERR_INVALID with one line in msg naming
 * the knob in the given style, the value and what is valid. */
int hpam_knob_check(size_t i, hpam_knob_value_t v, const hpam_config_t *am,
                    const hpam_dep_config_t *dep, hpam_knob_style_t style, char *msg,
                    size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HPAM_KNOBS_H */
