/*
 * limitfile.c - the shim's limit-file parser (src/shim/limits.c), compiled
 * into the agent: the file the shim obeys in the container is the file the
 * agent enforces from outside it, read by one parser. The shim links no
 * module and no module may include the shim's folder, so its source (pure:
 * libc only, no I/O, no allocation) is compiled in here, as
 * fuzz/fuzz_limits.c and tests/shim/test_limits.c do.
 */
#include "../shim/limits.c"
