# src/deposit: sender-based deposit by Hamlyn tickets (put, get, atomics with
# per-operation handles) and the hybrid deposit model's operations.
src_libhpam_core_la_SOURCES += \
  src/deposit/deposit.hpp src/deposit/op_record.hpp \
  src/deposit/deposit.cpp src/deposit/deposit_remote.cpp src/deposit/deposit_gets.cpp \
  src/deposit/hybrid_op.hpp src/deposit/hybrid_op.cpp
EXTRA_DIST += src/deposit/README.md
