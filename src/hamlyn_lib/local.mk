# src/hamlyn_lib: the Hamlyn library's upper layer (OSDI'96 3.3) — the
# hamlyn_manager, receiver end points and seeds, and the simple datagram,
# stream and tagged remote write protocols, over the emulated Hamlyn card
# (nic/hamlyn) alone: beside am and deposit, below capi.
src_libhpam_core_la_SOURCES += \
  src/hamlyn_lib/hamlyn_manager.hpp src/hamlyn_lib/hamlyn_manager.cpp \
  src/hamlyn_lib/datagram.hpp src/hamlyn_lib/datagram.cpp \
  src/hamlyn_lib/tagged_write.hpp src/hamlyn_lib/tagged_write.cpp \
  src/hamlyn_lib/stream.hpp src/hamlyn_lib/stream_receiver.cpp src/hamlyn_lib/stream_sender.cpp
