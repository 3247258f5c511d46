# src/nic/hamlyn: the Hamlyn sender-managed interface (slots, termini,
# metadata areas, packet counting, notification queues) and the card the
# HPAM protocol runs over.
src_libhpam_core_la_SOURCES += \
  src/nic/hamlyn/layout.hpp src/nic/hamlyn/ticket.hpp \
  src/nic/hamlyn/notification_queue.hpp \
  src/nic/hamlyn/cross_memory.hpp src/nic/hamlyn/cross_memory.cpp \
  src/nic/hamlyn/card_view.hpp src/nic/hamlyn/card_view.cpp \
  src/nic/hamlyn/hamlyn_card.hpp src/nic/hamlyn/hamlyn_card.cpp \
  src/nic/hamlyn/slot_table.hpp src/nic/hamlyn/slot_table.cpp \
  src/nic/hamlyn/send_terminus.hpp src/nic/hamlyn/send_terminus.cpp \
  src/nic/hamlyn/receiving_interface.hpp src/nic/hamlyn/receiving_interface.cpp
src_libhpam_core_la_SOURCES += \
  src/nic/hamlyn/hamlyn_am_card.hpp src/nic/hamlyn/hamlyn_am_card.cpp \
  src/nic/hamlyn/am_inbound.hpp
EXTRA_DIST += src/nic/hamlyn/README.md
