#!/usr/bin/env bash
# 10,000 windows created and freed on the hamlyn card: see windows_churn.sh.
churn_nic=hamlyn
. "$(dirname "$0")/windows_churn.sh"
