# SPDX-License-Identifier: Apache-2.0
"""The `parallel-keras` command line: one module per subcommand.

Each subcommand module defines `add_parser(subparsers)` and keeps heavy
imports (TensorFlow) inside its run function, so `parallel-keras migrate`
starts without TensorFlow.
"""
