// Asymmetric fences between processes (membarrier(2)): one side of a
// Dekker-style handshake runs often and pays only a compiler barrier, the
// other runs rarely and makes every thread of every process that joined run
// a full memory barrier (an inter-processor interrupt to the CPUs running
// them; a thread not running has passed a context switch, which is one).
// The Hamlyn card's direct deposits use it (receiving_interface::resolve
// announces its hold with a plain store; slot_table::revoke, the rare side,
// calls barrier_all before it reads the announcements): so the deposit
// itself, as on the card, costs the host no locked instruction, whose drain
// of the store buffer waits for the line the owner reads.
#pragma once

namespace hpam::sys {

// Joins this process to the global expedited barriers (once; later calls
// return the first answer). false where the kernel or a seccomp filter
// refuses membarrier: the caller keeps its locked protocol.
bool join_global_barriers();

// Whether barrier_all can run on this kernel (global expedited barriers).
bool global_barriers_available();

// Every thread of every process that joined has run a full memory barrier
// (or a context switch) when this returns. false when the kernel refused.
bool barrier_all();

}  // namespace hpam::sys
