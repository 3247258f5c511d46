// libFuzzer harness: fuzz_am_medusa.cc on a clean wire, the configuration
// of every run without faults: no CRC, and process 1's card leaves the wire
// header of a packet carried in its RX_READY cell out of the cell
// (card_setup::headless_cells), so process 0 takes headless entries as a
// card makes them besides every forged form.
#define HPAM_FUZZ_CLEAN_WIRE 1
#include "fuzz_am_medusa.cc"
