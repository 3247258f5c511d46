# tests/fuzz: libFuzzer harnesses (clang, ASan, UBSan) for every receive
# path, built from the core's own sources with clang. `make fuzz
# FUZZ_SECONDS=N` runs each harness for N seconds (default 60), keeping what
# it finds in $(builddir)/tests/fuzz/corpus/<harness>; `make check` runs each
# for a few seconds from the committed seed corpus tests/fuzz/corpus/<harness>
# (tests/fuzz/run.sh). Without a libFuzzer clang both say so and skip.
FUZZ_HARNESSES = am_medusa am_medusa_clean hamlyn_arrival deposit_operation hybrid_op notification_queue notification_queue_clean hamlyn_manager
FUZZ_SECONDS = 60
EXTRA_DIST += tests/fuzz/fuzz_input.hpp $(FUZZ_HARNESSES:%=tests/fuzz/fuzz_%.cc) tests/fuzz/corpus
TESTS += tests/fuzz/run.sh
dist_noinst_SCRIPTS += tests/fuzz/run.sh tests/fuzz/fuzz.sh

if HPAM_FUZZ
FUZZ_FLAGS = -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
  -fno-sanitize-recover=undefined
FUZZ_CPPFLAGS = -I$(top_srcdir)/src -I$(top_srcdir)/src/include -I$(top_builddir) $(HWLOC_CFLAGS)
fuzz_core_objects = $(patsubst %.cpp,tests/fuzz/obj/%.o,$(filter %.cpp,$(src_libhpam_core_la_SOURCES)))
fuzz_core_headers = $(filter %.hpp %.h,$(src_libhpam_core_la_SOURCES)) $(include_HEADERS)
fuzz_programs = $(FUZZ_HARNESSES:%=tests/fuzz/fuzz_%)
# Kept between builds (make would delete them as intermediates of the
# pattern rules and compile all of them again for every harness change).
.SECONDARY: $(fuzz_core_objects)

tests/fuzz/obj/%.o: $(top_srcdir)/%.cpp $(fuzz_core_headers)
	@$(MKDIR_P) $(@D)
	$(AM_V_CXX)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) -c -o $@ $<

tests/fuzz/fuzz_%: $(top_srcdir)/tests/fuzz/fuzz_%.cc $(top_srcdir)/tests/fuzz/fuzz_input.hpp \
    $(fuzz_core_objects)
	$(AM_V_CXXLD)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_CPPFLAGS) -o $@ $< \
	  $(fuzz_core_objects) $(HWLOC_LIBS) -lrt -lpthread
# The clean-wire build of am_medusa includes its source.
tests/fuzz/fuzz_am_medusa_clean: $(top_srcdir)/tests/fuzz/fuzz_am_medusa_clean.cc \
    $(top_srcdir)/tests/fuzz/fuzz_am_medusa.cc $(top_srcdir)/tests/fuzz/fuzz_input.hpp \
    $(fuzz_core_objects)
	$(AM_V_CXXLD)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_CPPFLAGS) -o $@ $< \
	  $(fuzz_core_objects) $(HWLOC_LIBS) -lrt -lpthread
# So does the clean-wire build of notification_queue.
tests/fuzz/fuzz_notification_queue_clean: $(top_srcdir)/tests/fuzz/fuzz_notification_queue_clean.cc \
    $(top_srcdir)/tests/fuzz/fuzz_notification_queue.cc $(top_srcdir)/tests/fuzz/fuzz_input.hpp \
    $(fuzz_core_objects)
	$(AM_V_CXXLD)$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_CPPFLAGS) -o $@ $< \
	  $(fuzz_core_objects) $(HWLOC_LIBS) -lrt -lpthread

fuzz-programs: $(fuzz_programs)
tests/fuzz/run.log: $(fuzz_programs)
fuzz: fuzz-programs
	HPAM_BUILDDIR='$(abs_top_builddir)' HPAM_SRCDIR='$(abs_top_srcdir)' \
	  bash $(top_srcdir)/tests/fuzz/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_HARNESSES)
CLEANFILES += $(fuzz_programs)
clean-local: clean-fuzz
clean-fuzz:
	-rm -rf tests/fuzz/obj
else
fuzz:
	@echo "make fuzz: configure found no clang with libFuzzer (Debian: clang-14 libclang-rt-14-dev); nothing to run"
endif
.PHONY: fuzz fuzz-programs clean-fuzz
