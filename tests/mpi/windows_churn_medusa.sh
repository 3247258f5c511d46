#!/usr/bin/env bash
# 10,000 windows created and freed on the medusa card: see windows_churn.sh.
churn_nic=medusa
. "$(dirname "$0")/windows_churn.sh"
