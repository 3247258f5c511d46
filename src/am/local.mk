# am: the HPAM all-to-all D-way request-reply protocol, a template over the
# card (instantiated per card in src/capi).
src_libhpam_core_la_SOURCES += \
  src/am/packet.hpp src/am/descriptor.hpp src/am/ack_rows.hpp src/am/deferred_acks.hpp \
  src/am/counters.hpp src/am/token.hpp \
  src/am/config.hpp src/am/config.cpp \
  src/am/endpoint.hpp src/am/endpoint_impl.hpp src/am/endpoint_setup.hpp \
  src/am/endpoint_send.hpp src/am/endpoint_receive.hpp src/am/endpoint_acks.hpp \
  src/am/endpoint_timeouts.hpp src/am/endpoint_loss_recovery.hpp src/am/endpoint_self.hpp \
  src/am/rtt_estimator.hpp
EXTRA_DIST += src/am/README.md
