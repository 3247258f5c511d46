/*
 * What the BTL's parameters are, with no Open MPI header, so that the plugin
 * (btl_hpam_params.c registers and checks them) and the README's parameter
 * table (btl_hpam_param_table.c; `make update-readme-params`) read one
 * description: every knob of hpam's table (hpam_knobs.h) as btl_hpam_<name>,
 * the BTL's own default for two of them, and the BTL's own four parameters.
 */
#ifndef MCA_BTL_HPAM_PARAM_INFO_H
#define MCA_BTL_HPAM_PARAM_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "hpam_knobs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The BTL's card block (btl_hpam_block_size) unless the user sets one:
 * Open MPI's sizes start from its payload, the block less
 * HPAM_PACKET_HEADER_BYTES (btl_hpam_params.c). */
#define MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE 32768

/* The BTL's receive budget (btl_hpam_receive_budget) unless the user sets
 * one: a stream's whole window (the most instances, 64) in one poll. A
 * lone message is still taken alone (endpoint_receive.hpp). */
#define MCA_BTL_HPAM_DEFAULT_RECEIVE_BUDGET 64

/* The BTL's own parameters, by name. */
enum {
    MCA_BTL_HPAM_VERBOSE,
    MCA_BTL_HPAM_CARD_BUDGET_MB,
    MCA_BTL_HPAM_MAX_FRAGS,
    MCA_BTL_HPAM_STATS,
    MCA_BTL_HPAM_OWN_PARAMS
};

/* One of them, described as a knob of the table is (name, help, unit, type,
 * level, range), with its default. */
typedef struct mca_btl_hpam_own_param_t {
    hpam_knob_info_t info;
    long value;
} mca_btl_hpam_own_param_t;
extern const mca_btl_hpam_own_param_t mca_btl_hpam_own_params[MCA_BTL_HPAM_OWN_PARAMS];

/* Knob i's default in the BTL: the table's, but for depth and block_size. */
hpam_knob_value_t mca_btl_hpam_knob_default(size_t i);

/* The help of a parameter as ompi_info shows it: its line, its valid values
 * and unit, and, for a knob whose default the BTL sets apart, that default
 * (knob: the knob's table index; -1 for an own parameter). */
void mca_btl_hpam_param_help(const hpam_knob_info_t *k, int knob, char *out, size_t len);

/* The depth the BTL takes unless the user sets one: from `start`, halved
 * (not below `floor`, the table's default: mca_btl_hpam_depth_floor) until
 * the card's 2*(P-1)*(2D+1) blocks of block_size bytes fit budget_mb MiB
 * (P = nlocal ranks on the node). */
uint32_t mca_btl_hpam_depth_floor(void);
uint32_t mca_btl_hpam_fit_depth(uint32_t start, uint32_t floor, int nlocal, uint32_t block_size,
                                long budget_mb);

#ifdef __cplusplus
}
#endif
#endif /* MCA_BTL_HPAM_PARAM_INFO_H */
