// libFuzzer harness: fuzz_notification_queue.cc on a clean wire, the
// configuration of every run without faults: no CRC, so process 0 takes
// headless packets and packets delivered by reference (an am_reference to
// process 1's outbound blocks) as a card sends them, besides every forged
// form.
#define HPAM_FUZZ_CLEAN_WIRE 1
#include "fuzz_notification_queue.cc"
