"""The runtime every stage uses: threads, random streams, memory estimates, guards, progress,
the device, parameter constraints and input validation."""
