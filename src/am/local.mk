# am: the HPAM all-to-all D-way request-reply protocol and the C API.
include_HEADERS += src/include/hpam_am.h
src_libhpam_core_la_SOURCES += \
  src/am/packet.hpp src/am/descriptor.hpp src/am/counters.hpp src/am/token.hpp \
  src/am/config.hpp src/am/config.cpp \
  src/am/endpoint.hpp src/am/endpoint_send.hpp src/am/endpoint_receive.hpp \
  src/am/c_api.hpp src/am/c_ops.hpp src/am/c_api.cpp \
  src/am/endpoint_medusa.cpp src/am/endpoint_hamlyn.cpp
