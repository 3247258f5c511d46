# tests/install: hpam installed like a library. staging.sh installs into a
# staging prefix under the build tree and builds the README's examples with
# pkg-config alone (see the script).
TESTS += tests/install/staging.sh
dist_noinst_SCRIPTS += tests/install/staging.sh
