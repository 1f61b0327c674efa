# hardening.cmake - the hardened build of what ships (the tessera binary and
# libtessera-cuda.so), checked by tests/cli/hardening.sh.
#
# Every object is compiled with
#   -fstack-protector-strong   a canary in each function with a local array or
#                              an address taken (__stack_chk_fail on a smash)
#   -fstack-clash-protection   stack growth probed page by page
#   -fcf-protection            Intel CET's indirect-branch and return markers
# (each only where the compiler takes it: a cross compiler for arm64 has no
# -fcf-protection), and with position-independent code: executables are PIE
# (-fPIE -pie), so ASLR moves the binary too.
# -D_FORTIFY_SOURCE=2 (libc's checked __*_chk variants) needs optimisation and
# fights the sanitizers' own interceptors, so it comes only with an optimised
# build type (Release, RelWithDebInfo, MinSizeRel) and neither TESSERA_SANITIZE
# nor TESSERA_FUZZ.
# tessera_hardened_link(TARGET) links a shipped file with full RELRO
# (-z relro -z now: every symbol bound at load, the GOT read-only after it).

include(CheckCCompilerFlag)
include(CheckPIESupported)

set(CMAKE_POSITION_INDEPENDENT_CODE ON)
check_pie_supported(OUTPUT_VARIABLE pie_why LANGUAGES C)
if(NOT CMAKE_C_LINK_PIE_SUPPORTED)
  message(FATAL_ERROR "hardening: the compiler cannot link a PIE executable: ${pie_why}")
endif()

foreach(flag -fstack-protector-strong -fstack-clash-protection -fcf-protection)
  string(MAKE_C_IDENTIFIER "TESSERA_HAS${flag}" var)
  check_c_compiler_flag(${flag} ${var})
  if(${var})
    add_compile_options(${flag})
  elseif(flag STREQUAL "-fstack-protector-strong")
    message(FATAL_ERROR "hardening: ${CMAKE_C_COMPILER} has no -fstack-protector-strong")
  endif()
endforeach()

if(NOT TESSERA_SANITIZE AND NOT TESSERA_FUZZ)
  set(optimised "$<OR:$<CONFIG:Release>,$<CONFIG:RelWithDebInfo>,$<CONFIG:MinSizeRel>>")
  add_compile_options("$<${optimised}:-D_FORTIFY_SOURCE=2>")
endif()

function(tessera_hardened_link target)
  target_link_options(${target} PRIVATE LINKER:-z,relro LINKER:-z,now)
endfunction()
