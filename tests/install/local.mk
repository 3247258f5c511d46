# tests/install: hpam installed like a library. staging.sh installs into a
# staging prefix under the build tree and builds the README's examples with
# pkg-config alone; configure_without_ucx.sh shows the UCX transport is
# optional (configure in scratch directories; see each script).
TESTS += tests/install/staging.sh tests/install/configure_without_ucx.sh
dist_noinst_SCRIPTS += tests/install/staging.sh tests/install/configure_without_ucx.sh \
  tests/install/readme_examples.sh
# What the scripts leave behind when they fail.
mostlyclean-local: clean-install-tests
clean-install-tests:
	-rm -rf tests/install/staging tests/install/configure-without-ucx
.PHONY: clean-install-tests
