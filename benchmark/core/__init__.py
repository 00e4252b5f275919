"""Floor 0 of the suite (docs/architecture.md): what every other floor may use and that
itself imports nothing of the suite but this folder: the error policy (errors), atomic
writes (atomic), gin's search path and parser (config), arm labels (arm_label), the quiet
TensorFlow start (quiet_start), the machine record and thread pins (machine), directory
locks (lock) and the runner processes (processes)."""
