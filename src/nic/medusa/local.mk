# src/nic/medusa: the emulated Medusa FDDI card (HPAM 5.1) and the wire it
# sends over (src/nic/wire, shared with the Hamlyn card).
src_libhpam_core_la_SOURCES += \
  src/nic/wire/wire.hpp src/nic/wire/wire.cpp \
  src/nic/medusa/card_memory.hpp \
  src/nic/medusa/medusa_card.hpp src/nic/medusa/medusa_card.cpp
EXTRA_DIST += src/nic/medusa/README.md
