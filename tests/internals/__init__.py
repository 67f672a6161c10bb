# SPDX-License-Identifier: Apache-2.0
# A package so its test modules (test_multi_worker, test_placement, ...) do not
# clash with the same-named modules in tests/.
