# src/capi: the floor between the core and its users — the C API of
# hpam_am.h and hpam_deposit.h, the one status mapping, the one knob table
# (hpam_knobs.h), and the instantiation of the protocol for each card.
include_HEADERS += src/include/hpam_am.h src/include/hpam_deposit.h src/include/hpam_knobs.h
src_libhpam_core_la_SOURCES += \
  src/capi/c_api.hpp src/capi/c_api.cpp src/capi/c_ops.hpp \
  src/capi/knobs.hpp src/capi/knobs.cpp \
  src/capi/endpoint_medusa.cpp src/capi/endpoint_hamlyn.cpp \
  src/capi/deposit_c_api.cpp
