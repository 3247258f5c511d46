# nic: the emulated cards and the wire between them.
src_libhpam_core_la_SOURCES += \
  src/nic/card.hpp
