# tests/btl: README.md's parameter table against the parameters' one
# description (btl/btl_hpam_param_table).
TESTS += tests/btl/readme_params.sh
dist_noinst_SCRIPTS += tests/btl/readme_params.sh
